#!/usr/bin/env python3
"""Turns the output of `cargo bench --bench throughput` into docs/benchmarks/throughput.md.

Reads target/throughput/summary.json (closed- and open-loop levels per scenario, the floor, the
batch sizes at saturation, the 100,000-step fan-out and the Celery peer, all from one run) and
adds the machine, the date and the commit. `cargo make bench-report` calls it through
bench_report.py, whose `run`, `machine` and `fmt` it shares.
"""
import json
import math
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import bench_report  # noqa: E402
from bench_report import fmt, machine, run  # noqa: E402
import throughput_efficiency  # noqa: E402

ROOT = bench_report.ROOT
SUMMARY = bench_report.TARGET / "throughput" / "summary.json"
OUT = ROOT / "docs" / "benchmarks" / "throughput.md"

SCENARIOS = ["linear_rust", "diamond_rust", "fanout_100_rust", "linear_python"]

# The batch-size histograms in the order a step goes through them.
HOPS = [
    "tasker_create_batch_size",
    "tasker_dispatch_round_batch_size",
    "tasker_dispatch_message_batch_size",
    "tasker_worker_consume_batch_size",
    "tasker_worker_host_batch_size",
    "tasker_worker_ffi_batch_size",
    "tasker_worker_result_batch_size",
    "tasker_worker_result_message_batch_size",
    "tasker_result_consume_batch_size",
    "tasker_result_batch_size",
]

LEGEND = [
    "Batch sizes are read from the processes' Prometheus histograms during the saturated level;",
    "*p50 ≤* / *p95 ≤* are the bucket bounds under which half / 95% of the batches fall.",
    "Orchestrator: `tasker_create_batch_size` = tasks per creation statement,",
    "`tasker_dispatch_round_batch_size` = steps per publish confirm round,",
    "`tasker_dispatch_message_batch_size` = steps per step message,",
    "`tasker_result_consume_batch_size` = result messages per consume,",
    "`tasker_result_batch_size` = results per transaction. Worker:",
    "`tasker_worker_consume_batch_size` = step messages per consume,",
    "`tasker_worker_host_batch_size` = steps handed to the handler host at once,",
    "`tasker_worker_ffi_batch_size` = steps per FFI call, `tasker_worker_result_batch_size` =",
    "results per confirm round, `tasker_worker_result_message_batch_size` = results per result",
    "message.",
]

NOISE = [
    "On this 2-core VM the same build measures ±25% from run to run. Compare each scenario with",
    "the floor, the Celery peer and the other scenarios of the same run, not with figures from",
    "another run.",
]


def value(v):
    """A number, or None for a missing or NaN figure (serde_json writes NaN as null)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return None if math.isnan(v) else v


def num(v, digits=2):
    return fmt(value(v), digits)


def bound(v):
    """A histogram bucket bound: a number, "+Inf" or null."""
    if isinstance(v, str):
        return v
    v = value(v)
    return "" if v is None else f"{v:g}"


def best(levels):
    """The closed-loop level with the most tasks per second."""
    levels = [l for l in levels or [] if value(l.get("tasks_per_s")) is not None]
    return max(levels, key=lambda l: l["tasks_per_s"], default=None)


def idle(levels):
    """p50 at concurrency 1."""
    return next((value(l.get("p50_ms")) for l in levels or [] if l.get("concurrency") == 1), None)


def at_fraction(levels, fraction):
    return next((l for l in levels or []
                 if value(l.get("fraction")) is not None and abs(l["fraction"] - fraction) < 1e-6),
                None)


def closed_table(levels, saturation):
    sat = saturation.get("concurrency") if saturation else None
    rows = ["| concurrency | tasks | tasks/s | steps/s | p50 ms | p95 ms | p99 ms | errors |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for l in levels:
        c = l.get("concurrency")
        c = f"**{c}**" if c is not None and c == sat else ("" if c is None else str(c))
        rows.append(f"| {c} | {l.get('tasks', '')} | {num(l.get('tasks_per_s'), 1)} | "
                    f"{num(l.get('steps_per_s'), 0)} | {num(l.get('p50_ms'))} | {num(l.get('p95_ms'))} | "
                    f"{num(l.get('p99_ms'))} | {l.get('errors', '')} |")
    return rows


def open_table(levels):
    rows = ["| load | offered tasks/s | achieved tasks/s | steps/s | p50 ms | p95 ms | p99 ms | errors |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for l in levels:
        f = value(l.get("fraction"))
        rows.append(f"| {'' if f is None else f'{f * 100:.0f}%'} | {num(l.get('offered_tasks_per_s'), 1)} | "
                    f"{num(l.get('tasks_per_s'), 1)} | {num(l.get('steps_per_s'), 0)} | {num(l.get('p50_ms'))} | "
                    f"{num(l.get('p95_ms'))} | {num(l.get('p99_ms'))} | {l.get('errors', '')} |")
    return rows


def batch_table(batches):
    def order(key):
        source, _, metric = key.partition(": ")
        return (HOPS.index(metric) if metric in HOPS else len(HOPS), source != "orchestrator", key)

    rows = ["| hop | count | mean | p50 ≤ | p95 ≤ |", "|---|---:|---:|---:|---:|"]
    for key in sorted(batches, key=order):
        b = batches[key] or {}
        source, _, metric = key.partition(": ")
        hop = f"{source}: `{metric}`" if metric else f"`{key}`"
        rows.append(f"| {hop} | {num(b.get('count'), 0)} | {num(b.get('mean'))} | "
                    f"{bound(b.get('p50_le'))} | {bound(b.get('p95_le'))} |")
    return rows


def saturation_table(scenarios):
    rows = ["| scenario | steps/task | saturated tasks/s | steps/s | at concurrency | p50 ms | p99 ms | idle p50 ms (c=1) |",
            "|---|---:|---:|---:|---:|---:|---:|---:|"]

    def row(name, steps, sat, idle_p50):
        if sat is None:
            return
        rows.append(f"| {name} | {steps} | {num(sat.get('tasks_per_s'), 1)} | {num(sat.get('steps_per_s'), 0)} | "
                    f"{sat.get('concurrency', '')} | {num(sat.get('p50_ms'))} | {num(sat.get('p99_ms'))} | "
                    f"{num(idle_p50)} |")

    if "floor_4_steps" in scenarios:
        floor = scenarios["floor_4_steps"]
        closed = floor.get("closed_loop")
        row("floor (4 steps)", 4, floor.get("saturation") or best(closed), idle(closed))
    for name in SCENARIOS:
        s = scenarios.get(name)
        if s:
            row(f"`{name}`", s.get("steps_per_task", ""), s.get("saturation") or best(s.get("closed_loop")),
                s.get("idle_p50_ms"))
    celery = scenarios.get("celery_chain_4") or {}
    if "closed_loop" in celery:
        row("Celery chain (4 tasks)", 4, best(celery["closed_loop"]), celery.get("idle_p50_ms"))
    return rows if len(rows) > 2 else []


def fan_out(f):
    if not f:
        return []
    if "failed" in f:
        return ["## 100,000-step fan-out", "", f"Failed: {f['failed']}", ""]
    steps = value(f.get("steps"))
    title = f"{steps - 2:,.0f}-step fan-out" if steps is not None else "100,000-step fan-out"
    result = f.get("result")
    result = "" if result is None else str(result).replace("|", "\\|")
    if len(result) > 80:
        result = result[:77] + "..."
    return [
        f"## {title}", "",
        "One `batch_numbers` task on the Rust worker: `split` cuts 0..N into batches of one number,",
        "one step each, and `total` adds them up; timed from the create request to the completion",
        "notification, resident memory sampled every 50 ms while it runs.", "",
        "| | |", "|---|---:|",
        f"| steps (with `split` and `total`) | {'' if steps is None else f'{steps:,.0f}'} |",
        f"| seconds | {num(f.get('seconds'))} |",
        f"| steps/s | {num(f.get('steps_per_s'), 0)} |",
        f"| orchestrator RSS before → peak, MiB | {num(f.get('orchestrator_rss_before_mib'), 1)} → "
        f"{num(f.get('orchestrator_peak_rss_mib'), 1)} |",
        f"| worker RSS before → peak, MiB | {num(f.get('worker_rss_before_mib'), 1)} → "
        f"{num(f.get('worker_peak_rss_mib'), 1)} |",
        f"| expected sum | {f.get('expected_sum', '')} |",
        f"| task result | {'`' + result + '`' if result else ''} |",
        "",
    ]


def pipeline(p):
    """The polyglot pipeline: events/s at each batch size beside the oracle, and each stage."""
    if not p:
        return []
    lines = [
        "## The polyglot pipeline", "",
        f"`polyglot/pipeline` over {value(p.get('events')):,.0f} events (seed 42, 10,000 users):",
        "ingest in TypeScript, parse in Rust, rules in Python, aggregate in Ruby, sink in",
        "TypeScript, one task per batch, 256 tasks in flight, every batch through every stage",
        "durably; the aggregates compared with the oracle (`tasker::pipeline`). The oracle computes",
        f"them in one process at {num(p.get('oracle_events_per_s'), 0)} events/s. For reference, not",
        f"measured here: {p.get('reference', '')}.", "",
        "| batch | tasks | seconds | events/s | equal to the oracle | ms per step at the worker (hand-out to outcome): ingest / parse / rules / aggregate / sink | CPU seconds used (of those available) |",
        "|---:|---:|---:|---:|---|---|---|",
    ]
    for r in p.get("runs", []):
        if "failed" in r:
            lines.append(f"| {r.get('batch')} | | | | failed: {r['failed']} | |")
            continue
        st = r.get("stages", {})
        per = " / ".join(num((st.get(n) or {}).get("worker_ms_per_step"), 3)
                         for n in ["ingest", "parse", "rules", "aggregate", "sink"])
        cpu = r.get("cpu_seconds") or {}
        busiest = sorted(cpu.items(), key=lambda kv: -kv[1])[:6]
        top = ", ".join(f"{k} {num(v, 1)}" for k, v in busiest)
        lines.append(f"| {r['batch']:,} | {r['tasks']:,} | {num(r.get('seconds'))} | "
                     f"{num(r.get('events_per_s'), 0)} | {'yes' if r.get('equal_to_oracle') else '**no**'} | {per} | "
                     f"{top} (of {num(r.get('cpu_available_seconds'), 1)}) |")
    lines.append("")
    return lines


def priority_line(p, how):
    """One priority run: a high task's first step idle and behind the low backlog."""
    if "failed" in p:
        return [f"- priority ({how}): failed: {p['failed']}"]
    if not p:
        return []
    idle_, behind = p.get("idle_first_start") or {}, p.get("behind_backlog_first_start") or {}
    return [
        f"- **priority**, {how}: a high-priority `linear` task's first step starts "
        f"{num(idle_.get('p50_ms'))} ms (p50; p95 {num(idle_.get('p95_ms'))}) after its creation "
        f"when idle, {num(behind.get('p50_ms'))} ms (p95 {num(behind.get('p95_ms'))}; "
        f"{num(p.get('ratio_p50'))}x) behind {value(p.get('backlog')):,.0f} low-priority "
        f"`slow_chain` tasks of 100 ms steps; a low-priority probe beside it took "
        f"{num(p.get('low_probe_first_start_ms'), 0)} ms; the backlog all finished "
        f"{num(p.get('backlog_all_done_s'), 1)} s after its first task was created."]


def fair_sharing(f):
    """Priorities, a concurrency limit per customer and a rate limit, under load."""
    if not f:
        return []
    lines = ["## Fair sharing", ""]
    for key, how in [("priority", "with the worker's defaults (prefetch 128, concurrency 64: it "
                      "holds more steps than it runs, so a high step waits for a running one to end)"),
                     ("priority_with_spare_slots", "with the worker's prefetch at half its "
                      "concurrency (slots to spare: the floor of the lanes themselves)")]:
        lines += priority_line(f.get(key) or {}, how)
    c = f.get("concurrency") or {}
    if "failed" in c:
        lines.append(f"- concurrency: failed: {c['failed']}")
    elif c:
        a, b = c.get("A") or {}, c.get("B") or {}
        lines.append(
            f"- **concurrency** (limit 2 per customer, 20 two-step tasks each, A's created first): "
            f"at most {a.get('most_overlapping')} / {b.get('most_overlapping')} steps of A / B at "
            f"once (the handlers counted {a.get('most_counted_by_handlers')} / "
            f"{b.get('most_counted_by_handlers')}); A done in {num(a.get('finished_s'))} s, B in "
            f"{num(b.get('finished_s'))} s ({num(c.get('b_over_a'))}x).")
    r = f.get("rate") or {}
    if "failed" in r:
        lines.append(f"- rate: failed: {r['failed']}")
    elif r:
        lines.append(
            f"- **rate** (100 per second, burst 20; 100 steps created while the key was paused): "
            f"{r.get('started_before_pause_end')} started before the pause's end; the last started "
            f"{num(r.get('pause_end_to_last_start_s'), 3)} s after it, "
            f"{num(r.get('first_to_last_start_s'), 3)} s after the first.")
    if f.get("worker_restart_failed"):
        lines.append(f"- the worker's restart failed: {f['worker_restart_failed']}")
    lines.append("")
    return lines


def scale(sc):
    """Bulk creation and a purge beside load."""
    if not sc:
        return []
    lines = ["## Scale", ""]
    for i, r in enumerate(sc.get("bulk_create") or []):
        if "failed" in r:
            lines.append(f"- bulk create run {i + 1}: failed: {r['failed']}")
            continue
        lines.append(
            f"- **bulk create** run {i + 1}: {value(r.get('tasks')):,.0f} `linear` tasks in one "
            f"`POST /v1/tasks:batch`: {num(r.get('request_s'), 3)} s; the same request again (every "
            f"item `existing`) {num(r.get('repeat_s'), 3)} s; the last of them complete "
            f"{num(r.get('all_complete_s'), 1)} s after the first request.")
    p = sc.get("purge_beside_load") or {}
    if "failed" in p:
        lines.append(f"- purge beside load: failed: {p['failed']}")
    elif p:
        q, d = p.get("without_purge") or {}, p.get("during_purge") or {}
        lines.append(
            f"- **purge beside load**: `linear_rust` offered {num(p.get('offered_tasks_per_s'), 0)} "
            f"tasks/s (1,000 steps/s) for {num(p.get('window_s'), 0)} s: p50 / p95 / p99 "
            f"{num(q.get('p50_ms'))} / {num(q.get('p95_ms'))} / {num(q.get('p99_ms'))} ms without a "
            f"purge, {num(d.get('p50_ms'))} / {num(d.get('p95_ms'))} / {num(d.get('p99_ms'))} ms while "
            f"{value(p.get('purged_tasks')):,.0f} of 100,000 finished tasks "
            f"({value(p.get('purged_rows')):,.0f} rows) were purged at the retention policy's pace "
            f"in {num(p.get('purge_s'), 1)} s"
            + ("" if p.get("purge_outlasted_window", True) else " (ended before the window did)")
            + f" (p99 {num(p.get('p99_ratio'))}x).")
    lines.append("")
    return lines


def targets(scenarios):
    """The issue's throughput targets against this run."""
    rows = []

    def check(what, measured, limit, at_most=True, unit="", digits=2, strict=False):
        measured, limit = value(measured), value(limit)
        if measured is None or limit is None:
            return
        if strict:  # ahead of the peer, not level with it
            met = measured < limit if at_most else measured > limit
        else:
            met = measured <= limit if at_most else measured >= limit
        rows.append(f"| {what} | {measured:,.{digits}f}{unit} | {limit:,.{digits}f}{unit} | "
                    f"{'met' if met else 'missed'} |")

    lr = scenarios.get("linear_rust") or {}
    lr_sat = lr.get("saturation") or best(lr.get("closed_loop"))
    lr_idle = value(lr.get("idle_p50_ms"))
    lr_half = at_fraction(lr.get("open_loop"), 0.5) or {}
    if lr_sat:
        check("`linear_rust` sustained steps/s ≥ 10,000", lr_sat.get("steps_per_s"), 10_000,
              at_most=False, digits=0)
    p99_half = value(lr_half.get("p99_ms"))
    if p99_half is not None and lr_idle:
        check(f"`linear_rust` p99 at 50% of saturation ({p99_half:.2f} ms) ≤ 3 × idle p50 "
              f"({lr_idle:.2f} ms)", p99_half / lr_idle, 3.0, unit="×")
    # The same ratio for the floor: what the hops alone allow on this machine.
    floor = scenarios.get("floor_4_steps") or {}
    f_idle = value(floor.get("idle_p50_ms")) or idle(floor.get("closed_loop"))
    f_p99 = value((at_fraction(floor.get("open_loop"), 0.5) or {}).get("p99_ms"))
    if f_p99 is not None and f_idle:
        check(f"for reference, the floor's p99 at 50% of its saturation ({f_p99:.2f} ms) ≤ 3 × its "
              f"idle p50 ({f_idle:.2f} ms)", f_p99 / f_idle, 3.0, unit="×")

    f_sat = (floor.get("saturation") or best(floor.get("closed_loop")) or {})
    if lr_sat and value(f_sat.get("steps_per_s")):
        check("`linear_rust` saturated steps/s ≥ 90% of the floor's "
              f"({value(f_sat.get('steps_per_s')):,.0f})",
              value(lr_sat.get("steps_per_s")) / value(f_sat.get("steps_per_s")) * 100, 90.0,
              at_most=False, unit="%", digits=1)

    f = scenarios.get("fanout_100k") or {}
    if "failed" not in f and (value(f.get("steps")) or 0) - 2 >= 100_000:
        if value(f.get("seconds")):
            check("fan-out steps/s ≥ 20,000", value(f.get("steps")) / value(f.get("seconds")),
                  20_000, at_most=False, digits=0)
        check("orchestrator peak RSS (100,000-step fan-out) ≤ 150 MiB",
              f.get("orchestrator_peak_rss_mib"), 150.0, unit=" MiB", digits=1)

    celery = scenarios.get("celery_chain_4") or {}
    if "closed_loop" in celery:
        c_best = best(celery["closed_loop"]) or {}
        c_half = at_fraction(celery.get("open_loop"), 0.5) or {}
        if lr_sat:
            check("`linear_rust` saturated steps/s > Celery chain's best", lr_sat.get("steps_per_s"),
                  c_best.get("steps_per_s"), at_most=False, digits=0, strict=True)
        check("`linear_rust` idle p50 < Celery chain's idle p50", lr_idle, celery.get("idle_p50_ms"),
              unit=" ms", strict=True)
        check("`linear_rust` p50 at 50% of saturation < Celery chain's p50 at 50% of its saturation",
              lr_half.get("p50_ms"), c_half.get("p50_ms"), unit=" ms", strict=True)
        # The same load for both: the rate the peer was offered at 50% of its saturation.
        same = lr.get("at_peer_half_rate") or {}
        rate = value(same.get("offered_tasks_per_s"))
        if rate is not None:
            for q in ("p50", "p99"):
                check(f"`linear_rust` {q} < Celery chain's {q}, both offered {rate:.1f} tasks/s",
                      same.get(f"{q}_ms"), c_half.get(f"{q}_ms"), unit=" ms", strict=True)
    sc = scenarios.get("scale") or {}
    runs = [r for r in sc.get("bulk_create") or [] if "failed" not in r]
    if runs:
        check("10,000 tasks in one bulk request ≤ 1 s (median of the runs)",
              sorted(r["request_s"] for r in runs)[len(runs) // 2], 1.0, unit=" s", digits=3)
    pb = sc.get("purge_beside_load") or {}
    if "p99_ratio" in pb:
        check("p99 of a 1,000 steps/s load while finished tasks are purged ≤ 1.10 × without",
              pb["p99_ratio"], 1.10, unit="×")
    throughput_efficiency.targets(scenarios, check, best, idle, at_fraction)
    if not rows:
        return []
    return ["## Targets in this run", "", "| target | measured | limit | |", "|---|---:|---:|---|",
            *rows, ""]


def details(scenarios):
    """Per scenario (and the floor and the peer): every load level, and the batch sizes."""
    body, batched = [], False
    if "floor_4_steps" in scenarios:
        floor = scenarios["floor_4_steps"]
        closed = floor.get("closed_loop") or []
        body += ["### Floor (4 steps)", "", "Closed loop:", "",
                 *closed_table(closed, floor.get("saturation") or best(closed)), ""]
        if floor.get("open_loop"):
            body += ["Open loop:", "", *open_table(floor["open_loop"]), ""]
    for name in SCENARIOS:
        s = scenarios.get(name)
        if not s:
            continue
        saturation = s.get("saturation") or best(s.get("closed_loop"))
        worker = str(s.get("worker", "")).capitalize()
        body += [f"### `{name}` ({worker} worker, {s.get('steps_per_task', '?')} steps per task)", ""]
        if s.get("closed_loop"):
            body += ["Closed loop:", "", *closed_table(s["closed_loop"], saturation), ""]
        if s.get("open_loop"):
            body += ["Open loop:", "", *open_table(s["open_loop"]), ""]
        if s.get("at_peer_half_rate"):
            body += ["At the Celery chain's 50% rate (the same load as the peer's 50% level):", "",
                     *open_table([s["at_peer_half_rate"]]), ""]
        batches = s.get("batch_sizes_at_saturation")
        if batches:
            batched = True
            at = f" (c={saturation['concurrency']})" if saturation and saturation.get("concurrency") else ""
            body += [f"Batch sizes at saturation{at}:", "", *batch_table(batches), ""]
    celery = scenarios.get("celery_chain_4") or {}
    if celery.get("closed_loop"):
        body += ["### Celery chain (4 tasks)", "",
                 f"Celery {celery.get('celery_version', '?')}, kombu {celery.get('kombu_version', '?')}, "
                 f"{celery.get('pool', '?')} pool, worker concurrency {celery.get('worker_concurrency', '?')}, "
                 f"prefetch multiplier {celery.get('prefetch_multiplier', '?')}.", "",
                 "Closed loop:", "", *closed_table(celery["closed_loop"], best(celery["closed_loop"])), ""]
        if celery.get("open_loop"):
            body += ["Open loop:", "", *open_table(celery["open_loop"]), ""]
    if not body:
        return []
    return ["## Scenarios", "",
            "Latencies in ms from the create request to the completion notification; the saturated",
            "closed-loop level in bold.", *(LEGEND if batched else []), "", *body]


def main():
    if not SUMMARY.exists():
        sys.exit(f"{SUMMARY} not found: run `cargo make bench-throughput` first")
    summary = json.loads(SUMMARY.read_text())
    scenarios = summary.get("scenarios", {})
    # As recorded by the run; older summaries lack it, and then the checkout's state is shown.
    commit = summary.get("commit") or run("git", "-C", str(ROOT), "rev-parse", "--short", "HEAD")
    dirty = summary.get("dirty")
    if dirty is None:
        dirty = run("git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no")
    seconds = summary.get("seconds_per_level")
    lines = [
        "# Throughput",
        "",
        "Tasker under load on real PostgreSQL and RabbitMQ, the orchestrator and the workers as",
        "separate release processes. *Closed loop*: `C` clients each create a task through the REST",
        "API and wait for its completion notification, again and again; the best level is",
        "*saturation*. *Open loop*: tasks offered at a steady 25/50/75% of the saturated rate, each",
        "timed from its create request to its completion notification. The *floor* makes the same",
        "hops as a 4-step chain (durable commits, confirmed publishes, consumes) with commits and",
        "confirms batched as far as they go; the *peer* is a 4-task Celery chain over the same",
        "RabbitMQ, durable, in the same run."
        + (f" Each level is measured for {seconds} s after a 1 s warm-up." if seconds else ""),
        "",
        "Reproduce: `cargo make bench-throughput`, then `cargo make bench-report`.",
        "",
        f"Recorded {summary.get('recorded_at', 'unknown')} at commit `{commit}`"
        + (" (with uncommitted changes)" if dirty and dirty != "unknown" else "") + ".",
        "",
    ]
    lines += [f"- {m}" for m in machine()]
    lines.append("")

    sat = saturation_table(scenarios)
    if sat:
        lines += ["## Saturation", "", *sat, ""]
    celery = scenarios.get("celery_chain_4") or {}
    if "skipped" in celery:
        lines += [f"Celery peer skipped: {celery['skipped']}", ""]
    lines += details(scenarios)
    lines += throughput_efficiency.cpu_table(scenarios)
    lines += fan_out(scenarios.get("fanout_100k"))
    lines += pipeline(scenarios.get("pipeline"))
    lines += fair_sharing(scenarios.get("fair_sharing"))
    lines += scale(scenarios.get("scale"))
    lines += throughput_efficiency.replica(scenarios.get("replica"))
    lines += targets(scenarios)
    if summary.get("notes"):
        lines += ["Notes from the run:", ""] + [f"- {n}" for n in summary["notes"]] + [""]
    lines += [*NOISE, ""]
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text("\n".join(lines))
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
