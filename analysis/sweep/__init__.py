"""Sweeps: a workload timed under several thread settings, and which setting to use.

``session.sweep`` (``tftrace.sweep``) runs one: fresh processes through
``tftrace.tracer.sweep``, then ``timing`` (each run's steady state), ``stats`` (medians,
spreads, the noise-aware verdict), ``result`` (the ``SweepResult``), ``recommendation`` (the
verdict in words) and ``report`` (table, plot, sweep.json).
"""
