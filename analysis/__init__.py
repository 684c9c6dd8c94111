"""Analysis: read run directories and traces, put threads in pools, measure what they did.

Sub-packages follow the data: ``xplane`` (bytes -> columns) -> ``model`` (path -> ``Run``) ->
``metrics`` and ``findings`` (``Run`` -> figures and claims, gathered by ``analyze``) ->
``render`` and ``export`` (an ``Analysis`` shown or converted); ``sweep`` turns many timed runs
into a verdict. This ``__init__`` imports nothing: the workload's process imports parts of it.
"""
