#!/usr/bin/env python3
"""Peer benchmark: a Celery chain of 4 tasks over RabbitMQ, for comparison with Tasker.

The chain does what Tasker's linear example does on an integer -- double, add ten, square,
halve -- so ``chain(double.s(6), add_ten.s(), square.s(), halve.s())`` yields 242, and every
result is checked against that.

Celery is configured to be as durable as Tasker: persistent task messages on durable queues,
publisher confirms on every publish (client and worker), and acks only after a task has run
(``task_acks_late``). Results come back over the same RabbitMQ with the ``rpc://`` backend.

Phases:
  * closed loop: for each concurrency C, C client threads each submit a chain and wait for
    its result, over and over; throughput and latency are taken over a measurement window
    that follows a warm-up;
  * open loop: for each fraction f, chains are submitted on a steady schedule at
    f x (best closed-loop tasks/s); latency runs from each chain's *scheduled* submit time, so
    a client that falls behind its schedule shows up as latency, not as a lower offered rate;
  * idle baseline: the p50 latency at concurrency 1 (``idle_p50_ms``).

The script starts its own worker (``python -m celery -A celery_chain worker``) with this very
module as the app, waits for it to answer a ping, and at the end stops it and deletes the
queues and exchanges it created, all named after ``--queue-prefix``.

Set up Celery with ``benches/peers/setup_celery_venv.sh`` and run this file with the python
that script prints, for example::

    PY=$(benches/peers/setup_celery_venv.sh | tail -n1)
    "$PY" benches/peers/celery_chain.py --out target/celery_chain.json
"""

import argparse
import datetime
import json
import math
import os
import queue
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from urllib.parse import urlsplit, urlunsplit

from celery import Celery, chain
from kombu import Connection, Exchange, Queue

START_VALUE = 6
EXPECTED = 242  # ((6 * 2 + 10) ** 2) // 2
STEPS_PER_CHAIN = 4

# Tasker's own default broker, used when neither --amqp-url nor AMQP_URL is given.
TASKER_DEFAULT_AMQP_URL = "amqp://guest:guest@127.0.0.1:55672/%2f"

# The worker subprocess imports this module; these carry the run's settings to it.
ENV_AMQP_URL = "TASKER_BENCH_CELERY_AMQP_URL"
ENV_PREFIX = "TASKER_BENCH_CELERY_PREFIX"

WORKER_CONCURRENCY = 2  # the machine has 2 cores
# With tasks this short, a worker's time goes on the AMQP round trips around each task
# (deliver, confirm-publish the next step and the result, ack), not on the task itself.
# A multiplier of 4 keeps up to 8 messages prefetched, so the moment a pool slot frees up the
# consumer already holds its next message instead of waiting a broker round trip for it.
# 1 is the right choice for long tasks, where prefetching would hold work back from other
# workers; there is only one worker here and every task takes microseconds. Measured on this
# 2-core machine (other jobs were running too, hence the wide ranges), 4 matched 1 at low
# concurrency and beat it at 16 clients: 70-86 against 49-73 chains/s over three interleaved
# runs.
PREFETCH_MULTIPLIER = 4
# Threads rather than prefork: the tasks are trivial arithmetic, so the GIL costs nothing,
# while prefork adds a pipe round trip and pickling between the consumer and a child process
# for every task. Each pool slot mostly waits on the publisher confirms for the next step and
# the result, which threads wait on just as well. Over four interleaved runs at 1/4/16
# clients, threads peaked at 93-109 chains/s and prefork at 76-116, with threads steadier at
# 16 clients (68-105 against 63-105). --pool prefork stays available for comparison.
DEFAULT_POOL = "threads"

RESULT_TIMEOUT_S = 30.0
WORKER_READY_TIMEOUT_S = 60.0
WORKER_STOP_GRACE_S = 15.0

app = Celery("celery_chain")


def configure(amqp_url, prefix, pool_limit=64):
    """Point the app at the broker, with every queue and exchange named after ``prefix``."""
    exchange = Exchange(prefix, type="direct", durable=True, delivery_mode="persistent")
    app.conf.update(
        broker_url=amqp_url,
        result_backend="rpc://",
        # Publisher confirms: apply_async (and the worker's publish of the next step and of
        # each result) returns only once the broker has taken responsibility for the message.
        broker_transport_options={"confirm_publish": True},
        broker_connection_retry_on_startup=False,
        # Connections are opened lazily, so a large limit costs nothing; a small one would make
        # client threads queue for a producer and measure the pool instead of Celery.
        broker_pool_limit=pool_limit,
        task_acks_late=True,
        worker_prefetch_multiplier=PREFETCH_MULTIPLIER,
        task_default_delivery_mode="persistent",
        task_default_queue=prefix,
        task_default_exchange=prefix,
        task_default_routing_key=prefix,
        task_queues=[Queue(prefix, exchange, routing_key=prefix, durable=True)],
        task_create_missing_queues=False,
        # Every step's result is published to the client's reply queue (durable but
        # auto-delete in rpc://, so it lives as long as the client). Persistent, like the
        # step results Tasker commits to its store, so each is written to disk too.
        result_persistent=True,
        task_serializer="json",
        result_serializer="json",
        accept_content=["json"],
        # Keep remote control (ping) and events off the broker-wide "celery" names.
        control_exchange=prefix,
        event_exchange=f"{prefix}.ev",
        worker_send_task_events=False,
        task_send_sent_event=False,
    )


if os.environ.get(ENV_AMQP_URL):  # inside the worker subprocess
    configure(os.environ[ENV_AMQP_URL], os.environ[ENV_PREFIX])


# Explicit names: the client runs this file as __main__, the worker imports it as celery_chain.
@app.task(name="bench.double")
def double(x):
    return x * 2


@app.task(name="bench.add_ten")
def add_ten(x):
    return x + 10


@app.task(name="bench.square")
def square(x):
    return x * x


@app.task(name="bench.halve")
def halve(x):
    return x // 2


_failures_reported = [0]


def report_failure(message, limit=10):
    """Print the first few failures only, so a broken run doesn't flood the terminal."""
    _failures_reported[0] += 1
    if _failures_reported[0] <= limit:
        print(message, file=sys.stderr)


def run_one_chain():
    """Submit one chain and wait for its result; True if the result is the expected one."""
    try:
        result = chain(double.s(START_VALUE), add_ten.s(), square.s(), halve.s()).apply_async()
        value = result.get(timeout=RESULT_TIMEOUT_S)
    except Exception as exc:  # a timeout or a failed task is an error, not a crash
        report_failure(f"chain failed: {type(exc).__name__}: {exc}")
        return False
    if value != EXPECTED:
        report_failure(f"chain returned {value!r}, expected {EXPECTED}")
        return False
    return True


# ----------------------------------------------------------------------------- measurement


def percentile(sorted_values, q):
    """Nearest-rank percentile of an already sorted list (None if empty)."""
    if not sorted_values:
        return None
    rank = max(1, math.ceil(q / 100.0 * len(sorted_values)))
    return sorted_values[rank - 1]


def summarize(records, window_start, window_end):
    """Figures for the chains that finished inside the window.

    ``records`` holds (latency_origin, finished_at, ok) tuples in perf_counter seconds.
    Throughput is the chains that finished correctly in the window over its length.
    """
    duration = window_end - window_start
    done = [r for r in records if r[2] and window_start <= r[1] < window_end]
    latencies = sorted((end - origin) * 1000.0 for origin, end, _ in done)
    tasks = len(latencies)
    # A failure may surface up to RESULT_TIMEOUT_S after its submit: count every failed
    # chain whose life overlapped the window, not only those that ended inside it.
    errors = sum(1 for origin, end, ok in records
                 if not ok and origin < window_end and end >= window_start)

    def ms(v):
        return None if v is None else round(v, 3)

    return {
        "tasks": tasks,
        "tasks_per_s": round(tasks / duration, 2),
        "steps_per_s": round(STEPS_PER_CHAIN * tasks / duration, 2),
        "p50_ms": ms(percentile(latencies, 50)),
        "p95_ms": ms(percentile(latencies, 95)),
        "p99_ms": ms(percentile(latencies, 99)),
        "errors": errors,
    }


class ClientThreads:
    """Long-lived client threads, reused by every phase.

    The rpc:// backend gives each thread its own reply queue, named after the thread's ident.
    Python reuses the idents of finished threads, so a fresh thread could share a reply queue
    with the still-open consumer of a finished one, which would then swallow some of its
    results (seen as 30 s timeouts). Threads that never finish rule that out. They are daemon
    threads so that an interrupted run exits at once instead of waiting on their ``.get()``.
    """

    def __init__(self):
        self._jobs = queue.SimpleQueue()
        self._count = 0

    def _serve(self):
        while True:
            target, done = self._jobs.get()
            try:
                done.put((True, target()))
            except BaseException as exc:
                done.put((False, exc))

    def ensure(self, count):
        """Have at least ``count`` threads, each of which has run one chain.

        A thread's first chain also opens its connections and its reply queue; callers do
        this before starting a phase's clock so that cost stays out of the figures.
        """
        if self._count >= count:
            return
        while self._count < count:
            threading.Thread(target=self._serve, daemon=True,
                             name=f"client-{self._count}").start()
            self._count += 1
        # Between phases every thread is idle; the barrier makes each take exactly one job.
        barrier = threading.Barrier(count)

        def first_chain():
            run_one_chain()
            barrier.wait(timeout=2 * RESULT_TIMEOUT_S)
            return []

        self.run(count, first_chain)

    def run(self, count, target):
        """Run ``target`` in ``count`` threads at once; return their record lists, concatenated.

        Call ensure(count) first: with fewer idle threads, some jobs would run one after another.
        """
        done = queue.SimpleQueue()
        for _ in range(count):
            self._jobs.put((target, done))
        records = []
        for _ in range(count):
            ok, value = done.get()
            if not ok:
                raise value
            records.extend(value)
        return records


_clients = ClientThreads()
# Set when the run is being torn down (error, Ctrl-C, SIGTERM): clients stop submitting.
_stop = threading.Event()


def closed_loop(concurrency, warmup, duration):
    _clients.ensure(concurrency)
    start = time.perf_counter()
    window_start, window_end = start + warmup, start + warmup + duration

    def client():
        local = []
        while True:
            submitted = time.perf_counter()
            if submitted >= window_end or _stop.is_set():
                return local
            ok = run_one_chain()
            local.append((submitted, time.perf_counter(), ok))

    records = _clients.run(concurrency, client)
    return {"concurrency": concurrency, **summarize(records, window_start, window_end)}


def open_loop(rate, fraction, threads, warmup, duration):
    """Submit on a fixed schedule (slot i at start + i / rate) until the window closes.

    Each thread claims the next slot, sleeps until it is due, submits and waits. With enough
    threads every slot is submitted on time; if they are all busy, the wait for a free thread
    counts in that chain's latency, since latency is measured from the slot's due time.
    """
    _clients.ensure(threads)
    start = time.perf_counter() + 0.01
    window_start, window_end = start + warmup, start + warmup + duration
    next_slot, lock = [0], threading.Lock()
    lags = []  # how late each measured submit was against its schedule

    def client():
        local, local_lags = [], []
        while True:
            with lock:
                slot = next_slot[0]
                next_slot[0] += 1
            due = start + slot / rate
            if due >= window_end or _stop.is_set():
                break
            delay = due - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            if due >= window_start:
                local_lags.append(time.perf_counter() - due)
            ok = run_one_chain()
            local.append((due, time.perf_counter(), ok))
        with lock:
            lags.extend(local_lags)
        return local

    records = _clients.run(threads, client)
    return {
        "fraction": fraction,
        "offered_tasks_per_s": round(rate, 2),
        "client_threads": threads,
        "max_submit_lag_ms": round(max(lags, default=0.0) * 1000.0, 3),
        **summarize(records, window_start, window_end),
    }


# ---------------------------------------------------------------------------------- worker


def redact(url):
    """The URL without its password, for messages."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))


def check_broker(url):
    try:
        with Connection(url, connect_timeout=5) as conn:
            conn.connect()
    except Exception as exc:
        sys.exit(f"error: cannot reach the AMQP broker at {redact(url)}: {exc}")


class Worker:
    """A Celery worker subprocess running this module, stopped (with its children) on exit."""

    def __init__(self, amqp_url, prefix, pool):
        self.nodename = f"{prefix}@{socket.gethostname()}"
        self.log = tempfile.NamedTemporaryFile(prefix=f"{prefix}_worker_", suffix=".log",
                                               delete=False)
        here = os.path.dirname(os.path.abspath(__file__))
        env = dict(os.environ, **{ENV_AMQP_URL: amqp_url, ENV_PREFIX: prefix})
        env["PYTHONPATH"] = os.pathsep.join(p for p in (here, env.get("PYTHONPATH")) if p)
        cmd = [
            sys.executable, "-m", "celery", "-A", "celery_chain", "worker",
            "--pool", pool, "--concurrency", str(WORKER_CONCURRENCY),
            "--hostname", self.nodename, "--queues", prefix,
            # No chatter with other workers on the broker: they are not part of the test.
            "--without-gossip", "--without-mingle", "--without-heartbeat",
            "--loglevel", "WARNING",
        ]
        # A session of its own, so stop() can signal the whole group (prefork children too).
        self.proc = subprocess.Popen(cmd, cwd=here, env=env, stdin=subprocess.DEVNULL,
                                     stdout=self.log, stderr=subprocess.STDOUT,
                                     start_new_session=True)

    def log_tail(self, lines=30):
        with open(self.log.name, errors="replace") as f:
            return "".join(f.readlines()[-lines:])

    def wait_ready(self):
        """Ping the worker until it answers; fail if it exits or the deadline passes."""
        deadline = time.monotonic() + WORKER_READY_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"celery worker exited with {self.proc.returncode}:\n"
                                   + self.log_tail())
            if app.control.ping(destination=[self.nodename], timeout=0.5):
                return
        raise RuntimeError(f"celery worker not ready after {WORKER_READY_TIMEOUT_S:.0f}s:\n"
                           + self.log_tail())

    def stop(self):
        if self.proc.poll() is None:
            self._signal_group(signal.SIGTERM)  # warm shutdown
            try:
                self.proc.wait(timeout=WORKER_STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                pass
        # Whatever is left of the group (a stuck pool child, say) goes too.
        self._signal_group(signal.SIGKILL)
        self.proc.wait()
        self.log.close()

    def _signal_group(self, sig):
        try:
            os.killpg(self.proc.pid, sig)
        except ProcessLookupError:
            pass


def delete_broker_objects(prefix):
    """Delete the task queue and the exchanges this run declared (reply queues auto-delete)."""
    with app.connection_for_write() as conn:
        channel = conn.default_channel
        channel.queue_delete(prefix)  # drops any messages left in it as well
        for name in (prefix, f"{prefix}.pidbox", f"reply.{prefix}.pidbox", f"{prefix}.ev"):
            channel.exchange_delete(name)


# ------------------------------------------------------------------------------------ main


def parse_list(text, cast):
    try:
        values = [cast(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a comma-separated list of numbers: {text!r}")
    if not values or any(v <= 0 for v in values):
        raise argparse.ArgumentTypeError(f"expected positive values: {text!r}")
    return values


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--amqp-url", default=os.environ.get("AMQP_URL") or TASKER_DEFAULT_AMQP_URL,
                   help="broker URL (default: $AMQP_URL, else Tasker's default)")
    p.add_argument("--concurrency", type=lambda s: parse_list(s, int), default=[1, 4, 16, 64],
                   help="closed-loop client concurrencies (default: 1,4,16,64)")
    p.add_argument("--duration", type=float, default=8.0,
                   help="measured seconds per level (default: 8)")
    p.add_argument("--warmup", type=float, default=2.0,
                   help="unmeasured seconds before each level (default: 2)")
    p.add_argument("--fractions", type=lambda s: parse_list(s, float), default=[0.25, 0.5, 0.75],
                   help="open-loop rates as fractions of the best closed-loop tasks/s "
                        "(default: 0.25,0.5,0.75)")
    p.add_argument("--out", help="write the JSON results here (default: stdout)")
    p.add_argument("--queue-prefix", default=f"tasker_bench_celery_{os.getpid()}",
                   help="name of the queue and prefix of the exchanges this run creates")
    p.add_argument("--pool", choices=["threads", "prefork"], default=DEFAULT_POOL,
                   help=f"worker pool (default: {DEFAULT_POOL})")
    args = p.parse_args(argv)
    if args.duration <= 0 or args.warmup < 0:
        p.error("--duration must be positive and --warmup not negative")
    return args


def fmt(v):
    return "-" if v is None else f"{v:.1f}"


def print_table(results):
    rows = [("closed", f"C={r['concurrency']}", r) for r in results["closed_loop"]]
    rows += [("open", f"{r['fraction']:g}x={r['offered_tasks_per_s']:.0f}/s", r)
             for r in results["open_loop"]]
    out = sys.stderr
    print(f"celery {results['celery_version']} ({results['pool']} pool x"
          f"{results['worker_concurrency']}), chain of {STEPS_PER_CHAIN}:", file=out)
    print(f"{'phase':<7}{'level':<14}{'tasks':>7}{'tasks/s':>10}{'steps/s':>10}"
          f"{'p50 ms':>9}{'p95 ms':>9}{'p99 ms':>9}{'errors':>8}", file=out)
    for phase, level, r in rows:
        print(f"{phase:<7}{level:<14}{r['tasks']:>7}{r['tasks_per_s']:>10.1f}"
              f"{r['steps_per_s']:>10.1f}{fmt(r['p50_ms']):>9}{fmt(r['p95_ms']):>9}"
              f"{fmt(r['p99_ms']):>9}{r['errors']:>8}", file=out)
    print(f"idle p50: {fmt(results['idle_p50_ms'])} ms", file=out)


def main(argv=None):
    args = parse_args(argv)
    # SIGTERM unwinds like Ctrl-C, so the finally blocks below stop the worker and clean up.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))

    # Enough producer connections for the most client threads any phase can use.
    configure(args.amqp_url, args.queue_prefix, pool_limit=max(args.concurrency + [256]))
    check_broker(args.amqp_url)

    import celery
    import kombu

    results = {
        "peer": "celery",
        "celery_version": celery.__version__,
        "kombu_version": kombu.__version__,
        "pool": args.pool,
        "worker_concurrency": WORKER_CONCURRENCY,
        "prefetch_multiplier": PREFETCH_MULTIPLIER,
        "duration_s": args.duration,
        "warmup_s": args.warmup,
        "closed_loop": [],
        "open_loop": [],
        "idle_p50_ms": None,
        "recorded_at": None,
    }
    failed = False
    try:
        worker = Worker(args.amqp_url, args.queue_prefix, args.pool)
        try:
            worker.wait_ready()
            print(f"worker {worker.nodename} ready", file=sys.stderr)

            for c in args.concurrency:
                row = closed_loop(c, args.warmup, args.duration)
                print(f"closed C={c}: {row['tasks_per_s']} tasks/s, p50 {fmt(row['p50_ms'])} ms,"
                      f" errors {row['errors']}", file=sys.stderr)
                results["closed_loop"].append(row)

            idle = next((r for r in results["closed_loop"] if r["concurrency"] == 1), None)
            if idle is None:  # concurrency 1 was not among the levels: measure it on its own
                idle = closed_loop(1, args.warmup, args.duration)
            results["idle_p50_ms"] = idle["p50_ms"]

            best = max(r["tasks_per_s"] for r in results["closed_loop"])
            # Threads for the open loop by Little's law: in-flight chains = rate x latency,
            # with the worst closed-loop p99 as the latency and a factor of 2 for headroom.
            worst_p99_s = max((r["p99_ms"] or 0.0) for r in results["closed_loop"]) / 1000.0
            for f in args.fractions:
                rate = f * best
                if rate <= 0:
                    print(f"open {f:g}x: skipped, no closed-loop throughput", file=sys.stderr)
                    continue
                threads = min(256, max(4, math.ceil(2 * rate * max(worst_p99_s, 0.01))))
                row = open_loop(rate, f, threads, args.warmup, args.duration)
                print(f"open {f:g}x ({rate:.1f}/s): {row['tasks_per_s']} tasks/s, p50 "
                      f"{fmt(row['p50_ms'])} ms, errors {row['errors']}", file=sys.stderr)
                results["open_loop"].append(row)
        except BaseException:  # errors, and Ctrl-C / SIGTERM too
            failed = True
            raise
        finally:
            _stop.set()
            worker.stop()
            if failed:
                print(f"worker log kept at {worker.log.name}", file=sys.stderr)
            else:
                os.unlink(worker.log.name)
    finally:
        try:
            delete_broker_objects(args.queue_prefix)
        except Exception as exc:
            print(f"warning: could not delete queue {args.queue_prefix}: {exc}", file=sys.stderr)

    results["recorded_at"] = datetime.datetime.now(datetime.timezone.utc).isoformat(
        timespec="seconds")
    text = json.dumps(results, indent=2)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    else:
        print(text)
    print_table(results)
    errors = sum(r["errors"] for r in results["closed_loop"] + results["open_loop"])
    if errors:
        # Still a complete run (timeouts under load are a result too), so exit 0; say so loudly.
        print(f"warning: {errors} chains failed or returned a wrong result", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
