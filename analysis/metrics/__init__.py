"""From a ``Run`` to figures: pure functions returning DataFrames or small frozen objects.

``busy`` defines when a thread is busy and ``intervals`` the step functions built from that;
``concurrency`` (per pool, over time), ``queue_delay`` (scheduled -> started), ``cpu_time``
(the kernel's CPU time beside the traced busy time), ``ops`` (time and parallelism per op
type), ``breakdown`` (the window's wall time in six categories) and ``steps`` build on them.
Definitions: docs/analyses.md. ``tftrace.analyze`` gathers them into one ``Analysis``.
"""
