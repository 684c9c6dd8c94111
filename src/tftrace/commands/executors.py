"""Where a command analyses many hosts: a Dask cluster's executor when asked for one."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import Executor
from contextlib import contextmanager

from tftrace.errors import CliError

LOCAL = "local"


@contextmanager
def dask_executor(address: str | None) -> Iterator[Executor | None]:
    """None without an address (the default process pool); else a Dask client's executor
    (``local``: a LocalCluster of processes on this machine), closed at the end."""
    if not address:
        yield None
        return
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise CliError(
            "--dask needs Dask's distributed package: pip install 'tftrace[dask]'"
        ) from None
    cluster = LocalCluster(processes=True, dashboard_address=None) if address == LOCAL else None
    try:
        client = Client(cluster if cluster is not None else address, timeout="10s")
    except (OSError, TimeoutError) as e:
        raise CliError(f"--dask {address}: cannot reach the scheduler ({e})") from None
    try:
        yield client.get_executor()
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
