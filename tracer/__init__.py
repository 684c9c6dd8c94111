"""Recording: run a workload under the TF profiler, py-spy and an OS thread sampler."""
