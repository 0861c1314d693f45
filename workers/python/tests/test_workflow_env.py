"""tasker.testing.WorkflowEnv (docs/testing.md): the test kit's scenarios
(tests/fixtures/test_kit) on the real engine in test mode with Python handlers in this process —
a week's sleep, a signal wait that times out after three days and one that gets its signal, two
retries an hour and two hours apart, a daily schedule — each in under a second of wall time.
tests/fast/test_kit.rs runs the same scenarios against a normal orchestrator: same outcomes."""

from __future__ import annotations

import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import tasker
from tasker.testing import WorkflowEnv

TEMPLATES = Path(__file__).resolve().parents[3] / "tests" / "fixtures" / "test_kit" / "templates"
NS = "test_kit"


def kit() -> tasker.Registry:
    """The handlers of tests/fixtures/test_kit/README.md."""
    registry = tasker.Registry()

    def stamp(ctx: tasker.StepContext) -> dict[str, Any]:
        return {"step": ctx.step_name}

    def flaky(ctx: tasker.StepContext) -> dict[str, Any]:
        if ctx.attempt < 3:
            raise tasker.RetryableError(f"attempt {ctx.attempt} fails", kind="flaky")
        return {"attempts": ctx.attempt}

    def echo(ctx: tasker.StepContext) -> dict[str, Any]:
        return dict(ctx.parent_results)

    registry.register("kit_stamp", stamp)
    registry.register("kit_flaky", flaky)
    registry.register("kit_echo", echo)
    return registry


@pytest.fixture(scope="module")
def env() -> Any:
    with WorkflowEnv(TEMPLATES, registry=kit()) as env:
        yield env


def steps(env: WorkflowEnv, task_id: Any) -> dict[str, Any]:
    return {s.name: s for s in env.client.steps(task_id)}


def run(env: WorkflowEnv, name: str, signal: Any = None) -> tuple[Any, float]:
    started = time.monotonic()
    task = env.client.create_task(NS, name)
    if signal is not None:
        env.client.signal(task.id, "approved", payload=signal)
    done = env.wait(task.id)
    return done, time.monotonic() - started


def test_a_week_of_sleep_passes_in_under_a_second(env: WorkflowEnv) -> None:
    done, wall = run(env, "week")
    assert done.state == "complete"
    assert wall < 1.0, wall
    s = steps(env, done.id)
    assert s["after"].result == {"step": "after"}
    assert s["after"].processed_at - s["before"].processed_at >= timedelta(days=7)


def test_a_signal_wait_times_out_after_three_days_or_gets_its_signal(env: WorkflowEnv) -> None:
    timed_out, wall = run(env, "approval")
    assert timed_out.state == "complete" and wall < 1.0, wall
    assert steps(env, timed_out.id)["decide"].result == {"ask": {"timed_out": True}}
    approved, wall = run(env, "approval", signal={"by": "ana"})
    assert approved.state == "complete" and wall < 1.0, wall
    assert steps(env, approved.id)["decide"].result["ask"] == {"by": "ana"}


def test_two_retries_with_hourly_exponential_backoff(env: WorkflowEnv) -> None:
    done, wall = run(env, "flaky")
    assert done.state == "complete" and wall < 1.0, wall
    step = steps(env, done.id)["flaky"]
    assert step.attempt == 3 and step.result == {"attempts": 3}
    assert step.processed_at - done.created_at >= timedelta(hours=3)


def test_a_daily_schedule_fires_at_each_skip(env: WorkflowEnv) -> None:
    started = time.monotonic()
    env.client.apply_schedule(
        {"namespace": NS, "name": "daily", "template": "report", "cron": "0 6 * * *"}
    )
    for day in (1, 2):
        skipped = env.skip()
        assert skipped.skipped, skipped
        assert skipped.clock.now.strftime("%H:%M") == "06:00"
        reports = env.client.list_tasks(namespace=NS, name="report").tasks
        assert len(reports) == day
        assert env.wait(reports[0].id).state == "complete"
    assert time.monotonic() - started < 1.0


def test_advance_moves_the_clock_by_as_much(env: WorkflowEnv) -> None:
    before = env.now()
    clock = env.advance("3d")
    assert clock.test_clock and clock.now - before >= timedelta(days=3)
