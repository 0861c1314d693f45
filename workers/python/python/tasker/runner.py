"""The worker loop: takes batches of jobs from the native core, runs their handlers
concurrently, and reports outcomes in batches.

Threads: the caller's thread dispatches (waiting in ``next_batch`` with the GIL released);
sync handlers run on a ``ThreadPoolExecutor`` of ``concurrency`` threads; async handlers on
one asyncio event loop in a thread of its own; one reporter thread sends outcomes, several at
once when several handlers finish together. No handler can hold up another one's report.
"""

from __future__ import annotations

import asyncio
import json
import logging
import queue
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

from . import logs, outcome
from .context import StepContext
from .registry import Registered, Registry, default_registry

log = logging.getLogger("tasker")


class Native(Protocol):
    """What the runner needs of ``tasker._native.Worker``."""

    @property
    def concurrency(self) -> int: ...
    @property
    def stopped(self) -> bool: ...

    def next_batch(self, max: int, timeout_ms: int) -> str: ...
    def complete(self, outcomes: str) -> None: ...
    def parent_results_page(
        self, task_id: str, step_id: str, after: str | None = None
    ) -> tuple[str, str | None]: ...


class Runner:
    """Runs the jobs of one native worker with the handlers of one registry. Single use:
    ``run()`` blocks until ``stop()`` (safe from a signal handler or any thread)."""

    def __init__(
        self,
        native: Native,
        registry: Registry | None = None,
        *,
        concurrency: int | None = None,
        poll_ms: int = 200,
    ) -> None:
        self._native = native
        # Reads parent results carried by reference (absent from stand-ins such as benches).
        self._pages = getattr(native, "parent_results_page", None)
        self._registry = registry if registry is not None else default_registry
        self.concurrency = max(1, concurrency or native.concurrency)
        # Bounds how long a stop request waits for the dispatcher to notice it.
        self._poll_ms = poll_ms
        self._stop = threading.Event()
        self._slots = threading.Condition()
        self._in_flight = 0
        self._outbox: queue.SimpleQueue[str | None] = queue.SimpleQueue()
        self._pool = ThreadPoolExecutor(
            max_workers=self.concurrency, thread_name_prefix="tasker-handler"
        )
        self._loop = asyncio.new_event_loop()
        self._loop_thread = threading.Thread(
            target=self._loop.run_forever, name="tasker-asyncio", daemon=True
        )
        self._reporter = threading.Thread(
            target=self._report_loop, name="tasker-reporter", daemon=True
        )

    @property
    def in_flight(self) -> int:
        """Jobs taken whose outcome is not reported yet."""
        with self._slots:
            return self._in_flight

    def stop(self) -> None:
        """Asks ``run`` to stop taking jobs; it then drains and returns."""
        self._stop.set()

    def run(self, grace_s: float = 10.0) -> bool:
        """Dispatches until ``stop()``, then waits up to ``grace_s`` for running handlers and
        reports their outcomes; async handlers still running then are cancelled. Returns False
        if a sync handler is still running (its step is redelivered once the native worker
        stops, and its thread keeps the interpreter from exiting)."""
        # The core's log records go to `logging` from now on.
        logs.forward()
        self._loop_thread.start()
        self._reporter.start()
        try:
            self._dispatch_loop()
        finally:
            drained = self._drain(grace_s)
        return drained

    def _dispatch_loop(self) -> None:
        while not self._stop.is_set():
            with self._slots:
                while self._in_flight >= self.concurrency and not self._stop.is_set():
                    self._slots.wait(self._poll_ms / 1000)
                free = self.concurrency - self._in_flight
            if self._stop.is_set():
                return
            # Blocks with the GIL released: handler threads keep running meanwhile.
            raw = self._native.next_batch(free, self._poll_ms)
            if raw == "[]":
                if self._native.stopped:
                    return
                continue
            jobs = json.loads(raw)
            with self._slots:
                self._in_flight += len(jobs)
            for job in jobs:
                self._dispatch(job)

    def _dispatch(self, job: dict[str, Any]) -> None:
        entry = self._registry.get(job["handler"])
        if entry is None:
            self._finish(outcome.unknown_handler(job["id"], job["handler"]))
            return
        try:
            ctx = StepContext.from_job(job, self._pages)
        except Exception as e:
            self._finish(outcome.failure(job["id"], e, outcome.now()))
            return
        if entry.is_async:
            asyncio.run_coroutine_threadsafe(self._run_async(entry, ctx, job["id"]), self._loop)
        else:
            self._pool.submit(self._run_sync, entry, ctx, job["id"])

    def _run_sync(self, entry: Registered, ctx: StepContext, job_id: int) -> None:
        started = outcome.now()
        try:
            out = outcome.success(job_id, entry.fn(ctx), started)
        except BaseException as e:  # even SystemExit must fail its step, not vanish with the thread
            out = outcome.failure(job_id, e, started)
        self._finish(out)

    async def _run_async(self, entry: Registered, ctx: StepContext, job_id: int) -> None:
        started = outcome.now()
        # An async handler can be cancelled, so it stops at its timeout instead of running on
        # after the core has given up on it.
        deadline = asyncio.timeout(ctx.timeout_ms / 1000)
        try:
            async with deadline:
                result = await entry.fn(ctx)
            out = outcome.success(job_id, result, started)
        except TimeoutError as e:
            out = (
                outcome.timed_out(job_id, ctx.timeout_ms, started)
                if deadline.expired()
                else outcome.failure(job_id, e, started)
            )
        except asyncio.CancelledError:
            # Shutdown: report nothing; the step is redelivered once the native worker stops.
            self._release()
            raise
        except BaseException as e:
            out = outcome.failure(job_id, e, started)
        self._finish(out)

    def _finish(self, encoded: str) -> None:
        self._outbox.put(encoded)
        self._release()

    def _release(self) -> None:
        with self._slots:
            self._in_flight -= 1
            self._slots.notify_all()

    def _report_loop(self) -> None:
        while True:
            first = self._outbox.get()
            if first is None:
                return
            batch, last = [first], False
            # Whatever finished meanwhile goes in the same call.
            while True:
                try:
                    item = self._outbox.get_nowait()
                except queue.Empty:
                    break
                if item is None:
                    last = True
                    break
                batch.append(item)
            try:
                self._native.complete("[" + ",".join(batch) + "]")
            except Exception:
                # The core times these steps out and retries them; keep reporting the rest.
                log.exception("reporting %d outcome(s) failed", len(batch))
            if last:
                return

    def _drain(self, grace_s: float) -> bool:
        deadline = time.monotonic() + grace_s
        with self._slots:
            while self._in_flight > 0:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._slots.wait(left)
            if self._in_flight:
                log.warning("stopping with %d handler(s) still running", self._in_flight)
        if self._loop_thread.is_alive():
            asyncio.run_coroutine_threadsafe(_cancel_all(), self._loop).result(timeout=5)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._loop_thread.join(timeout=5)
            if not self._loop_thread.is_alive():
                self._loop.close()
        self._pool.shutdown(wait=False, cancel_futures=True)
        self._outbox.put(None)
        self._reporter.join(timeout=5)
        # Cancelled async handlers released their slots; what is left are sync handlers.
        return self.in_flight == 0


async def _cancel_all() -> None:
    me = asyncio.current_task()
    tasks = [t for t in asyncio.all_tasks() if t is not me]
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
