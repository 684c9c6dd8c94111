"""A server's requests in an exported trace: each request one slice on its calling thread.

The requests are ``Analysis.requests``' own (``metrics/requests.py``): those that start in the
analysed window (the one ``--window`` selects, the server's steady state by default; the
``tftrace window`` track marks it and names why), and only for a server (a loop's export has
none). Each is a slice (cat ``request``) on the track of the Python thread that made the call,
named after the function, from the call to its return, so it encloses the call's own slices;
its args hold the request's number, its latency in ms and the five shares of its
``categories`` (``eigen_wait_share``, ...), as ``tftrace analyze`` reports them. In
the Perfetto UI a request is the outermost slice of its thread's track, and its args are the
slice's details; ``select * from slice where category = 'request'`` lists them all.
"""

from __future__ import annotations

import re
from typing import NamedTuple

import numpy as np

from tftrace.analysis.export.figures import Requests, TraceFigures
from tftrace.analysis.export.trace_fields import Num
from tftrace.analysis.export.trace_format import Slices

REQUEST_CAT = "request"


def share_key(category: str) -> str:
    """``eigen wait`` -> ``eigen_wait_share``: an args key Perfetto's SQL takes unquoted."""
    return re.sub(r"[^a-z0-9]+", "_", category.lower()).strip("_") + "_share"


class WindowRequests(NamedTuple):
    """A server's requests in the analysed window, and the window's basis (what it is, why)."""

    requests: Requests
    basis: str


def window_requests(figures: TraceFigures) -> WindowRequests | None:
    """The requests ``tftrace analyze`` reports for the figures' window (the same window the
    marks show); None when the workload is no server."""
    requests = figures.requests
    return None if requests is None else WindowRequests(requests, figures.window_basis)


def request_slices(requests: Requests | None) -> Slices:
    """One slice per request on its calling thread (none without requests)."""
    if requests is None or requests.table.empty:
        empty = np.zeros(0, dtype=np.int64)
        return Slices(REQUEST_CAT, empty, empty, empty, "", {})
    table = requests.table
    args = {
        "request": table["request"].to_numpy(dtype=np.int64),
        "latency_ms": Num(table["latency_ns"].to_numpy(dtype=np.float64) / 1e6),
        **{share_key(c): Num(table[c].to_numpy(dtype=np.float64)) for c in requests.categories},
    }
    return Slices(
        REQUEST_CAT,
        table["thread"].to_numpy(dtype=np.int64),
        table["start_ns"].to_numpy(dtype=np.int64),
        table["end_ns"].to_numpy(dtype=np.int64),
        table["function"].astype("category"),
        args,
    )
