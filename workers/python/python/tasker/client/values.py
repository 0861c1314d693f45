"""What the API answers with: tasks, steps, history transitions and pages of them, signals,
schedules, workers, concurrency and rate limits, a bulk create's results, a purge's and the
retention policy.

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

#: The states a task is in: ``scheduled`` until its delayed start (``run_at``), ``running``
#: until it is terminal, then one of the others.
TASK_STATES = ("scheduled", "running", "complete", "error", "cancelled")

#: A task's priorities (``Task.priority``, ``create_task(priority=...)``).
PRIORITIES = ("high", "normal", "low")

#: The finished states a purge removes tasks of (``purge(states=...)``; all three by default).
PURGE_STATES = ("complete", "error", "cancelled")


def _time(value: Any) -> datetime:
    if not isinstance(value, str):
        raise ValueError(f"expected a timestamp, not {value!r}")
    return datetime.fromisoformat(value)


def _optional_time(value: Any) -> datetime | None:
    return None if value is None else _time(value)


def _optional_str(value: Any) -> str | None:
    return None if value is None else str(value)


def _optional_times(value: Any) -> list[datetime] | None:
    return None if value is None else [_time(t) for t in value]


@dataclass(frozen=True)
class Task:
    """A task: its template (``namespace``, ``name``, ``version``), input ``context`` and
    ``state`` (one of :data:`TASK_STATES`). Once ``complete``, ``result`` maps the name of each
    step no other step depends on to its result (``None`` in a listed task); ``error`` is the
    failure of a task in ``error``. ``run_at`` is when a task created with a delayed start
    starts (``scheduled`` until then; ``None`` for one that started at once).

    A child task (started by a child-workflow step of another task) has ``parent_task_id`` and
    ``parent_step_id``; ``depth`` is 0 for a task nobody started and its parent's plus one for a
    child. ``children`` lists the child tasks its child steps started (:class:`TaskChild`; only
    from ``get_task``, ``None`` in a listed task).

    ``priority`` is one of :data:`PRIORITIES`: the one it was created with, else its template's,
    else ``normal`` (also from a server before priorities)."""

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
    run_at: datetime | None
    parent_task_id: str | None = None
    parent_step_id: str | None = None
    depth: int = 0
    children: list[TaskChild] | None = None
    priority: str = "normal"

    @property
    def is_terminal(self) -> bool:
        """Whether the task is finished (``complete``, ``error`` or ``cancelled``)."""
        return self.state not in ("scheduled", "running")

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Task:
        """A task from its JSON object."""
        duration = data.get("duration_ms")
        children = data.get("children")
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
            run_at=_optional_time(data.get("run_at")),
            parent_task_id=_optional_str(data.get("parent_task_id")),
            parent_step_id=_optional_str(data.get("parent_step_id")),
            depth=int(data.get("depth") or 0),
            children=None if children is None else [TaskChild.from_json(c) for c in children],
            priority=data.get("priority") or "normal",
        )


@dataclass(frozen=True)
class TaskChild:
    """A child task of a task (:attr:`Task.children`): the task ``task_id`` that its child step
    ``step_name`` (``step_id``) started at its ``attempt``, of the template ``namespace``/
    ``name``/``version``, and that task's ``state`` (one of :data:`TASK_STATES`)."""

    task_id: str
    step_id: str
    step_name: str
    attempt: int
    state: str
    namespace: str
    name: str
    version: str

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TaskChild:
        """A child link from its JSON object."""
        return cls(
            task_id=str(data["task_id"]),
            step_id=str(data["step_id"]),
            step_name=data["step_name"],
            attempt=int(data["attempt"]),
            state=data["state"],
            namespace=data["namespace"],
            name=data["name"],
            version=data["version"],
        )


@dataclass(frozen=True)
class StepChild:
    """What a child-workflow step starts: a task of the template ``namespace``/``name``/
    ``version`` (pinned when the parent task was created). ``task_id`` is that task's once it
    exists (``None`` before); ``on_parent_cancel`` (``cancel`` or ``abandon``) what cancelling
    or failing the parent does to it while it runs."""

    namespace: str
    name: str
    version: str
    task_id: str | None
    on_parent_cancel: str

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> StepChild:
        """A child step's child from its JSON object."""
        return cls(
            namespace=data["namespace"],
            name=data["name"],
            version=data["version"],
            task_id=_optional_str(data.get("task_id")),
            on_parent_cancel=data.get("on_parent_cancel") or "cancel",
        )


@dataclass(frozen=True)
class StepWait:
    """What a wait step waits for: ``kind`` ``sleep`` (a duration), ``until`` (a time from the
    task's context) or ``signal`` (the signal named ``signal``). ``until`` is when it wakes up,
    or times out waiting for its signal; ``on_timeout`` (``fail``, ``skip`` or ``continue``)
    what a signal wait does then."""

    kind: str
    signal: str | None
    until: datetime | None
    on_timeout: str | None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> StepWait:
        """A wait from its JSON object."""
        return cls(
            kind=data["kind"],
            signal=_optional_str(data.get("signal")),
            until=_optional_time(data.get("until")),
            on_timeout=_optional_str(data.get("on_timeout")),
        )


@dataclass(frozen=True)
class StepThrottle:
    """Why a ``throttled`` step has not started yet: ``kind`` ``concurrency`` (every slot of the
    concurrency key ``key`` is in use), ``rate`` (the rate key ``key`` has no token left) or
    ``paused`` (the rate key ``key`` is paused). ``limit`` is that key's limit, ``since`` when
    the step began to wait, and ``until`` when it may start (``None`` for a concurrency wait: it
    starts when a slot frees)."""

    #: ``concurrency``, ``rate`` or ``paused``.
    kind: str
    key: str
    limit: int
    since: datetime
    until: datetime | None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> StepThrottle:
        """A throttle from its JSON object."""
        return cls(
            kind=data["kind"],
            key=data["key"],
            limit=int(data["limit"]),
            since=_time(data["since"]),
            until=_optional_time(data.get("until")),
        )


@dataclass(frozen=True)
class StepConcurrencyLimit:
    """The concurrency limit of a step (:attr:`StepLimits.concurrency`): at most ``limit`` steps
    of the key ``key`` run at once. The key is resolved: ``<namespace>/<template>:<value>`` for a
    template's limit, ``<namespace>/<template>/<step>:<value>`` for a step's own."""

    key: str
    limit: int

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> StepConcurrencyLimit:
        """A concurrency limit from its JSON object."""
        return cls(key=data["key"], limit=int(data["limit"]))


@dataclass(frozen=True)
class StepRateLimit:
    """The rate limit of a step (:attr:`StepLimits.rate`): steps of the rate key ``key`` (a name
    shared cluster-wide) start at most ``limit`` times per ``per_ms`` milliseconds, ``burst`` at
    once."""

    key: str
    limit: int
    per_ms: int
    burst: int

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> StepRateLimit:
        """A rate limit from its JSON object."""
        return cls(
            key=data["key"],
            limit=int(data["limit"]),
            per_ms=int(data["per_ms"]),
            burst=int(data["burst"]),
        )


@dataclass(frozen=True)
class StepLimits:
    """The limits that apply to a step (its own, else its template's), keys resolved from the
    task's context: ``concurrency`` and ``rate``, each ``None`` when there is none."""

    concurrency: StepConcurrencyLimit | None
    rate: StepRateLimit | None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> StepLimits:
        """A step's limits from their JSON object."""
        concurrency = data.get("concurrency")
        rate = data.get("rate")
        return cls(
            concurrency=(
                None if concurrency is None else StepConcurrencyLimit.from_json(concurrency)
            ),
            rate=None if rate is None else StepRateLimit.from_json(rate),
        )


@dataclass(frozen=True)
class Step:
    """A step of a task with its result or error, attempts and per-hop times: ``dispatched_at``
    (published to its queue), ``started_at``/``finished_at`` (its handler, as the worker saw
    it), ``processed_at`` (its result applied); ``next_attempt_at`` when a retry is due. A wait
    step (``step_type`` ``wait``, run by the orchestrator: no handler of yours) has its ``wait``
    (``None`` for the others) and is ``waiting`` while it waits.

    ``namespace`` is the queue namespace the step runs in (its own ``namespace:`` or its
    task's; ``None`` from a server that does not say). A child-workflow step (``step_type``
    ``child``, handler ``tasker:child``) has its ``child`` (:class:`StepChild`, ``None`` for the
    others) and is ``waiting`` while its child task runs; its result is the child task's
    ``result``. ``unserved`` is true while the step waits for a worker and no live worker serves
    its namespace and handler.

    ``limits`` are the concurrency and rate limits that apply to the step (:class:`StepLimits`,
    ``None`` for a step without any). A step ready to start but held by one of them is
    ``throttled`` (not in flight, its attempt not yet counted) and its ``throttle``
    (:class:`StepThrottle`, ``None`` otherwise) says which key holds it and until when."""

    id: str
    name: str
    handler: str
    #: ``standard``, ``decision``, ``convergence``, ``batchable``, ``batch_worker``, ``wait`` or
    #: ``child``.
    step_type: str
    #: ``pending``, ``throttled``, ``enqueued``, ``waiting``, ``waiting_retry``, ``completed``,
    #: ``failed``, ``skipped`` or ``cancelled``.
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
    wait: StepWait | None
    namespace: str | None = None
    child: StepChild | None = None
    unserved: bool = False
    throttle: StepThrottle | None = None
    limits: StepLimits | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Step:
        """A step from its JSON object."""
        wait = data.get("wait")
        child = data.get("child")
        throttle = data.get("throttle")
        limits = data.get("limits")
        return cls(
            id=str(data["id"]),
            name=data["name"],
            handler=str(data.get("handler") or ""),
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
            wait=None if wait is None else StepWait.from_json(wait),
            namespace=_optional_str(data.get("namespace")),
            child=None if child is None else StepChild.from_json(child),
            unserved=bool(data.get("unserved", False)),
            throttle=None if throttle is None else StepThrottle.from_json(throttle),
            limits=None if limits is None else StepLimits.from_json(limits),
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


@dataclass(frozen=True)
class Signal:
    """A signal sent to a task: its ``name``, ``signal_id`` (the sender's, or one the server
    made) and ``payload``, the result of the wait step that takes it. ``consumed_by`` names that
    step once one has (``None`` while the signal waits for a step to wait for it)."""

    task_id: str
    name: str
    signal_id: str
    payload: JSON
    received_at: datetime
    consumed_by: str | None
    consumed_at: datetime | None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Signal:
        """A signal from its JSON object."""
        return cls(
            task_id=str(data["task_id"]),
            name=data["name"],
            signal_id=str(data["signal_id"]),
            payload=data.get("payload"),
            received_at=_time(data["received_at"]),
            consumed_by=_optional_str(data.get("consumed_by")),
            consumed_at=_optional_time(data.get("consumed_at")),
        )


@dataclass(frozen=True)
class Schedule:
    """A schedule: tasks of ``template`` (``version``, ``None`` for the newest when it fires)
    with ``context``, created at the times of ``cron`` in ``timezone``. ``overlap`` (``skip``,
    ``allow``, ``buffer_one`` or ``cancel_previous``) says what a fire does while the previous
    task still runs; fires missed longer ago than ``catch_up`` (a duration such as ``"1h"``) are
    skipped and counted in ``skipped``. ``note`` is the note of its pause. ``upcoming``, the
    next fire times, is ``None`` except from ``get_schedule``."""

    namespace: str
    name: str
    template: str
    version: str | None
    cron: str
    timezone: str
    context: JSON
    overlap: str
    catch_up: str
    paused: bool
    note: str | None
    next_fire_at: datetime | None
    last_fire_at: datetime | None
    last_task_id: str | None
    fires: int
    skipped: int
    created_at: datetime
    updated_at: datetime
    upcoming: list[datetime] | None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Schedule:
        """A schedule from its JSON object."""
        return cls(
            namespace=data["namespace"],
            name=data["name"],
            template=data["template"],
            version=_optional_str(data.get("version")),
            cron=data["cron"],
            timezone=data.get("timezone") or "UTC",
            context=data.get("context"),
            overlap=data.get("overlap") or "skip",
            catch_up=data.get("catch_up") or "1h",
            paused=bool(data.get("paused")),
            note=_optional_str(data.get("note")),
            next_fire_at=_optional_time(data.get("next_fire_at")),
            last_fire_at=_optional_time(data.get("last_fire_at")),
            last_task_id=_optional_str(data.get("last_task_id")),
            fires=int(data.get("fires") or 0),
            skipped=int(data.get("skipped") or 0),
            created_at=_time(data["created_at"]),
            updated_at=_time(data["updated_at"]),
            upcoming=_optional_times(data.get("upcoming")),
        )


@dataclass(frozen=True)
class Backfill:
    """What a backfill did: tasks ``created`` for fire times that had none, ``existing`` ones
    that had (a backfill is safe to repeat), and the ids of both, ``task_ids``."""

    created: int
    existing: int
    task_ids: list[str]

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Backfill:
        """A backfill's answer from its JSON object."""
        return cls(
            created=int(data["created"]),
            existing=int(data["existing"]),
            task_ids=[str(t) for t in data["task_ids"]],
        )


@dataclass(frozen=True)
class WorkerInfo:
    """A worker process as the orchestrator's registry knows it (``workers()``): its ``name``,
    ``language`` (``rust``, ``python``, ``ruby``, ``typescript``, ...) and package
    ``version``, where it runs (``host``, ``pid``), the ``namespaces`` it consumes, the
    ``handlers`` it registered and its ``concurrency``. ``live`` is false for a worker not seen
    for longer than the liveness window (listed only with ``all=True``)."""

    id: str
    name: str
    language: str
    version: str
    host: str
    pid: int
    namespaces: list[str]
    handlers: list[str]
    concurrency: int
    started_at: datetime
    last_seen_at: datetime
    live: bool

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> WorkerInfo:
        """A worker from its JSON object."""
        return cls(
            id=str(data["id"]),
            name=data["name"],
            language=data["language"],
            version=data["version"],
            host=data["host"],
            pid=int(data["pid"]),
            namespaces=[str(n) for n in data.get("namespaces") or []],
            handlers=[str(h) for h in data.get("handlers") or []],
            concurrency=int(data["concurrency"]),
            started_at=_time(data["started_at"]),
            last_seen_at=_time(data["last_seen_at"]),
            live=bool(data["live"]),
        )


@dataclass(frozen=True)
class ConcurrencyLimit:
    """A concurrency key as ``concurrency_limits()`` lists it: ``key``
    (``<namespace>/<template>:<value>`` or ``<namespace>/<template>/<step>:<value>``), its
    ``limit``, the slots ``in_use`` (steps of the key in flight) and the steps ``throttled``
    waiting for one."""

    key: str
    limit: int
    in_use: int
    throttled: int

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ConcurrencyLimit:
        """A concurrency key from its JSON object."""
        return cls(
            key=data["key"],
            limit=int(data["limit"]),
            in_use=int(data["in_use"]),
            throttled=int(data["throttled"]),
        )


@dataclass(frozen=True)
class RateLimit:
    """A rate key as ``rate_limits()`` lists it (and ``pause_rate_limit``/``resume_rate_limit``
    return it): ``limit`` starts per ``per_ms`` milliseconds, ``burst`` at once, and the steps
    ``throttled`` waiting for a token. ``paused_until`` is the end of its pause (no step of the
    key starts before; ``None`` when not paused) and ``pause_note`` the pause's note."""

    key: str
    limit: int
    per_ms: int
    burst: int
    paused_until: datetime | None
    pause_note: str | None
    throttled: int

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RateLimit:
        """A rate key from its JSON object."""
        return cls(
            key=data["key"],
            limit=int(data["limit"]),
            per_ms=int(data["per_ms"]),
            burst=int(data["burst"]),
            paused_until=_optional_time(data.get("paused_until")),
            pause_note=_optional_str(data.get("pause_note")),
            throttled=int(data.get("throttled") or 0),
        )


@dataclass(frozen=True)
class BatchItemError:
    """Why a bulk create refused one item: the API's usual error (``code``, ``message``,
    ``details``), the codes of ``create_task``'s refusals (``unknown_template``,
    ``context_schema_violation``, ``idempotency_key_reused``, ...)."""

    code: str
    message: str
    details: JSON = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> BatchItemError:
        """An item's error from its JSON object."""
        return cls(
            code=str(data["code"]),
            message=str(data.get("message", "")),
            details=data.get("details"),
        )


@dataclass(frozen=True)
class BatchItemResult:
    """What a bulk create did with the item at ``index`` of the request: ``status``
    ``created``, ``existing`` (its idempotency key had created that task already, with the same
    template and context) or ``refused`` (nothing created for it; ``error`` says why).
    ``task_id`` is the task's id, ``None`` for a refused item."""

    index: int
    #: ``created``, ``existing`` or ``refused``.
    status: str
    task_id: str | None = None
    error: BatchItemError | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> BatchItemResult:
        """An item's result from its JSON object."""
        error = data.get("error")
        return cls(
            index=int(data["index"]),
            status=str(data["status"]),
            task_id=_optional_str(data.get("task_id")),
            error=None if error is None else BatchItemError.from_json(error),
        )


@dataclass(frozen=True)
class BatchCreated:
    """What ``create_tasks`` did: how many items were ``created``, ``existing`` and
    ``refused``, and each item's :class:`BatchItemResult` in ``results``, in request order."""

    created: int
    existing: int
    refused: int
    results: list[BatchItemResult]

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> BatchCreated:
        """A bulk create's answer from its JSON object."""
        return cls(
            created=int(data["created"]),
            existing=int(data["existing"]),
            refused=int(data["refused"]),
            results=[BatchItemResult.from_json(r) for r in data["results"]],
        )


@dataclass(frozen=True)
class PurgeResult:
    """What ``purge`` did (or, a ``dry_run``, would do): the finished tasks of ``states`` whose
    ``completed_at`` is before ``before`` (now less ``older_than``), ``tasks`` of them purged
    (``by_state``: how many of each state), ``rows`` deleted in all and their ``bytes`` (both
    ``None`` in a dry run). ``more`` is true when the request's ``limit`` stopped it with more
    left: call again."""

    dry_run: bool
    older_than: str
    before: datetime
    states: list[str]
    tasks: int
    by_state: dict[str, int]
    rows: int | None
    bytes: int | None
    more: bool

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PurgeResult:
        """A purge's answer from its JSON object."""
        rows = data.get("rows")
        size = data.get("bytes")
        return cls(
            dry_run=bool(data["dry_run"]),
            older_than=str(data["older_than"]),
            before=_time(data["before"]),
            states=[str(s) for s in data["states"]],
            tasks=int(data["tasks"]),
            by_state={str(k): int(v) for k, v in (data.get("by_state") or {}).items()},
            rows=None if rows is None else int(rows),
            bytes=None if size is None else int(size),
            more=bool(data["more"]),
        )


@dataclass(frozen=True)
class RetentionPolicy:
    """The retention policy the orchestrator runs (its ``[retention]`` configuration): how long
    finished tasks of each state are kept before an orchestrator purges them (``complete``,
    ``error``, ``cancelled``) and how long a purged task's id answers :class:`~tasker.TaskPurged`
    (``tombstones``), each a duration as configured (``"30d"``, ``"36h"``, ``"1h30m"``) or
    ``"never"``; the purge's pace: it looks every ``interval_ms`` milliseconds, purges ``batch``
    tasks a transaction and spends at most ``busy_percent`` (1-100) of its time deleting.
    ``last_purged_at`` is when the most recently purged task still remembered (its tombstone
    kept) was purged, by the policy or by :meth:`~tasker.Client.purge`; ``None`` when none is."""

    complete: str
    error: str
    cancelled: str
    tombstones: str
    interval_ms: int
    batch: int
    busy_percent: int
    last_purged_at: datetime | None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RetentionPolicy:
        """The retention policy from its JSON object."""
        return cls(
            complete=str(data["complete"]),
            error=str(data["error"]),
            cancelled=str(data["cancelled"]),
            tombstones=str(data["tombstones"]),
            interval_ms=int(data["interval_ms"]),
            batch=int(data["batch"]),
            busy_percent=int(data["busy_percent"]),
            last_purged_at=_optional_time(data.get("last_purged_at")),
        )
