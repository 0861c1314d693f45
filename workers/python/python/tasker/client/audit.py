"""The audit log (``GET /v1/audit``): who asked to change what, when, from where, and what
they were answered. Its answer types, its call, and the method both clients carry."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Mapping, TypeVar

from ._calls import Call, Request, Time, _call, _drop_none, timestamp
from .values import JSON, _optional_str, _time

T = TypeVar("T")


@dataclass(frozen=True)
class AuditEntry:
    """One request that asked to change something: ``token_id`` and ``token_name`` of the
    token it came with (``None`` with tokens off or without a valid token), ``method`` and
    ``route`` (the pattern, ``/v1/tasks/{id}/cancel``), the answer's ``status`` (refusals
    included), ``peer`` (the address it came from), ``forwarded_for`` (its X-Forwarded-For,
    when the orchestrator keeps it), the ``namespaces`` it named, the ``task_id`` it acted on
    and its other targets by kind (``template``, ``schedule``, ``token``, ``dead_letter``,
    ...)."""

    id: int
    at: datetime
    token_id: int | None
    token_name: str | None
    method: str
    route: str
    status: int
    peer: str | None
    forwarded_for: str | None
    namespaces: list[str]
    task_id: str | None
    target: dict[str, JSON]

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> AuditEntry:
        """An entry from its JSON object."""
        token_id = data.get("token_id")
        return cls(
            id=int(data["id"]),
            at=_time(data["at"]),
            token_id=None if token_id is None else int(token_id),
            token_name=_optional_str(data.get("token_name")),
            method=str(data["method"]),
            route=str(data["route"]),
            status=int(data["status"]),
            peer=_optional_str(data.get("peer")),
            forwarded_for=_optional_str(data.get("forwarded_for")),
            namespaces=[str(n) for n in data["namespaces"]],
            task_id=_optional_str(data.get("task_id")),
            target=dict(data["target"]),
        )


@dataclass(frozen=True)
class AuditPage:
    """One page of the audit log, newest first; ``next_before`` is the ``before`` of the next
    page (``None`` after the last)."""

    entries: list[AuditEntry]
    next_before: int | None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> AuditPage:
        """A page from its JSON object."""
        next_before = data.get("next_before")
        return cls(
            entries=[AuditEntry.from_json(e) for e in data["entries"]],
            next_before=None if next_before is None else int(next_before),
        )


def audit(
    namespace: str | None,
    token: str | None,
    route: str | None,
    method: str | None,
    since: Time | None,
    until: Time | None,
    limit: int | None,
    before: int | None,
) -> Call[AuditPage]:
    params = _drop_none(
        namespace=namespace, token=token, route=route, method=method, limit=limit, before=before,
        since=None if since is None else timestamp(since),
        until=None if until is None else timestamp(until),
    )
    return _call(Request("GET", "/v1/audit", params), AuditPage.from_json)


_DOC = """One page of the audit log, newest first: the requests that asked to change something
        (every route but ``GET``), refused ones included. Filters: a ``namespace`` the request
        named, the ``token`` (name) it came with, its ``route`` pattern
        (``"/v1/tasks/{id}/cancel"``) and ``method``, ``since`` and ``until`` (aware
        ``datetime`` or RFC 3339 strings: at or after, strictly before); ``limit`` rows (1-500,
        default 50) older than ``before`` (the previous page's ``next_before``). It takes an
        ``admin`` token (:class:`~tasker.AuthError` otherwise); one scoped to namespaces reads
        the rows of its namespaces."""


class AuditMethods:
    """:meth:`audit` of :class:`~tasker.Client`."""

    _run: Callable[[Call[Any]], Any]

    def audit(
        self,
        *,
        namespace: str | None = None,
        token: str | None = None,
        route: str | None = None,
        method: str | None = None,
        since: Time | None = None,
        until: Time | None = None,
        limit: int | None = None,
        before: int | None = None,
    ) -> AuditPage:
        result: AuditPage = self._run(
            audit(namespace, token, route, method, since, until, limit, before)
        )
        return result

    audit.__doc__ = _DOC


class AsyncAuditMethods:
    """:meth:`audit` of :class:`~tasker.AsyncClient`."""

    _run: Callable[[Call[Any]], Awaitable[Any]]

    async def audit(
        self,
        *,
        namespace: str | None = None,
        token: str | None = None,
        route: str | None = None,
        method: str | None = None,
        since: Time | None = None,
        until: Time | None = None,
        limit: int | None = None,
        before: int | None = None,
    ) -> AuditPage:
        result: AuditPage = await self._run(
            audit(namespace, token, route, method, since, until, limit, before)
        )
        return result

    audit.__doc__ = _DOC
