"""asv benchmarks for fastsched (benchmark_dir in asv.conf.json). See BENCHMARKS.md."""
