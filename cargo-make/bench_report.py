#!/usr/bin/env python3
"""Turns the output of `cargo bench --bench e2e_latency` into docs/benchmarks/README.md.

Reads target/e2e_latency/summary.json (per-sample p50/p95 and per-hop times recorded by the
bench) and Criterion's estimates (target/criterion/e2e/<scenario>/new/estimates.json), and adds
the machine, the date and the commit; throughput_report.py takes its helpers, and report.py
(`cargo make bench-report`) runs both. A summary of a run filtered with TASKER_BENCH_FILTER
writes nothing: part of a run never replaces a published report.
"""
import json
import os
import pathlib
import platform
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
TARGET = pathlib.Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
SUMMARY = TARGET / "e2e_latency" / "summary.json"
THROUGHPUT = TARGET / "throughput" / "summary.json"
CRITERION = TARGET / "criterion" / "e2e"
OUT = ROOT / "docs" / "benchmarks" / "README.md"

TIERS = [
    ("Floor (same run)", ["floor_4_steps"]),
    ("Tier 1", ["linear_rust", "diamond_rust"]),
    ("Tier 2", ["conditional_rust", "complex_dag_rust", "hierarchical_tree_rust"]),
    ("Tier 3 (2 orchestrators, 2 workers)", ["single_task_linear", "concurrent_tasks_2x"]),
    ("Tier 4 (worker processes)", ["linear_rust_process", "diamond_rust_process",
                                   "linear_ruby", "diamond_ruby", "linear_python", "diamond_python",
                                   "linear_typescript", "diamond_typescript"]),
    ("Tier 4 interleaved (one linear task per worker process in turn)",
     ["interleaved_linear_rust_process", "interleaved_linear_ruby", "interleaved_linear_python",
      "interleaved_linear_typescript"]),
    ("Tier 5", ["csv_products_1000_rows"]),
]


def run(*cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def machine():
    cpu = "unknown"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = "unknown"
    try:
        kb = int(open("/proc/meminfo").readline().split()[1])
        mem = f"{kb / 1024 / 1024:.0f} GiB"
    except (OSError, ValueError, IndexError):
        pass
    pg = run("psql", "--version")
    return [
        f"CPU: {cpu}, {os.cpu_count()} cores; memory {mem}",
        f"OS: {platform.system()} {platform.release()}",
        f"PostgreSQL: {pg}; RabbitMQ: {rabbit_version()}",
        f"rustc: {run('rustc', '--version')}",
    ]


def rabbit_version():
    for d in pathlib.Path("/usr/lib/rabbitmq/lib").glob("rabbitmq_server-*"):
        return d.name.split("-", 1)[1]
    return "unknown"


def criterion(name):
    path = CRITERION / name / "new" / "estimates.json"
    if not path.exists():
        return None, None
    est = json.loads(path.read_text())
    return est["mean"]["point_estimate"] / 1e6, est["median"]["point_estimate"] / 1e6


def fmt(v, digits=2):
    return "" if v is None else f"{v:.{digits}f}"


def targets(sc):
    """The issue's targets against this run's p50s."""
    def p50(name):
        return sc.get(name, {}).get("p50_ms")

    rows = []

    def check(what, value, limit, unit=""):
        if value is None or limit is None:
            return
        verdict = "met" if value <= limit else "missed"
        rows.append(f"| {what} | {value:.2f}{unit} | {limit:.2f}{unit} | {verdict} |")

    floor = p50("floor_4_steps")
    check("`linear_rust` p50 ≤ 15 ms", p50("linear_rust"), 15.0, " ms")
    if floor:
        check("`linear_rust` p50 ≤ 1.5 × floor", p50("linear_rust") and p50("linear_rust") / floor, 1.5, "×")
    # FFI overhead against the Rust worker of tier 1 (in the bench's own process), and against
    # the same Rust worker in a process of its own, as the FFI workers are (the FFI's own cost).
    for baseline in ("rust", "rust_process"):
        for lang in ("ruby", "python", "typescript"):
            for pattern in ("linear", "diamond"):
                ours, rust = p50(f"{pattern}_{lang}"), p50(f"{pattern}_{baseline}")
                if ours is not None and rust is not None:
                    check(f"`{pattern}_{lang}` p50 − `{pattern}_{baseline}` p50 ≤ +1 ms", ours - rust, 1.0,
                          " ms")
    # The same, from tasks run side by side: each language's linear tasks interleaved with the
    # Rust worker process's, so run-to-run drift cannot land between them.
    for lang in ("ruby", "python", "typescript"):
        ours, rust = p50(f"interleaved_linear_{lang}"), p50("interleaved_linear_rust_process")
        if ours is not None and rust is not None:
            check(f"`interleaved_linear_{lang}` p50 − `interleaved_linear_rust_process` p50 ≤ +1 ms",
                  ours - rust, 1.0, " ms")
    check("`csv_products_1000_rows` p50 ≤ 30 ms", p50("csv_products_1000_rows"), 30.0, " ms")
    single, double = p50("single_task_linear"), p50("concurrent_tasks_2x")
    if single and double:
        check("`concurrent_tasks_2x` ≤ 1.3 × `single_task_linear`", double / single, 1.3, "×")
    if not rows:
        return []
    return ["## Targets in this run", "", "| target | measured | limit | |", "|---|---:|---:|---|",
            *rows, "",
            "On this 2-core VM the same build measures ±25% from run to run: within one hour the",
            "floor alone ranged from 8.7 to 13.5 ms p50. Compare each scenario with the floor and",
            "with the other scenarios of the same run, not with figures from another run.", ""]


def whole_run(path):
    """Whether the summary at `path` is from an unfiltered run. A run with TASKER_BENCH_FILTER
    measured only some scenarios: writing its report would replace the published one with part
    of it, so it is left alone (with a message)."""
    chosen = json.loads(path.read_text()).get("filter")
    if chosen:
        print(f"{path} is from a run filtered by TASKER_BENCH_FILTER={chosen!r}: its report is left "
              "as it is; run the benchmark without the filter to publish new figures",
              file=sys.stderr)
    return not chosen


def main():
    if not SUMMARY.exists():
        sys.exit(f"{SUMMARY} not found: run `cargo make bench` first")
    if whole_run(SUMMARY):
        readme()


def readme():
    summary = json.loads(SUMMARY.read_text())
    scenarios = summary["scenarios"]
    # As recorded by the run; older summaries lack it, and then the checkout's state is shown.
    commit = summary.get("commit") or run("git", "-C", str(ROOT), "rev-parse", "--short", "HEAD")
    dirty = summary.get("dirty")
    if dirty is None:
        dirty = run("git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no")
    lines = [
        "# Benchmarks",
        "",
        "End-to-end latency of Tasker workflows on real PostgreSQL and RabbitMQ: each sample is one",
        "task (two for `concurrent_tasks_2x`) timed from the create request to its completion",
        "notification. The floor is measured in the same run: per step a durable commit, a",
        "confirmed publish, a consume, a confirmed publish back, a consume and a durable commit.",
        "",
        "Reproduce: `bin/dev bench` (or `cargo make bench`), then `cargo make bench-report`.",
        "",
        f"Recorded {summary.get('recorded_at', 'unknown')} at commit `{commit}`"
        + (" (with uncommitted changes)" if dirty and dirty != "unknown" else "") + ".",
        "",
    ]
    lines += [f"- {m}" for m in machine()]
    lines += [
        "",
        "| tier | scenario | samples | mean ms | p50 ms | p95 ms | p95/p50 | × floor | Criterion mean / median ms | queue wait ms | handler ms | result → commit ms |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for tier, names in TIERS:
        for name in names:
            s = scenarios.get(name)
            if s is None:
                continue
            h = s.get("hops", {})
            c_mean, c_median = criterion(name)
            crit = f"{fmt(c_mean)} / {fmt(c_median)}" if c_mean is not None else ""
            lines.append(
                f"| {tier} | `{name}` | {s['samples']} | {fmt(s['mean_ms'])} | {fmt(s['p50_ms'])} | "
                f"{fmt(s['p95_ms'])} | {fmt(s['p95_over_p50'])} | {fmt(s['ratio_to_floor'])} | {crit} | "
                f"{fmt(h.get('queue_wait_ms'))} | {fmt(h.get('handler_ms'))} | {fmt(h.get('result_to_commit_ms'))} |"
            )
    lines += [
        "",
        "Per-hop columns are means over every completed step of the scenario's tasks, from the step",
        "timestamps: *queue wait* = dispatched (orchestrator, inside the transaction) → started",
        "(worker), so it includes the commit, the confirmed publish and the broker hop; *handler* =",
        "started → finished; *result → commit* = finished → the orchestrator's commit of the result",
        "(confirmed result publish, broker hop, batch apply).",
        "",
    ]
    lines += targets(scenarios)
    if summary.get("notes"):
        lines += ["Notes from the run:", ""] + [f"- {n}" for n in summary["notes"]] + [""]
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text("\n".join(lines))
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
