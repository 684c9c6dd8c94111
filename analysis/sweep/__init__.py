"""Sweeps: a workload timed under several thread settings, and which setting to use.

``session.sweep`` (``tftrace.sweep``) runs one: its arguments checked by ``plan``, fresh
processes through ``tftrace.tracer.sweep``, then ``timing`` (each run's steady state, or a
server's requests), ``runs`` (each run, or a setting's copies, as a row), ``stats`` (medians,
spreads, the noise-aware verdict), ``result`` (builds the ``SweepResult``), ``outcome`` (the
``SweepResult``, its verdict in words) and ``report`` (table, plot, sweep.json). ``verify``
checks a run's findings the same way.
"""
