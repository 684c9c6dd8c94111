"""From a path to a ``Run``: the run's tables, with every thread put in its pool.

``run.load(path)`` locates the files (``locate``), turns the decoded trace into host events
(``trace_events``, ``event_kinds``), joins trace lines, OS threads and thread descriptors
(``threads``) and decides each thread's pool (``pools``), pairs thread-pool regions with the
Records that scheduled them (``regions``), and reads the OS sampler's and py-spy's files
(``os_samples``, ``pyspy_samples``) and the machine readings (``machine_samples``, with
``counters`` for their growth over a window). ``schema`` declares every table's columns;
``vocabulary`` spells every TensorFlow name the code matches, once.

Keep this package's ``__init__`` free of imports: code inside the workload's process imports
``vocabulary``.
"""
