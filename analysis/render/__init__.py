"""Showing an ``Analysis`` (or a ``Run``): nothing here computes a figure of its own.

``terminal`` (``tftrace analyze``), ``threads`` and ``run_summary`` print through ``console``;
``html`` and ``html_sections`` build the report page and the notebook view, with figures drawn
by ``plots`` from the tables the Analysis holds; ``tensorboard`` writes summaries;
``formatting`` holds the figure formats they share.
"""
