"""``AsyncClient``: :class:`~tasker.client.Client`'s ``async`` twin, the same constructor and
methods, awaited. It only sends the requests of the calls in ``_calls`` (those of ``Client``
too) and hands back their answers."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Mapping, Sequence
from types import TracebackType
from typing import Any, TypeVar, cast

import httpx

from . import _calls, _schedule_calls
from ._calls import Call, Duration, Id, Time
from ._retry import Pause
from ._transport import DEFAULT_TIMEOUT, Settings
from .alerts import AsyncAlertMethods
from .audit import AsyncAuditMethods
from .clock import AsyncClockMethods
from .counts import AsyncTaskCountMethods
from .errors import ConnectionFailed
from .events import AsyncEventMethods
from .operations import AsyncOperationMethods
from .streams import AsyncStreamMethods
from .webhooks import AsyncWebhookMethods
from .values import (
    JSON,
    Backfilled,
    BatchCreated,
    ConcurrencyLimit,
    Priority,
    PurgeState,
    Purged,
    RateLimit,
    RetentionPolicy,
    Schedule,
    Signal,
    Step,
    StepPage,
    Task,
    TaskPage,
    TaskStateName,
    Transition,
    WorkerInfo,
)

T = TypeVar("T")


class AsyncClient(
    AsyncAlertMethods,
    AsyncAuditMethods,
    AsyncClockMethods,
    AsyncEventMethods,
    AsyncOperationMethods,
    AsyncStreamMethods,
    AsyncTaskCountMethods,
    AsyncWebhookMethods,
):
    """The ``async`` twin of :class:`Client`: the same constructor and methods, awaited, and
    :meth:`iter_tasks` and :meth:`stream` async iterators. Use it as an async context manager, or ``await
    aclose()``."""

    def __init__(
        self,
        base_url: str | None = None,
        *,
        token: str | None = None,
        tls_ca_file: str | os.PathLike[str] | None = None,
        timeout: float | None = DEFAULT_TIMEOUT,
    ) -> None:
        self._settings = Settings.resolve(base_url, token, tls_ca_file, timeout)
        self._http = httpx.AsyncClient(**self._settings.client_options())

    @property
    def base_url(self) -> str:
        """The orchestrator's URL."""
        return self._settings.base_url

    async def aclose(self) -> None:
        """Closes the client's connections."""
        await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"AsyncClient({self.base_url!r})"

    async def _run(self, call: Call[T]) -> T:
        try:
            step = next(call)
            while True:
                if isinstance(step, Pause):
                    await asyncio.sleep(step.seconds)
                    step = call.send(None)
                    continue
                try:
                    with self._settings.errors(step):
                        response = await self._http.request(
                            **self._settings.request_options(step)
                        )
                except ConnectionFailed as e:
                    step = call.throw(e)
                    continue
                step = call.send(response)
        except StopIteration as done:
            return cast(T, done.value)
        finally:
            call.close()

    async def create_task(
        self,
        namespace: str,
        name: str,
        context: JSON = None,
        *,
        version: str | None = None,
        idempotency_key: str | None = None,
        run_at: Time | None = None,
        delay: Duration | None = None,
        priority: Priority | None = None,
        dedupe: Mapping[str, Duration | None] | None = None,
        debounce: Mapping[str, Duration | None] | None = None,
        deadline: Mapping[str, Duration | None] | None = None,
    ) -> Task:
        """See :meth:`Client.create_task`."""
        return await self._run(
            _calls.create_task(
                namespace,
                name,
                context,
                version,
                idempotency_key,
                run_at,
                delay,
                priority,
                dedupe,
                debounce,
                deadline,
            )
        )

    async def create_tasks(self, tasks: Sequence[Mapping[str, JSON]]) -> BatchCreated:
        """See :meth:`Client.create_tasks`."""
        return await self._run(_calls.create_tasks(list(tasks)))

    async def get_task(self, id: Id, *, wait: float | None = None) -> Task:
        """See :meth:`Client.get_task`."""
        return await self._run(_calls.get_task(id, wait))

    async def wait(self, id: Id, timeout: float) -> Task:
        """See :meth:`Client.wait`."""
        return await self._run(_calls.wait(id, timeout))

    async def list_tasks(
        self,
        *,
        state: TaskStateName | None = None,
        namespace: str | None = None,
        name: str | None = None,
        limit: int | None = None,
        before: Id | None = None,
        parent: Id | None = None,
        created_after: Time | None = None,
        created_before: Time | None = None,
        context: Mapping[str, JSON] | None = None,
        counts: bool = False,
        id_prefix: str | None = None,
        idempotency_key: str | None = None,
    ) -> TaskPage:
        """See :meth:`Client.list_tasks`."""
        return await self._run(_calls.list_tasks(
            state, namespace, name, limit, before, parent, created_after, created_before, context,
            counts, id_prefix, idempotency_key,
        ))

    async def iter_tasks(
        self,
        *,
        state: TaskStateName | None = None,
        namespace: str | None = None,
        name: str | None = None,
        page_size: int | None = None,
        before: Id | None = None,
        parent: Id | None = None,
        created_after: Time | None = None,
        created_before: Time | None = None,
        context: Mapping[str, JSON] | None = None,
    ) -> AsyncIterator[Task]:
        """See :meth:`Client.iter_tasks`; ``async for task in client.iter_tasks()``."""
        while True:
            page = await self.list_tasks(
                state=state, namespace=namespace, name=name, limit=page_size, before=before,
                parent=parent, created_after=created_after, created_before=created_before,
                context=context,
            )
            for task in page.tasks:
                yield task
            if page.next_before is None:
                return
            before = page.next_before

    async def cancel(self, id: Id) -> Task:
        """See :meth:`Client.cancel`."""
        return await self._run(_calls.cancel(id))

    async def steps(self, id: Id) -> list[Step]:
        """See :meth:`Client.steps`."""
        return await self._run(_calls.steps(id))

    async def steps_page(
        self, id: Id, *, after: Id | None = None, limit: int | None = None
    ) -> StepPage:
        """See :meth:`Client.steps_page`."""
        return await self._run(_calls.steps_page(id, after, limit))

    async def history(self, id: Id) -> list[Transition]:
        """See :meth:`Client.history`."""
        return await self._run(_calls.history(id))

    async def step_inputs(
        self, id: Id, step: str, *, attempt: int | None = None
    ) -> dict[str, Any]:
        """See :meth:`Client.step_inputs`."""
        return await self._run(_calls.step_inputs(id, step, attempt))

    async def retry(
        self,
        id: Id,
        *,
        step: str | None = None,
        by: str | None = None,
        reason: str | None = None,
    ) -> Task:
        """See :meth:`Client.retry`."""
        return await self._run(_calls.retry(id, step, by, reason))

    async def resolve(
        self,
        id: Id,
        step: str,
        result: JSON,
        *,
        by: str | None = None,
        reason: str | None = None,
    ) -> Task:
        """See :meth:`Client.resolve`."""
        return await self._run(_calls.resolve(id, step, result, by, reason))

    async def signal(
        self, id: Id, name: str, payload: JSON = None, *, signal_id: str | None = None
    ) -> Signal:
        """See :meth:`Client.signal`."""
        return await self._run(_calls.signal(id, name, payload, signal_id))

    async def signals(self, id: Id) -> list[Signal]:
        """See :meth:`Client.signals`."""
        return await self._run(_calls.signals(id))

    async def list_schedules(self, namespace: str | None = None) -> list[Schedule]:
        """See :meth:`Client.list_schedules`."""
        return await self._run(_schedule_calls.list_schedules(namespace))

    async def get_schedule(self, namespace: str, name: str) -> Schedule:
        """See :meth:`Client.get_schedule`."""
        return await self._run(_schedule_calls.get_schedule(namespace, name))

    async def apply_schedule(self, definition: Mapping[str, JSON]) -> Schedule:
        """See :meth:`Client.apply_schedule`."""
        return await self._run(_schedule_calls.apply_schedule(definition))

    async def update_schedule(
        self, namespace: str, name: str, changes: Mapping[str, JSON]
    ) -> Schedule:
        """See :meth:`Client.update_schedule`."""
        return await self._run(_schedule_calls.update_schedule(namespace, name, changes))

    async def delete_schedule(self, namespace: str, name: str) -> None:
        """See :meth:`Client.delete_schedule`."""
        await self._run(_schedule_calls.delete_schedule(namespace, name))

    async def pause_schedule(
        self, namespace: str, name: str, *, note: str | None = None
    ) -> Schedule:
        """See :meth:`Client.pause_schedule`."""
        return await self._run(_schedule_calls.pause_schedule(namespace, name, note))

    async def resume_schedule(self, namespace: str, name: str) -> Schedule:
        """See :meth:`Client.resume_schedule`."""
        return await self._run(_schedule_calls.resume_schedule(namespace, name))

    async def trigger_schedule(self, namespace: str, name: str) -> Task:
        """See :meth:`Client.trigger_schedule`."""
        return await self._run(_schedule_calls.trigger_schedule(namespace, name))

    async def backfill_schedule(
        self, namespace: str, name: str, from_: Time, to: Time
    ) -> Backfilled:
        """See :meth:`Client.backfill_schedule`."""
        return await self._run(_schedule_calls.backfill_schedule(namespace, name, from_, to))

    async def workers(self, all: bool = False) -> list[WorkerInfo]:
        """See :meth:`Client.workers`."""
        return await self._run(_calls.workers(all))

    async def concurrency_limits(self, key_prefix: str | None = None) -> list[ConcurrencyLimit]:
        """See :meth:`Client.concurrency_limits`."""
        return await self._run(_calls.concurrency_limits(key_prefix))

    async def rate_limits(self) -> list[RateLimit]:
        """See :meth:`Client.rate_limits`."""
        return await self._run(_calls.rate_limits())

    async def pause_rate_limit(
        self, key: str, until: Time, *, note: str | None = None
    ) -> RateLimit:
        """See :meth:`Client.pause_rate_limit`."""
        return await self._run(_calls.pause_rate_limit(key, until, note))

    async def resume_rate_limit(self, key: str) -> RateLimit:
        """See :meth:`Client.resume_rate_limit`."""
        return await self._run(_calls.resume_rate_limit(key))

    async def purge(
        self,
        older_than: str,
        *,
        states: list[PurgeState] | None = None,
        dry_run: bool = False,
        limit: int | None = None,
    ) -> Purged:
        """See :meth:`Client.purge`."""
        return await self._run(_calls.purge(older_than, states, dry_run, limit))

    async def retention(self) -> RetentionPolicy:
        """See :meth:`Client.retention`."""
        return await self._run(_calls.retention())
