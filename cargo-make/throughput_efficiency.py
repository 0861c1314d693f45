"""The engine-efficiency parts of docs/benchmarks/throughput.md (throughput_report.py): where
the CPU goes per 1,000 steps at saturation, the reads-off-the-primary windows, and the targets
of the efficiency work, each against the same run's floor."""


def _num(v, digits=2):
    return f"{v:,.{digits}f}" if isinstance(v, (int, float)) else "—"


# Process command names (as /proc shows them, 15 characters) by column.
FAMILIES = [
    ("PostgreSQL", ("postgres",)),
    ("RabbitMQ", ("beam.smp", "erl_child_setup", "epmd", "inet_gethost")),
    ("orchestrator", ("tasker-orchestr",)),
    ("worker", ("tasker-worker-r",)),
    ("load generator", ("throughput-",)),
]


def cpu_table(scenarios):
    """CPU seconds per 1,000 steps by process family, at saturation, the floor first."""
    rows = []
    for label, key in [("the floor", "floor_4_steps"), ("`linear_rust`", "linear_rust")]:
        cpu = (scenarios.get(key) or {}).get("cpu_s_per_1000_steps_at_saturation")
        if not cpu:
            continue
        cells = [sum(v for k, v in cpu.items() if k.startswith(names)) for _, names in FAMILIES]
        rows.append(f"| {label} | " + " | ".join(_num(c, 3) for c in cells)
                    + f" | {_num(sum(cpu.values()), 3)} |")
    if not rows:
        return []
    head = " | ".join(name for name, _ in FAMILIES)
    return ["## CPU per 1,000 steps at saturation", "",
            "CPU seconds (user + system, from `/proc`) of each process family during the saturated",
            "closed-loop level, per 1,000 steps completed in its window.", "",
            f"| | {head} | all |", "|---|" + "---:|" * (len(FAMILIES) + 1), *rows, ""]


def replica(r):
    """The windows of the `replica` scenario."""
    if not r:
        return []
    if "failed" in r:
        return ["## Reads off the primary", "", f"Failed: {r['failed']}", ""]
    lines = ["## Reads off the primary", "",
             f"`linear_rust` offered {_num(r.get('rate_tasks_per_s'), 0)} tasks/s open loop, alone and",
             f"beside {r.get('lists_per_s')} task lists a second (`GET /v1/tasks?limit=50`) read from the",
             "primary or, through a second orchestrator with `database.read_url`, from a streaming",
             "replica. The primary's CPU counts its postmaster and every child (the replica's WAL",
             "sender too), over each window's warm-up and measured time, per step of the window.", "",
             "| window | primary CPU s per 1,000 steps | lists answered | p50 ms | p99 ms |",
             "|---|---:|---:|---:|---:|"]
    for name, w in (r.get("windows") or {}).items():
        level = w.get("level") or {}
        lines.append(f"| {name} | {_num(w.get('primary_cpu_s_per_1000_steps'), 3)} | "
                     f"{w.get('lists', 0):,} | {_num(level.get('p50_ms'))} | {_num(level.get('p99_ms'))} |")
    return lines + [""]


def targets(scenarios, check, best, idle, at_fraction):
    """The efficiency work's targets, through throughput_report's `check`."""
    floor = scenarios.get("floor_4_steps") or {}
    lr = scenarios.get("linear_rust") or {}
    f_idle = floor.get("idle_p50_ms") or idle(floor.get("closed_loop"))
    if f_idle and lr.get("idle_p50_ms"):
        check(f"`linear_rust` idle p50 ≤ 1.0 × the floor's ({f_idle:.2f} ms)",
              lr["idle_p50_ms"] / f_idle, 1.0, unit="×")
    lr_p99 = (at_fraction(lr.get("open_loop"), 0.5) or {}).get("p99_ms")
    f_p99 = (at_fraction(floor.get("open_loop"), 0.5) or {}).get("p99_ms")
    if lr_p99 and f_p99 and lr.get("idle_p50_ms") and f_idle:
        ratio = (lr_p99 / lr["idle_p50_ms"]) / (f_p99 / f_idle)
        check("`linear_rust` p99 at 50% of saturation over its idle p50, ≤ 1.5 × the floor's own "
              "ratio", ratio, 1.5, unit="×")
    f = scenarios.get("fanout_100k") or {}
    if f.get("seconds") and "failed" not in f:
        check("100,000-step fan-out ≤ 5 s", f["seconds"], 5.0, unit=" s")
    runs = [x for x in (scenarios.get("pipeline") or {}).get("runs", []) if x.get("batch") == 1000]
    if runs and "failed" not in runs[0]:
        check("polyglot pipeline at batch 1,000 ≥ 100,000 events/s (equal to the oracle)",
              runs[0].get("events_per_s") if runs[0].get("equal_to_oracle") else 0, 100_000,
              at_most=False, digits=0)
    windows = (scenarios.get("replica") or {}).get("windows") or {}
    cpu = {k: (w or {}).get("primary_cpu_s_per_1000_steps") for k, w in windows.items()}
    alone = [c for k, c in cpu.items() if k.startswith("load alone") and c]
    moved = cpu.get("lists on the replica")
    if alone and moved:
        check("primary CPU per step with 50 lists/s on the replica, × the mean of the windows "
              "alone (≤ 1.05)", moved / (sum(alone) / len(alone)), 1.05, unit="×", digits=3)
