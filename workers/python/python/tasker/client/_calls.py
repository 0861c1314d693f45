"""The API's calls, written once for the sync and the async client.

A call is a generator: it yields each :class:`Request` it needs, is sent the
``httpx.Response`` back, and returns its decoded value (raising the client's errors). Each
client only drives it, sending the requests with its own ``httpx`` client, so the paths, the
decoding, the error mapping, the paging and the wait loop exist once.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, TypeAlias, TypeVar
from urllib.parse import quote
from uuid import UUID

import httpx

from ._retry import Backoff, Pause, transient
from .errors import ClientError, InvalidRequest, api_error
from .values import (
    JSON,
    Backfill,
    BatchCreated,
    ConcurrencyLimit,
    PurgeResult,
    RateLimit,
    RetentionPolicy,
    Schedule,
    Signal,
    Step,
    StepPage,
    Task,
    TaskPage,
    Transition,
    WorkerInfo,
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
class Request:
    """One HTTP request of a call. ``wait`` marks a long poll of that many seconds: its read
    timeout is extended by as much."""

    method: str
    path: str
    params: Mapping[str, str] | None = None
    json: JSON = None
    wait: float | None = None


#: A call returning ``T``: it yields its requests (sent the answer of each) and, when it
#: retries, the :class:`Pause` before the next attempt (sent ``None``).
Call = Generator[Request | Pause, Any, T]


def segment(value: Id) -> str:
    """An id or a step name as one path segment (a batch instance's name has a ``#``)."""
    return quote(str(value), safe="")


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


def _call(request: Request, parse: Callable[[Any], T]) -> Call[T]:
    response = yield request
    return _decode(response, parse)


def _drop_none(**params: Any) -> dict[str, str]:
    return {k: str(v) for k, v in params.items() if v is not None}


def timestamp(value: Time) -> str:
    """A time as the API takes it: RFC 3339, in UTC for a ``datetime`` (which must say its
    timezone: a naive one is ambiguous)."""
    if isinstance(value, str):
        return value
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(f"a naive datetime is ambiguous, give it a timezone: {value!r}")
    return value.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")


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


def create_task(
    namespace: str,
    name: str,
    context: JSON,
    version: str | None,
    idempotency_key: str | None,
    run_at: Time | None = None,
    delay: Duration | None = None,
    priority: str | None = None,
) -> Call[Task]:
    body: dict[str, Any] = {
        "namespace": namespace,
        "name": name,
        "context": {} if context is None else context,
    }
    if version is not None:
        body["version"] = version
    if idempotency_key is not None:
        body["idempotency_key"] = idempotency_key
    if run_at is not None:
        body["run_at"] = timestamp(run_at)
    if delay is not None:
        body["delay"] = duration(delay)
    if priority is not None:
        body["priority"] = priority
    return _call(Request("POST", "/v1/tasks", json=body), Task.from_json)


def _batch_item(item: Mapping[str, Any]) -> dict[str, Any]:
    """One item of a bulk create as the API takes it: its fields as given (``None`` left out),
    ``run_at`` and ``delay`` converted as :func:`create_task` converts them."""
    body = {k: v for k, v in item.items() if v is not None}
    if "run_at" in body:
        body["run_at"] = timestamp(body["run_at"])
    if "delay" in body:
        body["delay"] = duration(body["delay"])
    return body


def create_tasks(tasks: list[Mapping[str, Any]]) -> Call[BatchCreated]:
    body = {"tasks": [_batch_item(item) for item in tasks]}
    return _call(Request("POST", "/v1/tasks:batch", json=body), BatchCreated.from_json)


def get_task(id: Id, wait: float | None = None) -> Call[Task]:
    if wait is None:
        return _call(Request("GET", f"/v1/tasks/{segment(id)}"), Task.from_json)
    request = Request("GET", f"/v1/tasks/{segment(id)}", {"wait": f"{wait:.3f}"}, wait=wait)
    return _call(request, Task.from_json)


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
        if task.is_terminal or left <= poll:
            return task


def list_tasks(
    state: str | None,
    namespace: str | None,
    name: str | None,
    limit: int | None,
    before: Id | None,
    parent: Id | None = None,
    created_after: Time | None = None,
    created_before: Time | None = None,
    context: Mapping[str, JSON] | None = None,
) -> Call[TaskPage]:
    params = _drop_none(
        state=state, namespace=namespace, name=name, limit=limit, before=before, parent=parent,
        created_after=None if created_after is None else timestamp(created_after),
        created_before=None if created_before is None else timestamp(created_before),
        # JSON text, URL-encoded in the query string like every parameter.
        context=None if context is None else json.dumps(context, separators=(",", ":")),
    )
    return _call(Request("GET", "/v1/tasks", params), TaskPage.from_json)


def cancel(id: Id) -> Call[Task]:
    return _call(Request("POST", f"/v1/tasks/{segment(id)}/cancel"), Task.from_json)


def steps_page(id: Id, after: Id | None, limit: int | None) -> Call[StepPage]:
    params = _drop_none(after=after, limit=limit)
    return _call(Request("GET", f"/v1/tasks/{segment(id)}/steps", params), StepPage.from_json)


def steps(id: Id) -> Call[list[Step]]:
    """Every step, page by page."""
    found: list[Step] = []
    after: str | None = None
    while True:
        page = yield from steps_page(id, after, STEPS_PAGE)
        found.extend(page.steps)
        if page.next is None:
            return found
        after = page.next


def history(id: Id) -> Call[list[Transition]]:
    return _call(
        Request("GET", f"/v1/tasks/{segment(id)}/history"),
        lambda data: [Transition.from_json(t) for t in data["transitions"]],
    )


def retry(id: Id, step: str | None, by: str | None, reason: str | None) -> Call[Task]:
    path = f"/v1/tasks/{segment(id)}"
    if step is not None:
        path += f"/steps/{segment(step)}"
    body = _drop_none(by=by, reason=reason)
    return _call(Request("POST", f"{path}/retry", json=body), Task.from_json)


def resolve(id: Id, step: str, result: JSON, by: str | None, reason: str | None) -> Call[Task]:
    body: dict[str, Any] = {"result": result, **_drop_none(by=by, reason=reason)}
    path = f"/v1/tasks/{segment(id)}/steps/{segment(step)}/resolve"
    return _call(Request("POST", path, json=body), Task.from_json)


def signal(id: Id, name: str, payload: JSON, signal_id: str | None) -> Call[Signal]:
    body: dict[str, Any] = {}
    if signal_id is not None:
        body["signal_id"] = signal_id
    if payload is not None:
        body["payload"] = payload
    path = f"/v1/tasks/{segment(id)}/signals/{segment(name)}"
    return _call(Request("POST", path, json=body), Signal.from_json)


def signals(id: Id) -> Call[list[Signal]]:
    return _call(
        Request("GET", f"/v1/tasks/{segment(id)}/signals"),
        lambda data: [Signal.from_json(s) for s in data["signals"]],
    )


def _schedule_path(namespace: str, name: str) -> str:
    return f"/v1/schedules/{segment(namespace)}/{segment(name)}"


def _every_page(
    path: str, params: dict[str, str], key: str, parse: Callable[[Any], T]
) -> Call[list[T]]:
    """Every item of a list the API answers a page at a time, following each page's
    ``next`` as the following one's ``after``."""
    found: list[T] = []
    after: str | None = None
    while True:
        response = yield Request("GET", path, {**params, **_drop_none(after=after)})
        data = _decode(response, lambda d: d)
        found.extend(parse(item) for item in data[key])
        after = data.get("next")
        if after is None:
            return found


def list_schedules(namespace: str | None) -> Call[list[Schedule]]:
    params = _drop_none(namespace=namespace)
    return _every_page("/v1/schedules", params, "schedules", Schedule.from_json)


def get_schedule(namespace: str, name: str) -> Call[Schedule]:
    return _call(Request("GET", _schedule_path(namespace, name)), Schedule.from_json)


def apply_schedule(definition: Mapping[str, JSON]) -> Call[Schedule]:
    return _call(Request("POST", "/v1/schedules", json=dict(definition)), Schedule.from_json)


def update_schedule(namespace: str, name: str, changes: Mapping[str, JSON]) -> Call[Schedule]:
    request = Request("PATCH", _schedule_path(namespace, name), json=dict(changes))
    return _call(request, Schedule.from_json)


def delete_schedule(namespace: str, name: str) -> Call[None]:
    # 204: no body to decode.
    response = yield Request("DELETE", _schedule_path(namespace, name))
    if not response.is_success:
        raise _error(response)


def pause_schedule(namespace: str, name: str, note: str | None) -> Call[Schedule]:
    path = f"{_schedule_path(namespace, name)}/pause"
    return _call(Request("POST", path, json=_drop_none(note=note)), Schedule.from_json)


def resume_schedule(namespace: str, name: str) -> Call[Schedule]:
    path = f"{_schedule_path(namespace, name)}/resume"
    return _call(Request("POST", path), Schedule.from_json)


def trigger_schedule(namespace: str, name: str) -> Call[Task]:
    path = f"{_schedule_path(namespace, name)}/trigger"
    return _call(Request("POST", path), Task.from_json)


def backfill_schedule(namespace: str, name: str, from_: Time, to: Time) -> Call[Backfill]:
    body = {"from": timestamp(from_), "to": timestamp(to)}
    path = f"{_schedule_path(namespace, name)}/backfill"
    return _call(Request("POST", path, json=body), Backfill.from_json)


def workers(all: bool = False) -> Call[list[WorkerInfo]]:
    params = {"all": "true"} if all else None
    return _call(
        Request("GET", "/v1/workers", params),
        lambda data: [WorkerInfo.from_json(w) for w in data["workers"]],
    )


def concurrency_limits(key_prefix: str | None = None) -> Call[list[ConcurrencyLimit]]:
    params = _drop_none(key=key_prefix)
    return _every_page("/v1/concurrency-limits", params, "limits", ConcurrencyLimit.from_json)


def rate_limits() -> Call[list[RateLimit]]:
    return _every_page("/v1/rate-limits", {}, "limits", RateLimit.from_json)


def _rate_limit_pause_path(key: str) -> str:
    return f"/v1/rate-limits/{segment(key)}/pause"


def pause_rate_limit(key: str, until: Time, note: str | None = None) -> Call[RateLimit]:
    body = {"until": timestamp(until), **_drop_none(note=note)}
    request = Request("POST", _rate_limit_pause_path(key), json=body)
    return _call(request, RateLimit.from_json)


def resume_rate_limit(key: str) -> Call[RateLimit]:
    return _call(Request("DELETE", _rate_limit_pause_path(key)), RateLimit.from_json)


def purge(
    older_than: str, states: list[str] | None, dry_run: bool, limit: int | None
) -> Call[PurgeResult]:
    body: dict[str, Any] = {"older_than": older_than}
    if states is not None:
        body["states"] = list(states)
    body["dry_run"] = dry_run
    if limit is not None:
        body["limit"] = limit
    return _call(Request("POST", "/v1/purge", json=body), PurgeResult.from_json)


def retention() -> Call[RetentionPolicy]:
    return _call(Request("GET", "/v1/retention"), RetentionPolicy.from_json)
