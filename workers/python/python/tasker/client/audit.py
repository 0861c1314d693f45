"""The audit log (``GET /v1/audit``): who asked to change what, when, from where, and what
they were answered. Its call, and the method both clients carry; its answer types,
:class:`AuditEntry` and :class:`AuditPage`, are generated from the API's document."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from ._api.api.audit import list_audit
from ._api.types import UNSET
from ._calls import Call, Time, _call, _given, timestamp
from .values import AuditPage

T = TypeVar("T")


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
    request = list_audit._get_kwargs(
        namespace=_given(namespace), token=_given(token), route=_given(route),
        method=_given(method), limit=_given(limit), before=_given(before),
        # RFC 3339 text: the document gives these as strings.
        since=UNSET if since is None else str(timestamp(since)),
        until=UNSET if until is None else str(timestamp(until)),
    )
    return _call(request, AuditPage.from_dict)


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
