"""Code that runs inside the workload's process (kept free of heavy imports)."""
