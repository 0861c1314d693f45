"""The API's calls, written once for the sync and the async client.

Each request is built by the request builder that openapi-python-client generated from the API's
OpenAPI document (``_api.api.<tag>.<operation>._get_kwargs``: path, query and typed body), and
each answer is read by the generated answer type's ``from_dict``. What is left here is Tasker's
own: the arguments as the client takes them (ids as strings or UUIDs, times as aware datetimes or
RFC 3339 text, durations as seconds), the wait loop and the paging.

A call is a generator: it yields each :class:`Send` it needs, is sent the ``httpx.Response``
back, and returns its decoded value (raising the client's errors); between the attempts of a wait
it yields a :class:`Pause`. Each client only drives it, sending the requests with its own
``httpx`` client.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, TypeAlias, TypeVar, cast
from uuid import UUID

import httpx

from ._api.api.limits import (
    list_concurrency_limits,
    list_rate_limits,
    pause_rate_limit as pause_rate_limit_op,
    resume_rate_limit as resume_rate_limit_op,
)
from ._api.api.repair import resolve_step, retry_step, retry_task
from ._api.api.retention import purge_tasks, retention_policy
from ._api.api.tasks import (
    cancel_task,
    create_task as create_task_op,
    create_tasks as create_tasks_op,
    get_task as get_task_op,
    list_signals,
    list_tasks as list_tasks_op,
    send_signal,
    step_inputs as step_inputs_op,
    task_history,
    task_steps,
)
from ._api.api.workers import list_workers
from ._api.models import (
    CreateTask,
    DeadlineSpec,
    DebounceSpec,
    DedupeSpec,
    PauseRateLimit,
    PurgeRequest,
    RepairNote,
    Resolve,
    SendSignal,
)
from ._api.types import UNSET, Unset
from ._retry import Backoff, Pause, transient
from .errors import ClientError, InvalidRequest, api_error
from .values import (
    JSON,
    BatchCreated,
    ConcurrencyLimit,
    ConcurrencyLimitList,
    History,
    Priority,
    PurgeState,
    Purged,
    RateLimit,
    RateLimitList,
    RetentionPolicy,
    Signal,
    SignalList,
    Step,
    StepPage,
    Task,
    TaskPage,
    TaskStateName,
    Transition,
    WorkerInfo,
    WorkerList,
    is_terminal,
)

T = TypeVar("T")

#: The longest single long poll: below the server's default cap (``max_wait_seconds``, 300)
#: and short enough that proxies and load balancers keep the request open.
MAX_POLL = 25.0
#: Steps read per page by ``steps`` (the server's default page).
STEPS_PAGE = 1_000

#: A task or step id as the client takes it.
Id: TypeAlias = str | UUID
#: A point in time as the client takes it: an aware ``datetime``, or an RFC 3339 string.
Time: TypeAlias = datetime | str
#: A duration as the client takes it: a string such as ``"10m"`` or ``"1h30m"``, seconds, or a
#: ``timedelta``.
Duration: TypeAlias = str | int | float | timedelta


@dataclass(frozen=True)
class Send:
    """One HTTP request of a call: the keyword arguments of ``httpx.Client.request`` a generated
    builder made. ``wait`` marks a long poll of that many seconds: its read timeout is extended
    by as much."""

    request: dict[str, Any]
    wait: float | None = None


#: A call returning ``T``: it yields its requests (sent the answer of each) and, when it
#: retries, the :class:`Pause` before the next attempt (sent ``None``).
Call = Generator[Send | Pause, Any, T]


def _decode(response: httpx.Response, parse: Callable[[Any], T]) -> T:
    """The value of a successful answer, or the error an unsuccessful one stands for."""
    request = response.request
    if not response.is_success:
        raise _error(response)
    try:
        return parse(response.json())
    except (ValueError, KeyError, TypeError) as e:
        raise ClientError(
            f"{request.method} {request.url}: unexpected answer ({response.status_code}): {e}"
        ) from e


def _error(response: httpx.Response) -> ClientError:
    try:
        body = response.json()
    except ValueError:
        body = None
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and isinstance(error.get("code"), str):
        return api_error(
            response.status_code,
            error["code"],
            str(error.get("message", "")),
            error.get("details"),
        )
    # Not the API's own answer (a proxy's, say): keep the status and the start of the body.
    text = response.text[:200].strip()
    message = f"{response.reason_phrase}: {text}" if text else response.reason_phrase
    return api_error(response.status_code, "unknown", message)


def _call(request: dict[str, Any], parse: Callable[[Any], T], wait: float | None = None) -> Call[T]:
    response = yield Send(request, wait)
    return _decode(response, parse)


def _no_answer(request: dict[str, Any]) -> Call[None]:
    """A call answered with no body (``204``: a removal): ``None``, or the error an unsuccessful
    answer stands for."""
    response = yield Send(request)
    if not response.is_success:
        raise _error(response)


def _id(value: Id) -> UUID:
    """An id as the builders take it. A string is passed on as it is (the builders only ``str()``
    it into the path or query): a malformed one is the server's to refuse, ``invalid_id``."""
    return cast(UUID, value)


class _Text(str):
    """A time the builders put into a request (with ``isoformat()``) as this very text."""

    def isoformat(self) -> str:
        return str(self)


def timestamp(value: Time) -> datetime:
    """A time as the API takes it: RFC 3339, in UTC (``Z``) for a ``datetime``, which must say
    its timezone (a naive one is ambiguous); a string is sent as it is, for the server to judge.
    """
    if isinstance(value, str):
        return cast(datetime, _Text(value))
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(f"a naive datetime is ambiguous, give it a timezone: {value!r}")
    text = value.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")
    return cast(datetime, _Text(text))


def duration(value: Duration) -> str:
    """A duration as the API takes it, a string such as ``"600s"``: seconds (``int``, ``float``
    or a ``timedelta``) become whole seconds, or milliseconds when there is a fraction."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        raise TypeError(f"a duration is a string, seconds or a timedelta, not {value!r}")
    seconds = value.total_seconds() if isinstance(value, timedelta) else value
    if seconds == int(seconds):
        return f"{int(seconds)}s"
    return f"{round(seconds * 1000)}ms"


def _given(value: T | None) -> T | Unset:
    return UNSET if value is None else value


class _AsGiven(dict[str, Any]):
    """A request body sent as the caller wrote it, for the server to judge (a schedule's
    definition, an item of a bulk create): the builders call ``to_dict()``."""

    def to_dict(self) -> dict[str, Any]:
        return dict(self)


def _task_item(item: Mapping[str, Any]) -> dict[str, Any]:
    """One task to create as the API takes it: its fields as given (``None`` left out),
    ``run_at`` and ``delay`` converted as :func:`create_task` converts them."""
    body = {k: v for k, v in item.items() if v is not None}
    if "run_at" in body:
        body["run_at"] = str(timestamp(body["run_at"]))
    if "delay" in body:
        body["delay"] = duration(body["delay"])
    for control in ("dedupe", "debounce", "deadline"):
        if control in body:
            body[control] = _windows(body[control])
    return body


def create_task(
    namespace: str,
    name: str,
    context: JSON,
    version: str | None,
    idempotency_key: str | None,
    run_at: Time | None = None,
    delay: Duration | None = None,
    priority: Priority | None = None,
    dedupe: Mapping[str, Any] | None = None,
    debounce: Mapping[str, Any] | None = None,
    deadline: Mapping[str, Any] | None = None,
) -> Call[Task]:
    body = CreateTask(
        namespace=namespace,
        name=name,
        context={} if context is None else context,
        version=_given(version),
        idempotency_key=_given(idempotency_key),
        run_at=UNSET if run_at is None else timestamp(run_at),
        delay=UNSET if delay is None else duration(delay),
        priority=_given(priority),
        dedupe=UNSET if dedupe is None else DedupeSpec.from_dict(_windows(dedupe)),
        debounce=UNSET if debounce is None else DebounceSpec.from_dict(_windows(debounce)),
        deadline=UNSET if deadline is None else DeadlineSpec.from_dict(_windows(deadline)),
    )
    return _call(create_task_op._get_kwargs(body=body), Task.from_dict)


def _windows(control: Mapping[str, Any]) -> dict[str, Any]:
    """A start control or a deadline as the API takes it: its durations (``ttl``, ``period``,
    ``max``, ``within``) as
    :func:`duration` writes them, ``None`` left out."""
    return {
        k: duration(v) if k in ("ttl", "period", "max", "within") else v
        for k, v in control.items()
        if v is not None
    }


def create_tasks(tasks: list[Mapping[str, Any]]) -> Call[BatchCreated]:
    body = _AsGiven(tasks=[_task_item(item) for item in tasks])
    request = create_tasks_op._get_kwargs(body=cast(Any, body))
    return _call(request, BatchCreated.from_dict)


def get_task(id: Id, wait: float | None = None) -> Call[Task]:
    if wait is None:
        return _call(get_task_op._get_kwargs(_id(id)), Task.from_dict)
    # Milliseconds are enough, and keep the query short.
    request = get_task_op._get_kwargs(_id(id), wait=cast(float, f"{wait:.3f}"))
    return _call(request, Task.from_dict, wait)


def wait(id: Id, timeout: float) -> Call[Task]:
    """Long polls until the task is terminal or ``timeout`` seconds have passed, then returns
    it as it is. Polls last at most :data:`MAX_POLL` seconds, halved whenever the server
    refuses one as beyond its cap (``400 invalid_wait``), down to about a second. A poll that
    fails for the connection's sake (:func:`_retry.transient`: an orchestrator or a proxy
    restarting) is sent again after a :class:`Pause`, until the deadline; past it, that error
    is raised."""
    deadline = time.monotonic() + timeout
    poll = MAX_POLL
    backoff = Backoff()
    while True:
        left = max(0.0, deadline - time.monotonic())
        try:
            task = yield from get_task(id, min(left, poll))
        except InvalidRequest as e:
            if e.code == "invalid_wait" and poll > 1.0:
                poll /= 2
                continue
            raise
        except ClientError as e:
            left = deadline - time.monotonic()
            if not transient(e) or left <= 0:
                raise
            yield Pause(min(backoff.next(), left))
            continue
        backoff.reset()
        if is_terminal(task) or left <= poll:
            return task


def list_tasks(
    state: TaskStateName | None,
    namespace: str | None,
    name: str | None,
    limit: int | None,
    before: Id | None,
    parent: Id | None = None,
    created_after: Time | None = None,
    created_before: Time | None = None,
    context: Mapping[str, JSON] | None = None,
    counts: bool = False,
    id_prefix: str | None = None,
    idempotency_key: str | None = None,
) -> Call[TaskPage]:
    request = list_tasks_op._get_kwargs(
        state=_given(state), namespace=_given(namespace), name=_given(name),
        parent=UNSET if parent is None else _id(parent), limit=_given(limit),
        before=UNSET if before is None else _id(before),
        created_after=UNSET if created_after is None else timestamp(created_after),
        created_before=UNSET if created_before is None else timestamp(created_before),
        # JSON text, URL-encoded in the query string like every parameter.
        context=UNSET if context is None else json.dumps(context, separators=(",", ":")),
        counts=True if counts else UNSET,
        id_prefix=_given(id_prefix), idempotency_key=_given(idempotency_key),
    )
    return _call(request, TaskPage.from_dict)


def cancel(id: Id) -> Call[Task]:
    return _call(cancel_task._get_kwargs(_id(id)), Task.from_dict)


def steps_page(id: Id, after: Id | None, limit: int | None) -> Call[StepPage]:
    request = task_steps._get_kwargs(
        _id(id), after=UNSET if after is None else _id(after), limit=_given(limit)
    )
    return _call(request, StepPage.from_dict)


def steps(id: Id) -> Call[list[Step]]:
    """Every step, page by page."""
    found: list[Step] = []
    after: UUID | None = None
    while True:
        page = yield from steps_page(id, after, STEPS_PAGE)
        found.extend(page.steps)
        if page.next_ is None:
            return found
        after = page.next_


def history(id: Id) -> Call[list[Transition]]:
    return _call(
        task_history._get_kwargs(_id(id)), lambda data: History.from_dict(data).transitions
    )


def step_inputs(id: Id, step: str, attempt: int | None) -> Call[dict[str, Any]]:
    """As the API sends them (a plain dict): what a replay hands the handler, unconverted."""
    request = step_inputs_op._get_kwargs(_id(id), step, attempt=_given(attempt))
    return _call(request, lambda data: cast(dict[str, Any], data))


def retry(id: Id, step: str | None, by: str | None, reason: str | None) -> Call[Task]:
    note = RepairNote(by=_given(by), reason=_given(reason))
    if step is None:
        return _call(retry_task._get_kwargs(_id(id), body=note), Task.from_dict)
    return _call(retry_step._get_kwargs(_id(id), step, body=note), Task.from_dict)


def resolve(id: Id, step: str, result: JSON, by: str | None, reason: str | None) -> Call[Task]:
    body = Resolve(result=result, by=_given(by), reason=_given(reason))
    return _call(resolve_step._get_kwargs(_id(id), step, body=body), Task.from_dict)


def signal(id: Id, name: str, payload: JSON, signal_id: str | None) -> Call[Signal]:
    body = SendSignal(signal_id=_given(signal_id), payload=_given(payload))
    return _call(send_signal._get_kwargs(_id(id), name, body=body), Signal.from_dict)


def signals(id: Id) -> Call[list[Signal]]:
    return _call(
        list_signals._get_kwargs(_id(id)), lambda data: SignalList.from_dict(data).signals
    )


def _every_page(
    request: Callable[[str | Unset], dict[str, Any]],
    page: Callable[[Any], tuple[list[T], str | None | Unset]],
) -> Call[list[T]]:
    """Every item of a list the API answers a page at a time, following each page's ``next``
    as the following one's ``after``: ``request`` builds the request of a page, ``page``
    reads its items and its ``next``."""
    found: list[T] = []
    after: str | Unset = UNSET
    while True:
        items, next_ = yield from _call(request(after), page)
        found.extend(items)
        if not isinstance(next_, str):
            return found
        after = next_


def workers(all: bool = False) -> Call[list[WorkerInfo]]:
    request = list_workers._get_kwargs(all_=True if all else UNSET)
    return _call(request, lambda data: WorkerList.from_dict(data).workers)


def concurrency_limits(key_prefix: str | None = None) -> Call[list[ConcurrencyLimit]]:
    def page(data: Any) -> tuple[list[ConcurrencyLimit], str | None | Unset]:
        answer = ConcurrencyLimitList.from_dict(data)
        return answer.limits, answer.next_

    return _every_page(
        lambda after: list_concurrency_limits._get_kwargs(key=_given(key_prefix), after=after),
        page,
    )


def rate_limits() -> Call[list[RateLimit]]:
    def page(data: Any) -> tuple[list[RateLimit], str | None | Unset]:
        answer = RateLimitList.from_dict(data)
        return answer.limits, answer.next_

    return _every_page(lambda after: list_rate_limits._get_kwargs(after=after), page)


def pause_rate_limit(key: str, until: Time, note: str | None = None) -> Call[RateLimit]:
    body = PauseRateLimit(until=timestamp(until), note=_given(note))
    return _call(pause_rate_limit_op._get_kwargs(key, body=body), RateLimit.from_dict)


def resume_rate_limit(key: str) -> Call[RateLimit]:
    return _call(resume_rate_limit_op._get_kwargs(key), RateLimit.from_dict)


def purge(
    older_than: str, states: list[PurgeState] | None, dry_run: bool, limit: int | None
) -> Call[Purged]:
    body = PurgeRequest(
        older_than=older_than,
        states=UNSET if states is None else list(states),
        dry_run=dry_run,
        limit=_given(limit),
    )
    return _call(purge_tasks._get_kwargs(body=body), Purged.from_dict)


def retention() -> Call[RetentionPolicy]:
    return _call(retention_policy._get_kwargs(), RetentionPolicy.from_dict)
