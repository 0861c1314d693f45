"""The API's calls, written once for the sync and the async client.

A call is a generator: it yields each :class:`Request` it needs, is sent the
``httpx.Response`` back, and returns its decoded value (raising the client's errors). Each
client only drives it, sending the requests with its own ``httpx`` client, so the paths, the
decoding, the error mapping, the paging and the wait loop exist once.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass
from typing import Any, TypeAlias, TypeVar
from urllib.parse import quote
from uuid import UUID

import httpx

from .errors import ClientError, InvalidRequest, api_error
from .values import JSON, Step, StepPage, Task, TaskPage, Transition

T = TypeVar("T")

#: The longest single long poll: below the server's default cap (``max_wait_seconds``, 300)
#: and short enough that proxies and load balancers keep the request open.
MAX_POLL = 25.0
#: Steps read per page by ``steps`` (the server's default page).
STEPS_PAGE = 1_000

#: A task or step id as the client takes it.
Id: TypeAlias = str | UUID


@dataclass(frozen=True)
class Request:
    """One HTTP request of a call. ``wait`` marks a long poll of that many seconds: its read
    timeout is extended by as much."""

    method: str
    path: str
    params: Mapping[str, str] | None = None
    json: JSON = None
    wait: float | None = None


#: A call returning ``T``.
Call = Generator[Request, httpx.Response, T]


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


def create_task(
    namespace: str,
    name: str,
    context: JSON,
    version: str | None,
    idempotency_key: str | None,
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
    return _call(Request("POST", "/v1/tasks", json=body), Task.from_json)


def get_task(id: Id, wait: float | None = None) -> Call[Task]:
    if wait is None:
        return _call(Request("GET", f"/v1/tasks/{segment(id)}"), Task.from_json)
    request = Request("GET", f"/v1/tasks/{segment(id)}", {"wait": f"{wait:.3f}"}, wait=wait)
    return _call(request, Task.from_json)


def wait(id: Id, timeout: float) -> Call[Task]:
    """Long polls until the task is terminal or ``timeout`` seconds have passed, then returns
    it as it is. Polls last at most :data:`MAX_POLL` seconds, halved whenever the server
    refuses one as beyond its cap (``400 invalid_wait``), down to about a second."""
    deadline = time.monotonic() + timeout
    poll = MAX_POLL
    while True:
        left = max(0.0, deadline - time.monotonic())
        try:
            task = yield from get_task(id, min(left, poll))
        except InvalidRequest as e:
            if e.code == "invalid_wait" and poll > 1.0:
                poll /= 2
                continue
            raise
        if task.is_terminal or left <= poll:
            return task


def list_tasks(
    state: str | None,
    namespace: str | None,
    name: str | None,
    limit: int | None,
    before: Id | None,
) -> Call[TaskPage]:
    params = _drop_none(state=state, namespace=namespace, name=name, limit=limit, before=before)
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
