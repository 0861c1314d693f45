"""The worker protocol check, the same in every language (tests/slow/conformance.rs runs it through
``conformance-protocol``): the examples of ``tests/conformance/protocol.json`` against the schema
``tasker-worker/protocol.schema.json``; the step context built from each job; the outcome this
package encodes for each case's handler; the start options ``tasker.Worker.start`` sends."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

import tasker
from tasker import outcome
from tasker._worker import start_options

REPO = Path(__file__).resolve().parents[3]
SCHEMA = json.loads((REPO / "tasker-worker/protocol.schema.json").read_text())
EXAMPLES = json.loads((REPO / "tests/conformance/protocol.json").read_text())


def validator(name: str) -> jsonschema.Draft7Validator:
    return jsonschema.Draft7Validator({**SCHEMA, "$ref": f"#/definitions/{name}"})


def matches(got: Any, want: Any) -> bool:
    """``got`` has every field ``want`` gives, equal (objects compared the same way)."""
    if isinstance(got, dict) and isinstance(want, dict):
        return all(k in got and matches(got[k], v) for k, v in want.items())
    return got == want


def handler_for(behaviour: dict[str, Any]):
    def handle(ctx: tasker.StepContext) -> Any:
        raises = behaviour.get("raises")
        if raises is None:
            return behaviour["returns"]
        if raises == "permanent":
            raise tasker.PermanentError(behaviour["message"], kind=behaviour.get("kind"))
        if raises == "retryable":
            raise tasker.RetryableError(
                behaviour["message"], kind=behaviour.get("kind"),
                retry_after=behaviour.get("retry_after"),
            )
        raise ConnectionError(behaviour["message"])

    return handle


@pytest.mark.parametrize("job", EXAMPLES["jobs"], ids=lambda j: j["step_name"])
def test_a_job_follows_the_schema_and_makes_its_step_context(job: dict[str, Any]) -> None:
    validator("job").validate(job)
    if job.get("parent_results_by_reference"):
        with pytest.raises(ValueError, match="by reference"):
            tasker.StepContext.from_job(job)
        return
    ctx = tasker.StepContext.from_job(job)
    assert (ctx.task_id, ctx.step_id, ctx.namespace, ctx.task_name, ctx.step_name, ctx.handler) == (
        job["task_id"], job["step_id"], job["namespace"], job["task_name"], job["step_name"],
        job["handler"],
    )
    assert (ctx.attempt, ctx.max_attempts) == (job["attempt"], job["max_attempts"])
    assert ctx.context == job["context"] and ctx.input == job.get("input")
    assert ctx.parent_results == job["parent_results"]
    assert ctx.timeout == job["timeout_ms"] / 1000, "seconds"
    assert ctx.heartbeat(), "outside a worker a step is always its handler's"


@pytest.mark.parametrize("case", EXAMPLES["cases"], ids=lambda c: c["name"])
def test_each_case_gives_its_outcome(case: dict[str, Any]) -> None:
    job = EXAMPLES["jobs"][0]
    ctx = tasker.StepContext.from_job(job)
    encoded = json.loads(outcome.of_call(job["id"], handler_for(case["handler"]), ctx))
    validator("outcome").validate(encoded)
    assert encoded["id"] == job["id"]
    assert matches(encoded, case["outcome"]), encoded


def test_the_schema_tells_outcomes_from_what_are_not() -> None:
    check = validator("outcome")
    for good in EXAMPLES["outcomes"]:
        check.validate(good)
    for bad in EXAMPLES["invalid_outcomes"]:
        assert not check.is_valid(bad["outcome"]), bad["why"]


def test_worker_start_sends_start_options_the_schema_takes() -> None:
    check = validator("start_options")
    for example in EXAMPLES["start_options"]:
        sent = json.loads(start_options(**example))
        check.validate(sent)
        assert sent == {k: v for k, v in example.items() if v is not None}
    for bad in EXAMPLES["invalid_start_options"]:
        assert not check.is_valid(bad["options"]), bad["why"]


def test_worker_start_tells_the_core_the_handlers_it_registered(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The core consumes only the namespaces of the steps whose handlers the worker has: the
    registry's names go in ``start_options`` (sorted), and none are sent unless given."""
    sent: list[dict[str, Any]] = []

    class FakeNative:
        @staticmethod
        def start(options: str) -> FakeNative:
            sent.append(json.loads(options))
            return FakeNative()

    import tasker._worker

    monkeypatch.setattr(tasker._worker, "NativeWorker", FakeNative)
    monkeypatch.setattr(tasker._worker, "Runner", lambda native, registry: None)
    reg = tasker.Registry()
    reg.register("score", lambda ctx: None)
    reg.register("double", lambda ctx: None)
    tasker.Worker.start("templates/", registry=reg, concurrency=2)
    tasker.Worker.start("templates/", registry=tasker.Registry())
    assert sent == [
        {"templates": "templates/", "concurrency": 2, "handlers": ["double", "score"]},
        {"templates": "templates/", "handlers": []},
    ]
    assert "handlers" not in json.loads(start_options("templates/"))
