#!/usr/bin/env python3
"""`cargo make bench-report`: docs/benchmarks/README.md from the last `cargo make bench`
(bench_report.py) and docs/benchmarks/throughput.md from the last `cargo make bench-throughput`
(throughput_report.py), each only from a whole run (not one filtered by TASKER_BENCH_FILTER)."""

import sys

import bench_report
import throughput_report


def main():
    latency, throughput = bench_report.SUMMARY, bench_report.THROUGHPUT
    if not latency.exists() and not throughput.exists():
        sys.exit(f"{latency} not found: run `cargo make bench` first")
    if latency.exists() and bench_report.whole_run(latency):
        bench_report.readme()
    if throughput.exists() and bench_report.whole_run(throughput):
        throughput_report.main()


if __name__ == "__main__":
    main()
