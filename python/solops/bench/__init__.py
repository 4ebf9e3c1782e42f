"""Benchmark harness: timing (timing.py), device calibration (calibrate.py), the runner
(run.py) with one module per op family (pool.py, ...), baselines (cudnn.py), the launch-overhead
benchmark (launch.py) and the report (report.py). See docs/benchmarks.md for the results and
shared/design/measure.md for the method."""
