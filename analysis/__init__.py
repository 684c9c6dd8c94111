"""Analysis: read run directories and traces, put threads in pools, measure what they did."""
