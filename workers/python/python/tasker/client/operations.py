"""Operations by filter (``/v1/operations``): retry, resolve or cancel every task a filter
matches, or replay or discard every dead letter one matches, and follow the operation's progress.
Their calls, and the methods both clients carry; the answer types, :class:`Operation`,
:class:`OperationCount` and :class:`OperationList`, are generated from the API's document."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeAlias, cast

from ._api.api.bulk import cancel_operation as cancel_op
from ._api.api.bulk import get_operation as show
from ._api.api.bulk import list_operations as list_op
from ._api.api.bulk import start_operation as start
from ._api.models import OperationFilter, StartOperation
from ._api.types import UNSET, Unset
from ._calls import Call, Id, _AsGiven, _call, _given, _id, timestamp
from ._retry import Pause
from .values import JSON, Operation, OperationAction, OperationCount, OperationList, is_finished

#: How often :meth:`~tasker.Client.wait_operation` reads the operation's progress, in seconds.
POLL = 0.25

#: Which tasks (or dead letters) an operation acts on: a ``dict`` of the API's filter fields
#: (``namespace``, ``name``, ``version``, ``state``, ``step``, ``error_kind``, ``created_after``,
#: ``created_before``, ``context``, ``ids``; for dead letters ``namespace``, ``queue``,
#: ``reason``, ``created_after``, ``created_before``, ``dead_letters``; ``None`` values left
#: out), or the filter of an :class:`Operation` or :class:`OperationCount` (``op.filter_``) to
#: act on the same tasks again.
Filter: TypeAlias = Mapping[str, JSON] | OperationFilter
#: What :meth:`~tasker.Client.wait_operation` calls with each reading of the operation.
Progress: TypeAlias = Callable[[Operation], object]


def _filter(given: Filter | None) -> OperationFilter | Unset:
    """A filter as the API takes it: times as RFC 3339 (see :func:`timestamp`), ids as text."""
    if given is None:
        return UNSET
    if isinstance(given, OperationFilter):
        return given
    body = {k: v for k, v in given.items() if v is not None}
    for key in ("created_after", "created_before"):
        if key in body:
            body[key] = str(timestamp(body[key]))
    if "ids" in body:
        body["ids"] = [str(i) for i in body["ids"]]
    return cast(OperationFilter, _AsGiven(body))


def _post(
    action: OperationAction,
    filter: Filter | None,
    reason: str | None,
    by: str | None,
    result: JSON,
    dry_run: bool,
) -> dict[str, Any]:
    body = StartOperation(
        action=action, filter_=_filter(filter), reason=_given(reason), by=_given(by),
        # The API takes no `null` result (it is `missing_result` for resolve): None is "none".
        result=_given(result), dry_run=dry_run,
    )
    return start._get_kwargs(body=body)


def start_operation(
    action: OperationAction, filter: Filter | None, reason: str | None, by: str | None, result: JSON
) -> Call[Operation]:
    return _call(_post(action, filter, reason, by, result, False), Operation.from_dict)


def count_operation(
    action: OperationAction, filter: Filter | None, result: JSON
) -> Call[OperationCount]:
    return _call(_post(action, filter, None, None, result, True), OperationCount.from_dict)


def operation(id: Id) -> Call[Operation]:
    return _call(show._get_kwargs(_id(id)), Operation.from_dict)


def operations(limit: int | None, before: Id | None) -> Call[OperationList]:
    request = list_op._get_kwargs(
        limit=_given(limit), before=UNSET if before is None else str(before)
    )
    return _call(request, OperationList.from_dict)


def cancel_operation(id: Id) -> Call[Operation]:
    return _call(cancel_op._get_kwargs(_id(id)), Operation.from_dict)


def wait_operation(id: Id, timeout: float, progress: Progress | None) -> Call[Operation]:
    """Reads the operation every :data:`POLL` seconds until it has finished or ``timeout``
    seconds have passed, and returns the last reading."""
    deadline = time.monotonic() + timeout
    while True:
        op = yield from operation(id)
        if progress is not None:
            progress(op)
        left = deadline - time.monotonic()
        if is_finished(op) or left <= 0:
            return op
        yield Pause(min(POLL, left))


class OperationMethods:
    """The operations by filter of :class:`~tasker.Client`."""

    _run: Callable[[Call[Any]], Any]

    def start_operation(
        self,
        action: OperationAction,
        filter: Filter | None = None,
        *,
        reason: str | None = None,
        by: str | None = None,
        result: JSON = None,
    ) -> Operation:
        """Starts an operation on every task ``filter`` matches in the namespaces the token
        covers (``POST /v1/operations``): ``action`` ``"retry"`` (a task in ``error``: its
        failed step runs again), ``"resolve"`` (its failed step is completed with ``result``,
        any JSON but ``None``) or ``"cancel"`` (a ``running`` or ``scheduled`` task). Every
        filter field given must match: ``namespace``, ``name`` and ``version`` (the
        template's), ``state``, ``step`` (the step that failed the task), ``error_kind``,
        ``created_after`` and ``created_before`` (aware ``datetime`` values or RFC 3339
        strings), ``context`` (tasks whose context contains this object), ``ids`` (at most
        10,000); none given: every task of the states the action acts on (retry and resolve:
        ``error``; cancel: ``running`` and ``scheduled``). ``reason`` and ``by`` go into each
        task's history, with the operation's id.

        ``action`` ``"replay"`` (a dead letter goes back to the queue it came from) or
        ``"discard"`` (it is deleted), with an admin token, acts on dead letters instead, of the
        filter fields ``namespace``, ``queue``, ``reason`` (a prefix of the dead letter's reason:
        ``result_mismatch``, ...), ``created_after`` and ``created_before`` (when it was first
        seen) and ``dead_letters`` (their ids, at most 10,000); ``matched``, ``acted`` and
        ``skipped`` then count dead letters.

        The answer comes at once, ``running``, with the exact count ``matched``; the tasks are
        acted on in the background: follow it with :meth:`wait_operation`. Raises
        :class:`~tasker.InvalidRequest` ``invalid_action``, ``invalid_filter`` (also a field of
        the other kind: ``queue`` for a retry, ``step`` for a replay, ...), ``missing_result``,
        ``invalid_result`` (400) or ``too_many_tasks`` (422: narrow the filter, e.g. by creation
        time, and start several), :class:`~tasker.AuthError` ``forbidden`` for a namespace the
        token does not cover (or a replay or discard without an admin token)."""
        op: Operation = self._run(start_operation(action, filter, reason, by, result))
        return op

    def count_operation(
        self, action: OperationAction, filter: Filter | None = None, *, result: JSON = None
    ) -> OperationCount:
        """What :meth:`start_operation` would act on, acting on none (a dry run): the exact
        count ``matched`` and a ``sample`` of up to 10 task ids, newest first (for replay and
        discard, ``sample`` is empty and ``dead_letter_sample`` holds up to 10 dead letter ids,
        newest first; ``UNSET`` when the server left it out: a count of tasks, or of none), with
        the filter as it would be applied (``filter_``). The same arguments and errors
        (``result`` for a resolve)."""
        count: OperationCount = self._run(count_operation(action, filter, result))
        return count

    def operation(self, id: Id) -> Operation:
        """The operation ``id`` and its progress: of its ``matched`` tasks (or dead letters),
        ``acted`` were acted on and ``skipped`` left (no longer in a state the action takes,
        purged, or outside the token's namespaces; a dead letter that may never be replayed).
        ``state`` is ``running`` until it is ``complete``, ``cancelled`` or ``failed`` (``note``
        says why). :class:`~tasker.NotFound` ``operation_not_found`` for an unknown id (or one
        another namespace-scoped token started)."""
        op: Operation = self._run(operation(id))
        return op

    def operations(self, *, limit: int | None = None, before: Id | None = None) -> OperationList:
        """One page of operations, newest first: ``limit`` of them (1-500, default 50) older
        than the operation ``before`` (the previous page's ``next_before``). A token scoped to
        namespaces sees the ones it started."""
        page: OperationList = self._run(operations(limit, before))
        return page

    def cancel_operation(self, id: Id) -> Operation:
        """Cancels a running operation and returns it, ``cancelled``: the tasks it has not
        reached are left as they are (those it acted on stay acted on).
        :class:`~tasker.Conflict` ``operation_finished`` if it has ended already."""
        op: Operation = self._run(cancel_operation(id))
        return op

    def wait_operation(
        self, id: Id, timeout: float, *, progress: Progress | None = None
    ) -> Operation:
        """Follows the operation ``id`` until it has finished or ``timeout`` seconds have
        passed, reading it every 0.25 s and calling ``progress`` with each reading; returns the
        last one (check ``tasker.client.is_finished(op)``, or ``op.state``, to tell whether the
        timeout ran out). A failed read raises at once."""
        op: Operation = self._run(wait_operation(id, timeout, progress))
        return op


class AsyncOperationMethods:
    """The operations by filter of :class:`~tasker.AsyncClient`."""

    _run: Callable[[Call[Any]], Awaitable[Any]]

    async def start_operation(
        self,
        action: OperationAction,
        filter: Filter | None = None,
        *,
        reason: str | None = None,
        by: str | None = None,
        result: JSON = None,
    ) -> Operation:
        """See :meth:`Client.start_operation`."""
        op: Operation = await self._run(start_operation(action, filter, reason, by, result))
        return op

    async def count_operation(
        self, action: OperationAction, filter: Filter | None = None, *, result: JSON = None
    ) -> OperationCount:
        """See :meth:`Client.count_operation`."""
        count: OperationCount = await self._run(count_operation(action, filter, result))
        return count

    async def operation(self, id: Id) -> Operation:
        """See :meth:`Client.operation`."""
        op: Operation = await self._run(operation(id))
        return op

    async def operations(
        self, *, limit: int | None = None, before: Id | None = None
    ) -> OperationList:
        """See :meth:`Client.operations`."""
        page: OperationList = await self._run(operations(limit, before))
        return page

    async def cancel_operation(self, id: Id) -> Operation:
        """See :meth:`Client.cancel_operation`."""
        op: Operation = await self._run(cancel_operation(id))
        return op

    async def wait_operation(
        self, id: Id, timeout: float, *, progress: Progress | None = None
    ) -> Operation:
        """See :meth:`Client.wait_operation`; ``progress`` is called (not awaited) with each
        reading."""
        op: Operation = await self._run(wait_operation(id, timeout, progress))
        return op
