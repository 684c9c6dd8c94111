"""``tftrace capture grpc://h:p[,grpc://h2:p2...] --duration S -o DIR``: record running
programs that called ``tftrace.serve(p)``, every host at once, one run directory each.

An endpoint bound beyond loopback asks for the token its program printed:
``grpc://h:p?token=T`` for one host, else ``--token T`` or ``TFTRACE_TOKEN`` for all."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

NAME = "capture"
HELP = "record running programs served by tftrace.serve(port), every host at once"
USAGE = "tftrace capture grpc://HOST:PORT[,grpc://HOST:PORT...] --duration S -o DIR"
ORDER = 2


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "addresses",
        metavar="grpc://HOST:PORT[,...]",
        help="the hosts, comma-separated: the port each gave tftrace.serve (its data endpoint "
        "is on PORT+1 unless the address ends in ?data_port=N; ?token=T: that host's token)",
    )
    p.add_argument(
        "--duration",
        type=float,
        default=5.0,
        metavar="SECONDS",
        help="how long to trace (default 5)",
    )
    p.add_argument(
        "-o",
        "--output",
        type=Path,
        required=True,
        help="directory to create: one run directory per host, and capture.json",
    )
    p.add_argument(
        "--token",
        metavar="TOKEN",
        help="the token of the hosts whose endpoint asks for one (served with host= beyond "
        "127.0.0.1), unless their address gives its own; default: $TFTRACE_TOKEN, which other "
        "users cannot read from the process list",
    )


def run(ns: argparse.Namespace) -> int:
    from tftrace.analysis.render.formatting import printable
    from tftrace.errors import error_context
    from tftrace.tracer.capture import TOKEN_ENV, capture, parse_addresses

    token = ns.token or os.environ.get(TOKEN_ENV) or None
    with error_context("capture"):
        result = capture(parse_addresses(ns.addresses, token), ns.duration, ns.output)
    answered = [h for h in result.hosts if h.answered]
    for host in result.hosts:
        if not host.answered:
            said = f"tftrace: capture: {host.address} did not answer: {host.problem}"
            print(printable(said), file=sys.stderr)  # a host's answer: its text, shown
    print(
        f"captured {len(answered)} of {len(result.hosts)} hosts for {ns.duration:g} s "
        f"into {result.path}"
    )
    width = max(len(h.path or "") for h in answered)
    for host in answered:
        note = "" if host.data == "received" else f"  (trace only: {host.data})"
        print(printable(f"  {host.path:{width}}  {host.address}{note}"))
    one = result.path / (answered[0].path or "")
    if len(answered) == 1:
        print(f"analyse it with: tftrace analyze {one}")
    else:
        print(f"analyse the job with: tftrace analyze {result.path} (one host: {one})")
    return 0
