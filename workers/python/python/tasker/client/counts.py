"""How many tasks of each state a filter matches (``GET /v1/tasks?counts=true``): its call,
and the method both clients carry; its answer type, :class:`TaskCounts`, is generated from the
API's document."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from ._calls import Call, Id, Time, list_tasks
from .errors import ClientError
from .values import JSON, TaskCounts


def task_counts(
    namespace: str | None,
    name: str | None,
    parent: Id | None,
    created_after: Time | None,
    created_before: Time | None,
    context: Mapping[str, JSON] | None,
) -> Call[TaskCounts]:
    # A page of one task: the counts do not depend on the page.
    page = yield from list_tasks(
        None, namespace, name, 1, None, parent, created_after, created_before, context, True
    )
    if not isinstance(page.counts, TaskCounts):
        raise ClientError("GET /v1/tasks?counts=true: the answer has no counts")
    return page.counts


_DOC = """How many tasks of each state (``scheduled``, ``running``, ``complete``, ``error``,
        ``cancelled``, and their ``total``) match the filters of :meth:`list_tasks`: a
        ``namespace``, a template ``name``, the child tasks of the task ``parent``,
        ``created_after``, ``created_before`` and ``context``; the same refusals."""


class TaskCountMethods:
    """:meth:`task_counts` of :class:`~tasker.Client`."""

    _run: Callable[[Call[Any]], Any]

    def task_counts(
        self,
        *,
        namespace: str | None = None,
        name: str | None = None,
        parent: Id | None = None,
        created_after: Time | None = None,
        created_before: Time | None = None,
        context: Mapping[str, JSON] | None = None,
    ) -> TaskCounts:
        result: TaskCounts = self._run(
            task_counts(namespace, name, parent, created_after, created_before, context)
        )
        return result

    task_counts.__doc__ = _DOC


class AsyncTaskCountMethods:
    """:meth:`task_counts` of :class:`~tasker.AsyncClient`."""

    _run: Callable[[Call[Any]], Awaitable[Any]]

    async def task_counts(
        self,
        *,
        namespace: str | None = None,
        name: str | None = None,
        parent: Id | None = None,
        created_after: Time | None = None,
        created_before: Time | None = None,
        context: Mapping[str, JSON] | None = None,
    ) -> TaskCounts:
        result: TaskCounts = await self._run(
            task_counts(namespace, name, parent, created_after, created_before, context)
        )
        return result

    task_counts.__doc__ = _DOC
