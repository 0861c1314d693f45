"""The runner over the real binding and RabbitMQ: step messages in, results out."""

import asyncio
import threading

import pytest

import tasker


class Rejected(tasker.PermanentError):
    pass


def outcome_of(result: dict) -> dict:
    return result["outcome"]


def test_sync_async_failing_and_unknown_handlers_each_report(broker, start_worker) -> None:
    reg = tasker.Registry()

    @reg.handler("double")
    def double(ctx):
        return {"value": ctx.context["value"] * 2, "attempt": ctx.attempt,
                "step": ctx.step_name, "parents": dict(ctx.parent_results)}

    @reg.handler("later")
    async def later(ctx):
        await asyncio.sleep(0.01)
        return {"async": True}

    @reg.handler("reject")
    def reject(ctx):
        raise Rejected("input rejected for good")

    @reg.handler("boom")
    def boom(ctx):
        raise ValueError("transient trouble")

    ids = {
        "double": broker.publish_step("double", {"value": 21}, attempt=2, parents={"p": {"value": 1}}),
        "later": broker.publish_step("later"),
        "reject": broker.publish_step("reject"),
        "boom": broker.publish_step("boom"),
        "nobody": broker.publish_step("nobody"),
    }
    running = start_worker(reg)
    results = broker.results(len(ids))

    ok = outcome_of(results[ids["double"]])
    assert ok == {"status": "success", "result": {
        "value": 42, "attempt": 2, "step": "step_double", "parents": {"p": {"value": 1}}}}
    assert results[ids["double"]]["attempt"] == 2
    assert outcome_of(results[ids["later"]]) == {"status": "success", "result": {"async": True}}

    rejected = outcome_of(results[ids["reject"]])
    assert rejected["retryable"] is False
    assert rejected["error"]["kind"] == "Rejected"
    assert rejected["error"]["message"] == "input rejected for good"

    retryable = outcome_of(results[ids["boom"]])
    assert retryable["retryable"] is True and retryable["error"]["kind"] == "ValueError"
    assert "in boom" in retryable["error"]["backtrace"]

    unknown = outcome_of(results[ids["nobody"]])
    assert unknown["retryable"] is False and unknown["error"]["kind"] == "unknown_handler"
    assert running.stop() is True


def test_a_slow_handler_does_not_hold_up_the_others(broker, start_worker) -> None:
    reg = tasker.Registry()
    release = threading.Event()

    @reg.handler("stuck")
    def stuck(ctx):
        assert release.wait(timeout=30), "never released"
        return {"stuck": False}

    @reg.handler("quick")
    def quick(ctx):
        return {"quick": True}

    slow_id = broker.publish_step("stuck")
    quick_ids = [broker.publish_step("quick") for _ in range(5)]
    running = start_worker(reg, concurrency=2)
    # Five quick results arrive while the slow handler still holds its thread.
    results = broker.results(5)
    assert set(results) == set(quick_ids) and not release.is_set()
    release.set()
    results = broker.results(6)
    assert outcome_of(results[slow_id])["result"] == {"stuck": False}
    assert running.stop() is True


def test_an_async_handler_is_cancelled_at_its_timeout(broker, start_worker) -> None:
    reg = tasker.Registry()
    cancelled = threading.Event()

    @reg.handler("forever")
    async def forever(ctx):
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    step = broker.publish_step("forever", timeout_ms=200)
    running = start_worker(reg)
    result = outcome_of(broker.results(1)[step])
    assert result["retryable"] is True and result["error"]["kind"] == "timeout"
    assert cancelled.wait(timeout=5)
    assert running.stop() is True


def test_stop_cancels_running_async_handlers_and_reports_nothing_for_them(
    broker, start_worker
) -> None:
    reg = tasker.Registry()
    started = threading.Event()

    @reg.handler("long")
    async def long(ctx):
        started.set()
        await asyncio.sleep(60)

    broker.publish_step("long", timeout_ms=120_000)
    running = start_worker(reg, grace_s=0.2)
    assert started.wait(timeout=20)
    # Cancelled, not abandoned: the runner reports itself drained, and the step (never acked)
    # goes back to its queue for another worker.
    assert running.stop() is True
    assert running.runner.in_flight == 0


@pytest.mark.parametrize("concurrency", [1, 3])
def test_concurrency_bounds_the_handlers_running_at_once(broker, start_worker, concurrency) -> None:
    reg = tasker.Registry()
    lock = threading.Lock()
    now = {"running": 0, "peak": 0}
    # Each handler waits for `concurrency` of them to run together: proves that many run at
    # once, and with the peak, that no more do.
    together = threading.Barrier(concurrency, timeout=10)

    @reg.handler("count")
    def count(ctx):
        with lock:
            now["running"] += 1
            now["peak"] = max(now["peak"], now["running"])
        together.wait()
        with lock:
            now["running"] -= 1
        return {}

    for _ in range(2 * concurrency):
        broker.publish_step("count")
    running = start_worker(reg, concurrency=concurrency)
    results = broker.results(2 * concurrency)
    assert all(r["outcome"]["status"] == "success" for r in results.values())
    assert now["peak"] == concurrency
    assert running.stop() is True


def test_the_core_logs_through_python_logging(broker, start_worker) -> None:
    """The core's records reach the logger named for their Rust module, at their level."""
    import logging

    seen = threading.Event()
    records: list[logging.LogRecord] = []

    class Catch(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if "worker consuming" in record.getMessage():
                records.append(record)
                seen.set()

    logger = logging.getLogger("tasker_worker")
    catch = Catch()
    logger.addHandler(catch)
    old_level = logger.level
    logger.setLevel(logging.INFO)
    try:
        start_worker(tasker.Registry())
        assert seen.wait(20), "no 'worker consuming' record reached logging within 20 s"
    finally:
        logger.removeHandler(catch)
        logger.setLevel(old_level)
    assert records[0].name == "tasker_worker.worker"
    assert records[0].levelno == logging.INFO
    assert broker.prefix in records[0].getMessage() or "namespaces=" in records[0].getMessage()


def test_a_worker_started_from_your_own_code_runs_until_stopped(broker) -> None:
    """The three calls every language offers: ``Worker.start``, ``run``, ``stop``; and a
    handler's ``heartbeat()`` while its step is the worker's."""
    from conftest import TEMPLATES

    reg = tasker.Registry()

    @reg.handler("double")
    def double(ctx):
        return {"value": ctx.context["value"] * 2, "heartbeat": ctx.heartbeat(),
                "timeout": ctx.timeout}

    step = broker.publish_step("double", {"value": 4}, timeout_ms=2_500)
    worker = tasker.Worker.start(TEMPLATES, registry=reg, health_port=0, concurrency=2)
    assert worker.namespaces == ["python_examples"] and worker.concurrency == 2
    drained: list[bool] = []
    runner = threading.Thread(target=lambda: drained.append(worker.run()))
    runner.start()
    result = broker.results(1)[step]
    worker.stop()
    runner.join(timeout=30)
    assert not runner.is_alive() and drained == [True]
    assert outcome_of(result) == {
        "status": "success", "result": {"value": 8, "heartbeat": True, "timeout": 2.5}}
    with pytest.raises(tasker.WorkerError, match="run\\(\\) is called once"):
        worker.run()


def test_a_worker_stopped_before_it_runs_returns_from_run_at_once(broker) -> None:
    """A signal between ``start`` and ``run`` (the CLI's ready line, then SIGINT) stops the
    worker; ``run`` then has nothing to drain and returns True instead of failing."""
    from conftest import TEMPLATES

    worker = tasker.Worker.start(TEMPLATES, registry=tasker.Registry(), health_port=0)
    worker.stop()
    assert worker.run() is True
    worker.stop()  # still idempotent


def test_bad_start_arguments_are_refused_before_anything_starts(broker) -> None:
    from conftest import TEMPLATES

    with pytest.raises(ValueError, match="shutdown_timeout must be a number of seconds"):
        tasker.Worker.start(TEMPLATES, shutdown_timeout=-1)
    with pytest.raises(ValueError, match="concurrency must be at least 1"):
        tasker.Worker.start(TEMPLATES, concurrency=0)
