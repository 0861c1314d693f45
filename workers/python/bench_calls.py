#!/usr/bin/env python3
"""Handler calls per second through the Python binding, with a trivial handler.

How it measures: N step messages are published straight to a fresh queue prefix on the real
RabbitMQ (AMQP_URL), then the native worker starts with a Runner over one no-op handler. The
core consumes them (prefetch from config, default 128), hands them over in batches
(``take_steps``), the runner calls the handler and reports outcomes in batches
(``complete``); the core publishes each result with a confirm and acks the step. Reported:

- calls/s: from the runner's start to the N-th handler call returning;
- results/s: from the same start until all N results are in the results queue (consumed here;
  a message carries one result or a JSON array of them);

Run: workers/python/build.sh, then
    eval "$(cargo-make/services.sh env)"; workers/python/.venv/bin/python workers/python/bench_calls.py
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path

import pika

import tasker
from tasker import _native

HERE = Path(__file__).resolve().parent
TEMPLATES = HERE.parent.parent / "tests/fixtures/task_templates/python"
NAMESPACE = "python_examples"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=20_000)
    p.add_argument("--concurrency", type=int, default=64)
    p.add_argument("--async", dest="use_async", action="store_true", help="an async no-op handler")
    args = p.parse_args()
    url = os.environ.get("AMQP_URL") or sys.exit("AMQP_URL is not set (eval \"$(cargo-make/services.sh env)\")")

    prefix = f"bench_{uuid.uuid4().hex[:12]}"
    os.environ["TASKER_QUEUE_PREFIX"] = prefix
    # No orchestrator here: the worker consumes the steps published below, nothing else.
    os.environ["TASKER_WORKER__REGISTER_TEMPLATES"] = "false"
    dl = {"x-dead-letter-exchange": "", "x-dead-letter-routing-key": f"{prefix}.dead"}
    steps_q, results_q, dead_q = f"{prefix}.steps.{NAMESPACE}", f"{prefix}.results", f"{prefix}.dead"
    conn = pika.BlockingConnection(pika.URLParameters(url))
    ch = conn.channel()
    ch.queue_declare(dead_q, durable=True)
    ch.queue_declare(results_q, durable=True, arguments=dl)
    ch.queue_declare(steps_q, durable=True, arguments=dl)

    now = datetime.now(timezone.utc).isoformat()
    for i in range(args.steps):
        ch.basic_publish("", steps_q, json.dumps({
            "task_id": str(uuid.uuid4()), "step_id": str(uuid.uuid4()), "namespace": NAMESPACE,
            "task_name": "bench", "step_name": f"s{i}", "handler": "noop", "attempt": 1,
            "max_attempts": 1, "context": {"i": i}, "parent_results": {},
            "dispatched_at": now, "timeout_ms": 60_000,
        }).encode())

    reg = tasker.Registry()
    calls = 0
    lock = threading.Lock()
    all_called = threading.Event()

    def count() -> None:
        nonlocal calls
        with lock:
            calls += 1
            if calls == args.steps:
                all_called.set()

    if args.use_async:
        @reg.handler("noop")
        async def noop_async(ctx):
            count()
            return {}
    else:
        @reg.handler("noop")
        def noop(ctx):
            count()
            return {}

    native = _native.NativeWorker.start(
        json.dumps({"templates": str(TEMPLATES), "health_port": 0, "concurrency": args.concurrency})
    )
    runner = tasker.Runner(native, reg)
    t0 = time.perf_counter()
    thread = threading.Thread(target=runner.run, daemon=True)
    thread.start()
    if not all_called.wait(timeout=600):
        sys.exit(f"only {calls} of {args.steps} calls within 600 s")
    t_calls = time.perf_counter() - t0
    got = 0
    for method, _props, body in ch.consume(results_q, inactivity_timeout=60, auto_ack=True):
        if method is None:
            break
        # One message carries one result or a JSON array of them.
        decoded = json.loads(body)
        got += len(decoded) if isinstance(decoded, list) else 1
        if got >= args.steps:
            break
    t_results = time.perf_counter() - t0
    ch.cancel()
    runner.stop()
    thread.join(timeout=30)
    native.stop()
    for q in (steps_q, results_q, dead_q):
        ch.queue_delete(q)
    conn.close()
    if got != args.steps:
        sys.exit(f"only {got} of {args.steps} results")
    kind = "async" if args.use_async else "sync"
    print(f"{args.steps} steps, {kind} no-op handler, concurrency {args.concurrency}: "
          f"{args.steps / t_calls:,.0f} calls/s (all calls in {t_calls:.2f} s), "
          f"{args.steps / t_results:,.0f} results/s (all results in {t_results:.2f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
