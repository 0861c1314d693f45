"""tasker.testing: handler tests with no server, judged by the worker core as the engine would."""

import asyncio
import math

import pytest
import tasker
from conftest import WORKER_DIR
from tasker.testing import run_handler

TEMPLATES = WORKER_DIR.parent.parent / "tests/fixtures/task_templates/python"


def test_a_decision_from_its_template_names_its_branch(fixture_handlers) -> None:
    small = run_handler("route_by_size", template=TEMPLATES / "conditional.yaml", step="route",
                        parent_results={"check": {"value": 7}})
    assert small.success and small.branches == ["small"], small
    assert small.result == {"branches": ["small"], "value": 7}
    large = run_handler("route_by_size", template=TEMPLATES / "conditional.yaml", step="route",
                        parent_results={"check": {"value": 70}})
    assert large.branches == ["large"]


def test_a_branch_the_template_lacks_fails_for_good() -> None:
    out = run_handler(lambda ctx: {"branches": ["medium"]}, step_type="decision", branches=["small", "large"])
    assert (out.status, out.kind, out.retryable, out.retried) == ("failure", "invalid_decision", False, False)
    batches = run_handler(lambda ctx: {"rows": 3}, step_type="batchable")
    assert batches.kind == "invalid_batches"


def test_retries_follow_the_templates_policy(fixture_handlers) -> None:
    template = TEMPLATES / "retry_then_succeed.yaml"
    first = run_handler("flaky", template=template, step="flaky", context={"succeed_on_attempt": 3})
    assert (first.status, first.kind, first.retryable, first.retried) == ("failure", "transient", True, True)
    assert first.retry_in == pytest.approx(0.02)
    assert "attempt 1 fails" in first.message and "Traceback" in first.backtrace
    third = run_handler("flaky", template=template, step="flaky", attempt=3, context={"succeed_on_attempt": 4})
    assert (third.retryable, third.retried, third.retry_in) == (True, False, None)
    ok = run_handler("flaky", template=template, step="flaky", attempt=3, context={"succeed_on_attempt": 3})
    assert ok.success and ok.result == {"attempts": 3}


def test_results_the_engine_cannot_store_fail_the_step() -> None:
    nan = run_handler(lambda ctx: {"x": math.nan})
    assert (nan.kind, nan.retryable) == ("invalid_result", False)
    nul = run_handler(lambda ctx: {"x": "a\u0000b"})
    assert (nul.kind, nul.retryable) == ("invalid_result", False)
    permanent = run_handler(lambda ctx: (_ for _ in ()).throw(tasker.PermanentError("no", kind="validation")))
    assert (permanent.kind, permanent.retried) == ("validation", False)


def test_async_handlers_streams_and_batches() -> None:
    async def fold(ctx: tasker.StepContext):
        await asyncio.sleep(0)
        ctx.emit("progress", {"rows": len(ctx.input["rows"])})
        return {"sum": sum(ctx.input["rows"]), "attempt": ctx.attempt, "of": ctx.max_attempts}

    out = run_handler(fold, input={"rows": [1, 2, 3]}, attempt=2, max_attempts=5)
    assert out.result == {"sum": 6, "attempt": 2, "of": 5}
    assert out.emitted == [("progress", {"rows": 3})]

    async def stuck(ctx):
        await asyncio.sleep(30)

    timed_out = run_handler(stuck, timeout=0.05)
    assert (timed_out.kind, timed_out.retryable) == ("timeout", True)


def test_a_handler_class_an_unknown_name_and_a_bad_step() -> None:
    registry = tasker.Registry()

    class Greet(tasker.Handler, registry=registry):
        name = "greet"

        def call(self, ctx):
            return {"hello": ctx.context["who"]}

    assert run_handler(Greet, context={"who": "ana"}).result == {"hello": "ana"}
    assert run_handler("greet", registry=registry, context={"who": "bo"}).result == {"hello": "bo"}
    unknown = run_handler("nobody", registry=registry)
    assert (unknown.kind, unknown.retryable) == ("unknown_handler", False)
    with pytest.raises(ValueError, match="attempt 4 is not between 1 and max_attempts"):
        run_handler(Greet, attempt=4, max_attempts=3)
    with pytest.raises(ValueError, match="no step \"nope\""):
        run_handler("route_by_size", template=TEMPLATES / "conditional.yaml", step="nope")
