"""What the API answers with: tasks, steps, history transitions and pages of them.

Field names are the JSON's (``Transition.from_`` for ``from``, a Python keyword). Ids are
strings, timestamps timezone-aware ``datetime`` values (UTC), and results, errors and contexts
the decoded JSON (``dict``, ``list``, ``str``, ``int``, ``float``, ``bool`` or ``None``).
Fields the server adds later are ignored.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

#: A decoded JSON value.
JSON = Any

#: The states a task is in: ``running`` until it is terminal, then one of the others.
TASK_STATES = ("running", "complete", "error", "cancelled")


def _time(value: Any) -> datetime:
    if not isinstance(value, str):
        raise ValueError(f"expected a timestamp, not {value!r}")
    return datetime.fromisoformat(value)


def _optional_time(value: Any) -> datetime | None:
    return None if value is None else _time(value)


def _optional_str(value: Any) -> str | None:
    return None if value is None else str(value)


@dataclass(frozen=True)
class Task:
    """A task: its template (``namespace``, ``name``, ``version``), input ``context`` and
    ``state`` (one of :data:`TASK_STATES`). Once ``complete``, ``result`` maps the name of each
    step no other step depends on to its result (``None`` in a listed task); ``error`` is the
    failure of a task in ``error``."""

    id: str
    namespace: str
    name: str
    version: str
    state: str
    context: JSON
    idempotency_key: str | None
    #: Steps not finished yet.
    open_steps: int
    result: JSON
    error: JSON
    created_at: datetime
    completed_at: datetime | None
    #: Milliseconds from creation to completion.
    duration_ms: float | None

    @property
    def is_terminal(self) -> bool:
        """Whether the task is finished (``complete``, ``error`` or ``cancelled``)."""
        return self.state != "running"

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Task:
        """A task from its JSON object."""
        duration = data.get("duration_ms")
        return cls(
            id=str(data["id"]),
            namespace=data["namespace"],
            name=data["name"],
            version=data["version"],
            state=data["state"],
            context=data.get("context"),
            idempotency_key=_optional_str(data.get("idempotency_key")),
            open_steps=int(data["open_steps"]),
            result=data.get("result"),
            error=data.get("error"),
            created_at=_time(data["created_at"]),
            completed_at=_optional_time(data.get("completed_at")),
            duration_ms=None if duration is None else float(duration),
        )


@dataclass(frozen=True)
class Step:
    """A step of a task with its result or error, attempts and per-hop times: ``dispatched_at``
    (published to its queue), ``started_at``/``finished_at`` (its handler, as the worker saw
    it), ``processed_at`` (its result applied); ``next_attempt_at`` when a retry is due."""

    id: str
    name: str
    handler: str
    #: ``standard``, ``decision``, ``convergence``, ``batchable`` or ``batch_worker``.
    step_type: str
    state: str
    attempt: int
    max_attempts: int
    result: JSON
    error: JSON
    #: The worker that ran the last attempt.
    worker: str | None
    created_at: datetime
    dispatched_at: datetime | None
    started_at: datetime | None
    finished_at: datetime | None
    processed_at: datetime | None
    next_attempt_at: datetime | None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Step:
        """A step from its JSON object."""
        return cls(
            id=str(data["id"]),
            name=data["name"],
            handler=data["handler"],
            step_type=data["step_type"],
            state=data["state"],
            attempt=int(data["attempt"]),
            max_attempts=int(data["max_attempts"]),
            result=data.get("result"),
            error=data.get("error"),
            worker=_optional_str(data.get("worker")),
            created_at=_time(data["created_at"]),
            dispatched_at=_optional_time(data.get("dispatched_at")),
            started_at=_optional_time(data.get("started_at")),
            finished_at=_optional_time(data.get("finished_at")),
            processed_at=_optional_time(data.get("processed_at")),
            next_attempt_at=_optional_time(data.get("next_attempt_at")),
        )


@dataclass(frozen=True)
class Transition:
    """One entry of a task's history: a transition of the task (``step`` is ``None``) or of one
    of its steps, from state ``from_`` (``None`` for the first) to ``to``."""

    step: str | None
    from_: str | None
    to: str
    attempt: int | None
    reason: str | None
    #: Who asked for a transition made by hand (a repair); ``None`` for the engine's own.
    by: str | None
    at: datetime

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Transition:
        """A transition from its JSON object."""
        attempt = data.get("attempt")
        return cls(
            step=_optional_str(data.get("step")),
            from_=_optional_str(data.get("from")),
            to=data["to"],
            attempt=None if attempt is None else int(attempt),
            reason=_optional_str(data.get("reason")),
            by=_optional_str(data.get("by")),
            at=_time(data["at"]),
        )


@dataclass(frozen=True)
class TaskPage:
    """One page of tasks, newest first; ``next_before`` is the ``before`` of the next page
    (``None`` after the last)."""

    tasks: list[Task]
    next_before: str | None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TaskPage:
        """A page from its JSON object."""
        return cls(
            tasks=[Task.from_json(t) for t in data["tasks"]],
            next_before=_optional_str(data.get("next_before")),
        )


@dataclass(frozen=True)
class StepPage:
    """One page of a task's steps in id order; ``next`` is the ``after`` of the next page
    (``None`` after the last)."""

    steps: list[Step]
    next: str | None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> StepPage:
        """A page from its JSON object."""
        return cls(
            steps=[Step.from_json(s) for s in data["steps"]],
            next=_optional_str(data.get("next")),
        )
