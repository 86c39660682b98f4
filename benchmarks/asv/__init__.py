"""asv benchmarks for fastsched (benchmark_dir in asv.conf.json).

Scenarios and figures: benchmarks/RESULTS.md."""
