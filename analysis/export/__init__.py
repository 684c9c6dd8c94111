"""A run for other tools: ``trace`` writes Chrome/Perfetto trace JSON (one process per pool,
busy slices, Record -> region arrows, concurrency counters); ``tables`` writes the run's
tables as CSV or Parquet with their declared columns."""
