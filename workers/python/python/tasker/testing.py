"""Handler tests without servers, workflow tests with a skipping clock (:class:`WorkflowEnv`,
from :mod:`tasker.workflow_env`) and replays of failed steps (docs/testing.md).

    from tasker.testing import run_handler

    def test_route_picks_small():
        out = run_handler("route_by_size", template="templates/conditional.yaml", step="route",
                          parent_results={"check": 7})
        assert out.success and out.branches == ["small"]

``run_handler`` builds the step context a worker would hand the handler — a context, parent
results, the attempt and (for a batch worker) its batch, or all of a template's step — runs the
handler as the worker runs it (an ``async`` one on an event loop, within the step's timeout)
and returns its :class:`Outcome` as the engine reads it: the worker core judges it (a result
that is not JSON or too large, a decision naming a branch it does not have, a batchable step
without its batches all fail as they would in production) and says whether the engine would
retry it. No PostgreSQL, broker or orchestrator is involved.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from . import _native, outcome
from .context import StepContext
from .registry import Handler, HandlerFn, Registry, default_registry
from .runner import run_async
from .workflow_env import WorkflowEnv

__all__ = [
    "Outcome", "Replayed", "WorkflowEnv", "replay", "replay_inputs", "run_handler",
]


@dataclass(frozen=True)
class Outcome:
    """An attempt's outcome as the engine reads it.

    ``status`` is ``"success"`` or ``"failure"``. A success has its ``result`` (and a
    decision's chosen ``branches``, a batchable step's ``batches``). A failure has the error's
    ``kind``, ``message`` and ``backtrace``; ``retryable`` as the handler raised it, ``retried``
    when the engine would run another attempt (after ``retry_in`` seconds). ``emitted`` holds
    what the handler streamed, as ``(topic, data or text)``.
    """

    status: str
    result: Any = None
    branches: list[str] | None = None
    batches: list[Any] | None = None
    retryable: bool = False
    retried: bool = False
    kind: str | None = None
    message: str | None = None
    backtrace: str | None = None
    retry_in: float | None = None
    emitted: list[tuple[str, Any]] = field(default_factory=list)

    @property
    def success(self) -> bool:
        return self.status == "success"

    @classmethod
    def _of(cls, judged: Mapping[str, Any], emitted: list[tuple[str, Any]]) -> Outcome:
        error = judged.get("error") or {}
        return cls(
            status=judged["status"],
            result=judged.get("result"),
            branches=judged.get("branches"),
            batches=judged.get("batches"),
            retryable=judged.get("retryable", False),
            retried=judged.get("retried", False),
            kind=error.get("kind"),
            message=error.get("message"),
            backtrace=error.get("backtrace"),
            retry_in=judged.get("retry_in"),
            emitted=emitted,
        )


class _Clock:
    """Answers the context's ``heartbeat()`` as a worker would: True within the step's timeout."""

    emit = None  # what the handler streams is kept in ``ctx.emitted``

    def __init__(self, timeout: float) -> None:
        self._until = time.monotonic() + timeout

    def heartbeat(self, _job: int) -> bool:
        return time.monotonic() < self._until


def run_handler(
    handler: str | HandlerFn | type[Handler] | Handler,
    *,
    context: Any = None,
    parent_results: Mapping[str, Any] | None = None,
    input: Any = None,
    attempt: int = 1,
    max_attempts: int | None = None,
    template: str | os.PathLike[str] | None = None,
    step: str | None = None,
    step_type: str | None = None,
    branches: list[str] | None = None,
    timeout: float | None = None,
    registry: Registry | None = None,
    **ids: str,
) -> Outcome:
    """Runs ``handler`` — a registered name, a function, or a ``Handler`` class or instance —
    on one attempt of a step and returns its :class:`Outcome`. With ``template`` and ``step``,
    the step's handler, type, branches, retry policy and timeout are the template's. ``ids``
    may give ``task_id`` and ``step_id``. A step the core cannot make raises ``ValueError``."""
    fn, name = _resolve(handler, registry)
    if name is None and template is None:
        name = getattr(fn, "__name__", None) or "handler"
    spec: dict[str, Any] = {"attempt": attempt}
    for key, value in (
        ("handler", name),
        ("context", context),
        ("parent_results", dict(parent_results) if parent_results is not None else None),
        ("input", input),
        ("max_attempts", max_attempts),
        ("template", os.fspath(template) if template is not None else None),
        ("step", step),
        ("step_type", step_type),
        ("branches", branches),
        ("timeout", timeout),
        ("task_id", ids.pop("task_id", None)),
        ("step_id", ids.pop("step_id", None)),
    ):
        if value is not None:
            spec[key] = value
    if ids:
        raise TypeError(f"run_handler() got unexpected arguments {sorted(ids)}")
    return _run_spec(spec, fn, registry)


def _run_spec(spec: Mapping[str, Any], fn: HandlerFn | None, registry: Registry | None) -> Outcome:
    text = json.dumps(spec)
    job = json.loads(_native.test_job(text))
    if fn is None:
        fn = _lookup(job["handler"], registry)
    emitted: list[tuple[str, Any]]
    if fn is None:
        emitted, encoded = [], outcome.unknown_handler(job["id"], job["handler"])
    else:
        emitted, encoded = _call(fn, job)
    return Outcome._of(json.loads(_native.test_judge(text, encoded)), emitted)


@dataclass(frozen=True)
class Replayed:
    """A recorded attempt run again by the local handler: its ``outcome`` now, the ``inputs``
    as the API gave them, and ``recorded``, the error the step's latest attempt failed with
    (None if that attempt did not fail or another attempt was replayed)."""

    outcome: Outcome
    inputs: Mapping[str, Any]
    recorded: Mapping[str, Any] | None

    @property
    def reproduced(self) -> bool | None:
        """Whether the handler failed again with the recorded error's kind (None: nothing
        recorded to compare with)."""
        if self.recorded is None:
            return None
        return not self.outcome.success and self.outcome.kind == self.recorded.get("kind")


def replay(
    task_id: str,
    step: str,
    *,
    attempt: int | None = None,
    client: Any = None,
    registry: Registry | None = None,
) -> Replayed:
    """Fetches one attempt of a step as its handler received it (the latest unless ``attempt``;
    ``client`` is a :class:`tasker.Client`, else one made from ``TASKER_URL``/``TASKER_TOKEN``)
    and runs the local handler of its name on exactly those inputs. Put a breakpoint in the
    handler to step through the failure."""
    if client is None:
        from .client import Client

        client = Client()
    return replay_inputs(client.step_inputs(task_id, step, attempt=attempt), registry=registry)


def replay_inputs(inputs: Mapping[str, Any], *, registry: Registry | None = None) -> Replayed:
    """Runs the local handler on inputs fetched before (``Client.step_inputs``, or the file
    ``tasker replay --save`` writes)."""
    out = _run_spec({"inputs": dict(inputs)}, None, registry)
    latest = inputs.get("attempt") == inputs.get("latest_attempt")
    return Replayed(out, inputs, inputs.get("error") if latest else None)


def _resolve(handler: Any, registry: Registry | None) -> tuple[HandlerFn | None, str | None]:
    """The function to run and the handler name to give the core (None: the template's)."""
    if isinstance(handler, str):
        return _lookup(handler, registry), handler
    if isinstance(handler, type) and issubclass(handler, Handler):
        return handler().call, handler.name or handler.__name__
    if isinstance(handler, Handler):
        return handler.call, type(handler).name or type(handler).__name__
    if callable(handler):
        return handler, None
    raise TypeError(f"run_handler() needs a handler name, function or Handler, not {handler!r}")


def _lookup(name: str, registry: Registry | None) -> HandlerFn | None:
    entry = (registry if registry is not None else default_registry).get(name)
    return entry.fn if entry is not None else None


def _call(fn: HandlerFn, job: Mapping[str, Any]) -> tuple[list[tuple[str, Any]], str]:
    """Runs ``fn`` on the job's context as the worker's runner would; what it streamed and its
    encoded outcome."""
    clock = _Clock(job["timeout_ms"] / 1000)
    ctx = StepContext.from_job(job, clock)
    if asyncio.iscoroutinefunction(fn):
        encoded = asyncio.run(run_async(fn, ctx, job["id"]))
    else:
        started = outcome.now()
        encoded = outcome.of_call(job["id"], fn, ctx)
        if not clock.heartbeat(job["id"]):
            # Under a worker a sync handler runs on past its timeout, its result ignored.
            encoded = outcome.timed_out(job["id"], ctx.timeout, started)
    return ctx.emitted, encoded


def main(argv: list[str] | None = None) -> int:
    """``python -m tasker.testing [--handlers FILE_OR_MODULE]... [INPUTS]``: runs the handler
    of a step's recorded attempt on its inputs (INPUTS, else the file ``TASKER_REPLAY`` names:
    ``tasker replay TASK STEP -- python -m tasker.testing --handlers handlers.py``) and prints
    its outcome next to the recorded one. Exits 0 when they agree (or nothing was recorded), 1
    when they differ."""
    import argparse

    from .worker import load_handlers

    parser = argparse.ArgumentParser(prog="python -m tasker.testing", description=main.__doc__)
    parser.add_argument("--handlers", action="append", default=[], help="a handler file or module")
    parser.add_argument("inputs", nargs="?", default=os.environ.get("TASKER_REPLAY"))
    args = parser.parse_args(argv)
    if not args.inputs:
        parser.error("name the inputs file (tasker replay TASK STEP --save FILE) or set TASKER_REPLAY")
    for spec in args.handlers:
        load_handlers(spec)
    with open(args.inputs, encoding="utf-8") as f:
        replayed = replay_inputs(json.load(f))
    out = replayed.outcome
    step = f"{replayed.inputs['step_name']} (attempt {replayed.inputs['attempt']})"
    if out.success:
        print(f"{step}: succeeded with {json.dumps(out.result)}")
    else:
        print(f"{step}: failed with {out.kind}: {out.message}")
        if out.backtrace:
            print(out.backtrace)
    if replayed.recorded is not None:
        kind = replayed.recorded.get("kind")
        verdict = "reproduced" if replayed.reproduced else "differs"
        print(f"recorded: {kind}: {replayed.recorded.get('message')} — {verdict}")
        return 0 if replayed.reproduced else 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
