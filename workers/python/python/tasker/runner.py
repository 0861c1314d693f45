"""The worker loop: handler threads take jobs straight from the native core, run them and
report their outcomes themselves.

Threads: ``concurrency`` handler threads, each waiting in ``take_steps`` for one job with the
GIL released (the core wakes one thread per job), running a sync handler itself and reporting
its outcome with ``complete``: a step crosses from the core to its handler and back with no
thread between them. Async handlers run on one asyncio event loop in a thread of its own and
report their own outcomes; the thread that took the job goes back for another. A slot is taken
before each job and given back with its outcome, so ``concurrency`` bounds sync and async
handlers together. No handler can hold up another one's report.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from typing import Any, Protocol

from . import logs, outcome
from .context import StepContext
from .registry import Registered, Registry, default_registry

log = logging.getLogger("tasker")


class Native(Protocol):
    """What the runner needs of ``tasker._native.NativeWorker``."""

    @property
    def concurrency(self) -> int: ...
    @property
    def stopped(self) -> bool: ...

    def take_steps(self, max: int, wait: float) -> str: ...
    def complete(self, outcomes: str) -> None: ...
    def heartbeat(self, job: int) -> bool: ...
    def emit(self, job: int, topic: str, payload: str, text: bool) -> tuple[str, str] | None: ...
    def shutdown(self) -> None: ...
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
        poll: float = 1.0,
    ) -> None:
        self._native = native
        self._registry = registry if registry is not None else default_registry
        self.concurrency = max(1, concurrency or native.concurrency)
        # Seconds a handler thread waits for a job before it looks again (stop() wakes them at
        # once through the core's shutdown).
        self._poll = poll
        self._stop = threading.Event()
        self._slots = threading.Condition()
        self._in_flight = 0
        # Taken before a job, given back with its outcome.
        self._free = threading.Semaphore(self.concurrency)
        self._handlers = [
            threading.Thread(target=self._take_loop, name=f"tasker-handler-{i}", daemon=True)
            for i in range(self.concurrency)
        ]
        self._loop = asyncio.new_event_loop()
        self._loop_thread = threading.Thread(
            target=self._loop.run_forever, name="tasker-asyncio", daemon=True
        )

    @property
    def in_flight(self) -> int:
        """Jobs taken whose outcome is not reported yet."""
        with self._slots:
            return self._in_flight

    def stop(self) -> None:
        """Asks ``run`` to stop taking jobs (the core hands out no more); it then drains and
        returns."""
        self._stop.set()
        self._native.shutdown()

    def run(self, grace_s: float = 10.0) -> bool:
        """Runs handlers until ``stop()`` (or the native worker stopped), then waits up to
        ``grace_s`` for running handlers and reports their outcomes; async handlers still
        running then are cancelled. Returns False if a sync handler is still running (its step
        is redelivered once the native worker stops, and its thread keeps the interpreter from
        exiting)."""
        # The core's log records go to `logging` from now on.
        logs.forward()
        self._loop_thread.start()
        for thread in self._handlers:
            thread.start()
        try:
            # A timeout, so a signal handler calling stop() is never waiting on this thread.
            while not self._stop.wait(self._poll):
                pass
        finally:
            drained = self._drain(grace_s)
        return drained

    def _take_loop(self) -> None:
        native = self._native
        while not self._stop.is_set():
            # A slot first: an async handler keeps its own once this thread has moved on.
            if not self._free.acquire(timeout=self._poll):
                continue
            # Blocks with the GIL released: the other handler threads keep running meanwhile.
            raw = native.take_steps(1, self._poll)
            if raw == "[]":
                self._free.release()
                if native.stopped:
                    self._stop.set()
                    return
                continue
            for job in json.loads(raw):
                with self._slots:
                    self._in_flight += 1
                self._start(job)

    def _start(self, job: dict[str, Any]) -> None:
        entry = self._registry.get(job["handler"])
        if entry is None:
            self._finish(outcome.unknown_handler(job["id"], job["handler"]))
            return
        try:
            ctx = StepContext.from_job(job, self._native)
        except Exception as e:
            self._finish(outcome.failure(job["id"], e, outcome.now()))
            return
        if entry.is_async:
            asyncio.run_coroutine_threadsafe(self._run_async(entry, ctx, job["id"]), self._loop)
        else:
            self._finish(outcome.of_call(job["id"], entry.fn, ctx))

    async def _run_async(self, entry: Registered, ctx: StepContext, job_id: int) -> None:
        try:
            out = await run_async(entry.fn, ctx, job_id)
        except asyncio.CancelledError:
            # Shutdown: report nothing; the step is redelivered once the native worker stops.
            self._release()
            raise
        self._finish(out)

    def _finish(self, encoded: str) -> None:
        try:
            self._native.complete("[" + encoded + "]")
        except Exception:
            # The core times this step out and retries it; the other handlers report theirs.
            log.exception("reporting an outcome failed")
        self._release()

    def _release(self) -> None:
        with self._slots:
            self._in_flight -= 1
            self._slots.notify_all()
        self._free.release()

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
            # Cancelled, they report nothing and give their slots back.
            asyncio.run_coroutine_threadsafe(_cancel_all(), self._loop).result(timeout=5)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._loop_thread.join(timeout=5)
            if not self._loop_thread.is_alive():
                self._loop.close()
        # Threads between jobs end at once (the core hands out nothing more); what is left are
        # sync handlers still running.
        until = max(deadline, time.monotonic()) + 1
        for thread in self._handlers:
            thread.join(timeout=max(0.0, until - time.monotonic()))
        return self.in_flight == 0


async def run_async(fn: Any, ctx: StepContext, job_id: int) -> str:
    """Runs an async handler within its step's timeout and returns its encoded outcome. An
    async handler can be cancelled, so it stops at its timeout instead of running on after the
    core has given up on it. Cancelled from outside (shutdown), it raises ``CancelledError``."""
    started = outcome.now()
    deadline = asyncio.timeout(ctx.timeout)
    try:
        async with deadline:
            result = await fn(ctx)
        return outcome.success(job_id, result, started)
    except TimeoutError as e:
        if deadline.expired():
            return outcome.timed_out(job_id, ctx.timeout, started)
        return outcome.failure(job_id, e, started)
    except asyncio.CancelledError:
        raise
    except BaseException as e:
        return outcome.failure(job_id, e, started)


async def _cancel_all() -> None:
    me = asyncio.current_task()
    tasks = [t for t in asyncio.all_tasks() if t is not me]
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
