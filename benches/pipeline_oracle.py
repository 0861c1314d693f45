#!/usr/bin/env python3
"""Oracle of the polyglot pipeline (tests/fixtures/task_templates/polyglot/pipeline.yaml; the
contract's "Polyglot pipeline"): the aggregate rows of events [0, N), computed in-process with the
standard library alone, to check what the pipeline's sink steps returned.

    pipeline_oracle.py --events N [--seed 42] [--users 10000]
        prints {"rows": [[user, type_code, count, amount_sum], ...], "events": <events kept>}
        (views dropped; rows sorted by user, then type_code)
    pipeline_oracle.py --events N --check sinks.json
        sinks.json: a JSON array of sink results, each {"rows": [...], "events": n}; merges them
        (count and amount summed per (user, type_code), events summed) and exits 0 if they equal
        the oracle's, else prints the first difference and exits 1
    --time   also prints the in-process rate (events/s) to stderr
    --self-check   checks the oracle itself on 1,000 events (and the three events below)

Event i (u32 arithmetic, wrapping):
    mix(x): x ^= x >> 16; x *= 0x7feb352d; x ^= x >> 15; x *= 0x846ca68b; x ^= x >> 16
    h1 = mix(seed ^ mix(i)); h2 = mix(h1 ^ 0x9e3779b9); h3 = mix(h2)
    user = h1 % users; type = ["click", "view", "purchase"][h2 % 3]; amount = h3 % 10000

The first three events for seed 42, users 10000, as ingest lines "<i>,<user>,<type>,<amount>"
(the TypeScript ingest handler, workers/typescript/src/fixtures/handlers.ts, gives the same for
i in 0..100000; as parse events [user, type_code, amount]: [5122,1,2826] [2561,2,5726] [8215,0,9734]):
    0,5122,view,2826
    1,2561,purchase,5726
    2,8215,click,9734
"""

from __future__ import annotations

import argparse
import json
import sys
import time

M32 = 0xFFFFFFFF
TYPES = ("click", "view", "purchase")
VIEW = 1

# The three events above, as (i, user, type_code, amount), for seed 42 and 10,000 users.
FIRST_EVENTS_SEED_42 = [(0, 5122, 1, 2826), (1, 2561, 2, 5726), (2, 8215, 0, 9734)]


def mix(x: int) -> int:
    x ^= x >> 16
    x = (x * 0x7FEB352D) & M32
    x ^= x >> 15
    x = (x * 0x846CA68B) & M32
    x ^= x >> 16
    return x


def event(i: int, seed: int, users: int) -> tuple[int, int, int]:
    """(user, type_code, amount) of event i."""
    h1 = mix((seed & M32) ^ mix(i & M32))
    h2 = mix(h1 ^ 0x9E3779B9)
    h3 = mix(h2)
    return h1 % users, h2 % 3, h3 % 10000


def aggregate(first: int, count: int, seed: int, users: int) -> dict:
    """The sink's result for events [first, first + count): rows and the number of events kept."""
    seed &= M32
    # One flat pass, mix inlined: the --time figure is the pure computation.
    acc: dict[int, list[int]] = {}
    kept = 0
    for i in range(first, first + count):
        x = i & M32
        x ^= x >> 16
        x = (x * 0x7FEB352D) & M32
        x ^= x >> 15
        x = (x * 0x846CA68B) & M32
        x ^= x >> 16
        h1 = mix(seed ^ x)
        h2 = mix(h1 ^ 0x9E3779B9)
        t = h2 % 3
        if t == VIEW:
            continue
        kept += 1
        key = (h1 % users) * 3 + t
        amount = mix(h2) % 10000
        a = acc.get(key)
        if a is None:
            acc[key] = [1, amount]
        else:
            a[0] += 1
            a[1] += amount
    rows = [[k // 3, k % 3, acc[k][0], acc[k][1]] for k in sorted(acc)]
    return {"rows": rows, "events": kept}


def merge(results: list) -> dict:
    """Sink results of several batches as one: count and amount summed per (user, type_code)."""
    acc: dict[tuple[int, int], list[int]] = {}
    events = 0
    for r in results:
        events += r["events"]
        for user, type_code, count, amount in r["rows"]:
            a = acc.setdefault((user, type_code), [0, 0])
            a[0] += count
            a[1] += amount
    return {"rows": [[u, t, c, s] for (u, t), (c, s) in sorted(acc.items())], "events": events}


def first_difference(got: dict, want: dict) -> str | None:
    for i, (g, w) in enumerate(zip(got["rows"], want["rows"])):
        if g != w:
            return f"row {i}: got {g}, expected {w}"
    if len(got["rows"]) != len(want["rows"]):
        i = min(len(got["rows"]), len(want["rows"]))
        extra = got["rows"][i] if len(got["rows"]) > i else want["rows"][i]
        return f"{len(got['rows'])} rows, expected {len(want['rows'])} (first unmatched: {extra})"
    if got["events"] != want["events"]:
        return f"events: got {got['events']}, expected {want['events']}"
    return None


def self_check() -> None:
    n = 1000
    got = aggregate(0, n, 42, 10000)
    views = sum(1 for i in range(n) if event(i, 42, 10000)[1] == VIEW)
    counted = sum(r[2] for r in got["rows"])
    assert counted == got["events"] == n - views, (counted, got["events"], n, views)
    assert 0 < views < n
    assert got["rows"] == sorted(got["rows"]), "rows not sorted"
    assert all(r[1] != VIEW for r in got["rows"]), "a view row"
    for i, user, t, amount in FIRST_EVENTS_SEED_42:
        assert event(i, 42, 10000) == (user, t, amount), (i, event(i, 42, 10000))
    # Batches merge to the whole.
    parts = [aggregate(f, 250, 42, 10000) for f in range(0, n, 250)]
    assert first_difference(merge(parts), got) is None
    print(f"self-check ok: {n} events, {views} views, {got['events']} click+purchase in {len(got['rows'])} rows")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--events", type=int, help="N: events [0, N)")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--users", type=int, default=10000)
    p.add_argument("--check", metavar="FILE", help="JSON array of sink results to compare with the oracle")
    p.add_argument("--time", action="store_true", help="print events/s of the computation to stderr")
    p.add_argument("--self-check", action="store_true", help="check the oracle itself and exit")
    a = p.parse_args()
    if a.self_check:
        self_check()
        return 0
    if a.events is None or a.events < 0 or a.users < 1:
        p.error("--events N (N >= 0) is required, and --users must be at least 1")

    t0 = time.perf_counter()
    want = aggregate(0, a.events, a.seed, a.users)
    elapsed = time.perf_counter() - t0
    if a.time:
        rate = a.events / elapsed if elapsed > 0 else float("inf")
        print(f"{a.events} events in {elapsed:.3f} s: {rate:,.0f} events/s", file=sys.stderr)

    if a.check is None:
        json.dump(want, sys.stdout, separators=(",", ":"))
        sys.stdout.write("\n")
        return 0
    with open(a.check) as f:
        results = json.load(f)
    if not isinstance(results, list):
        print(f"{a.check}: expected a JSON array of sink results", file=sys.stderr)
        return 1
    diff = first_difference(merge(results), want)
    if diff is not None:
        print(f"mismatch: {diff}")
        return 1
    print(f"ok: {len(results)} sink result(s), {want['events']} events, {len(want['rows'])} rows")
    return 0


if __name__ == "__main__":
    sys.exit(main())
