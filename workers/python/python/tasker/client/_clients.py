"""``Client``: the blocking client. It only sends the requests of the calls in ``_calls`` and
hands back their answers; ``AsyncClient`` (``_async``) is its ``async`` twin."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator, Mapping, Sequence
from types import TracebackType
from typing import Any, TypeVar, cast

import httpx

from . import _calls, _schedule_calls
from ._calls import Call, Duration, Id, Time
from ._retry import Pause
from ._transport import DEFAULT_TIMEOUT, Settings
from .alerts import AlertMethods
from .audit import AsyncAuditMethods, AuditMethods
from .clock import ClockMethods
from .counts import TaskCountMethods
from .errors import ConnectionFailed
from .events import EventMethods
from .operations import OperationMethods
from .streams import StreamMethods
from .webhooks import WebhookMethods
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


class Client(
    AlertMethods,
    AuditMethods,
    ClockMethods,
    EventMethods,
    OperationMethods,
    StreamMethods,
    TaskCountMethods,
    WebhookMethods,
):
    """A blocking client of one orchestrator's REST API.

    ``base_url`` defaults to ``TASKER_URL``, else ``http://127.0.0.1:8080``; ``token`` (sent as
    ``Authorization: Bearer``) to ``TASKER_TOKEN``; ``tls_ca_file``, a PEM file of CA
    certificates trusted beside the default ones for an ``https://`` orchestrator with a private
    CA, to ``TASKER_TLS_CA_FILE``. ``timeout`` bounds each request in seconds (``None``: no
    bound); a long poll may take its ``wait`` longer. Use it as a context manager, or
    ``close()`` it, to release its connections.

    Every method raises :class:`~tasker.ClientError`: an :class:`~tasker.ApiError` subclass
    with the API's error code when the API refuses, :class:`~tasker.ConnectionFailed` when it
    does not answer.
    """

    def __init__(
        self,
        base_url: str | None = None,
        *,
        token: str | None = None,
        tls_ca_file: str | os.PathLike[str] | None = None,
        timeout: float | None = DEFAULT_TIMEOUT,
    ) -> None:
        self._settings = Settings.resolve(base_url, token, tls_ca_file, timeout)
        self._http = httpx.Client(**self._settings.client_options())

    @property
    def base_url(self) -> str:
        """The orchestrator's URL, e.g. ``http://127.0.0.1:8080``."""
        return self._settings.base_url

    def close(self) -> None:
        """Closes the client's connections."""
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Client({self.base_url!r})"

    def _run(self, call: Call[T]) -> T:
        try:
            step = next(call)
            while True:
                if isinstance(step, Pause):
                    time.sleep(step.seconds)
                    step = call.send(None)
                    continue
                try:
                    with self._settings.errors(step):
                        response = self._http.request(**self._settings.request_options(step))
                except ConnectionFailed as e:
                    # The call decides (a wait retries); any other raises it again from here.
                    step = call.throw(e)
                    continue
                step = call.send(response)
        except StopIteration as done:
            return cast(T, done.value)
        finally:
            call.close()

    def create_task(
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
        """Creates a task of the template ``namespace``/``name`` (its newest version unless
        ``version`` names one) with the input ``context`` (``None``: ``{}``).

        With an ``idempotency_key``, repeating the request returns the task it created instead
        of a new one; the same key with another template or context raises
        :class:`~tasker.Conflict` ``idempotency_key_reused``. An unknown template raises
        :class:`~tasker.NotFound` ``unknown_template``, a context its schema refuses
        :class:`~tasker.InvalidRequest` ``context_schema_violation``.

        A delayed start, at most a year ahead: ``run_at`` (an aware ``datetime`` or an RFC 3339
        string; a past time starts at once) or ``delay`` (``"10m"``, ``"1h30m"``, seconds or a
        ``timedelta``), not both. The task is ``scheduled`` until then (``task.run_at``) and
        :meth:`cancel` stops it like a running one. The API refuses a bad time with
        :class:`~tasker.InvalidRequest` ``invalid_run_at`` (also for both given) or
        ``invalid_delay``; a naive ``datetime`` raises ``ValueError``.

        ``priority`` (``"high"``, ``"normal"`` or ``"low"``) is the task's priority; by
        default its template's (``priority:``), else ``normal``
        (``task.priority`` says which it got). A template with a concurrency or rate limit whose
        key is a JSON pointer into the context needs that value there: a context without it (or
        with a non-scalar) raises :class:`~tasker.InvalidRequest` ``concurrency_key_missing``
        or ``rate_limit_key_missing``, a value over 128 bytes ``concurrency_key_too_long`` or
        ``rate_limit_key_too_long``.

        Start controls (docs/events.md), each a dict as the API takes it, durations as for
        ``delay``: ``dedupe={"key": "invoice-1", "ttl": "24h"}`` makes ``key`` the idempotency key
        for ``ttl``, also after the task is purged (then a repeat raises
        :class:`~tasker.Conflict` ``deduplicated``, whose ``details`` name the task);
        ``debounce={"key": "customer-7", "period": "5s", "max": "1m", "mode": "trailing"}``
        starts one task per burst of requests for ``key``: ``trailing`` (the default) ``period``
        after the last, with its context (each request answers the same ``scheduled`` task),
        ``leading`` at the first. A bad one raises :class:`~tasker.InvalidRequest`
        ``invalid_dedupe`` or ``invalid_debounce``.

        ``deadline={"within": "15m", "action": "cancel"}`` (``within`` as ``delay``; ``action``
        ``"fail"`` by default, or ``"cancel"`` or ``"alert"``) replaces the template's deadline:
        how long the task may run from its start, and what it gets when it runs longer
        (``task.deadline`` shows it). A bad one raises :class:`~tasker.InvalidRequest`
        ``invalid_deadline``."""
        return self._run(
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

    def create_tasks(self, tasks: Sequence[Mapping[str, JSON]]) -> BatchCreated:
        """Creates many tasks in one request and one transaction (``POST /v1/tasks:batch``, at
        most the server's ``max_batch_tasks``, 10,000 by default). Each item is what
        :meth:`create_task` sends, a dict of the API's fields: ``namespace``, ``name`` and
        optionally ``version``, ``context``, ``idempotency_key``, ``priority``, ``run_at`` (an
        aware ``datetime`` or an RFC 3339 string) and ``delay`` (as :meth:`create_task` takes
        them).

        The answer has a :class:`~tasker.BatchItemResult` per item, in request order: ``created``,
        ``existing`` (its idempotency key had created that task) or ``refused`` (nothing created
        for it; its ``error`` has the code :meth:`create_task` would raise, e.g.
        ``unknown_template``). One refused item does not fail the others. The whole request is
        refused, nothing created, with :class:`~tasker.InvalidRequest` ``empty_batch``,
        ``duplicate_idempotency_key`` (two items share a key; ``details``: ``key`` and
        ``indexes``), ``batch_too_large`` (413; ``details``: ``tasks`` and ``limit``) or
        ``body_too_large``."""
        return self._run(_calls.create_tasks(list(tasks)))

    def get_task(self, id: Id, *, wait: float | None = None) -> Task:
        """The task ``id``. With ``wait`` (seconds, at most the server's
        ``max_wait_seconds``), one long poll: the answer comes as soon as the task is terminal,
        or when ``wait`` runs out. :meth:`wait` takes any timeout. An unknown id raises
        :class:`~tasker.NotFound` ``task_not_found``, a purged task's :class:`~tasker.TaskPurged`
        (every call on a task id does)."""
        return self._run(_calls.get_task(id, wait))

    def wait(self, id: Id, timeout: float) -> Task:
        """Waits up to ``timeout`` seconds for the task to become terminal and returns it as it
        is then: check ``tasker.is_terminal(task)`` (or ``task.state``) to tell whether the timeout ran
        out. Any timeout works: it long polls 25 s at a time, less for a server with a lower
        cap. It rides through restarts: a poll the connection drops or refuses (or a gateway's
        502, 503, 504) is sent again with backoff (0.1 s doubling to 2 s) until ``timeout``
        runs out, and only then raises :class:`~tasker.ConnectionFailed`. An answer of the API
        (a 4xx) raises at once: a task the retention policy purged raises
        :class:`~tasker.TaskPurged`."""
        return self._run(_calls.wait(id, timeout))

    def list_tasks(
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
        """One page of tasks, newest first: of a ``state`` (``scheduled``, ``running``,
        ``complete``, ``error``, ``cancelled``), a ``namespace``, a template ``name``, the child
        tasks of the task ``parent``; ``limit`` of them (1-500, default 50) created before the
        task ``before`` (the previous page's ``next_before``).

        ``created_after`` and ``created_before`` (aware ``datetime`` or RFC 3339 strings) keep
        the tasks created at or after, and strictly before, a time; ``context`` (a ``dict``,
        sent as JSON text) the tasks whose context contains it: ``{"order_id": 42}`` matches
        ``{"order_id": 42, "rush": True}``, nested objects by subset, lists by containment.
        :class:`~tasker.InvalidRequest` ``invalid_time`` for a time that is not RFC 3339 (a
        naive ``datetime`` raises ``ValueError``), ``invalid_context_filter`` for a ``context``
        that is not an object. With ``counts=True`` the page's ``counts`` is a
        :class:`~tasker.TaskCounts`: how many tasks of each state the filters match, ``state``,
        ``before`` and ``limit`` left out (see :meth:`task_counts`). ``id_prefix`` finds the
        tasks whose id begins with these hexadecimal digits (4 to 32, hyphens allowed;
        ``invalid_id_prefix`` otherwise), ``idempotency_key`` the task started with that key."""
        return self._run(_calls.list_tasks(
            state, namespace, name, limit, before, parent, created_after, created_before, context,
            counts, id_prefix, idempotency_key,
        ))

    def iter_tasks(
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
    ) -> Iterator[Task]:
        """Every task matching the filters of :meth:`list_tasks`, newest first, read a page
        (``page_size`` tasks) at a time as the iteration goes."""
        while True:
            page = self.list_tasks(
                state=state, namespace=namespace, name=name, limit=page_size, before=before,
                parent=parent, created_after=created_after, created_before=created_before,
                context=context,
            )
            yield from page.tasks
            if page.next_before is None:
                return
            before = page.next_before

    def cancel(self, id: Id) -> Task:
        """Cancels a running (or ``scheduled``) task: its steps that have not started never
        will. A terminal task raises :class:`~tasker.Conflict` ``task_not_running``."""
        return self._run(_calls.cancel(id))

    def steps(self, id: Id) -> list[Step]:
        """Every step of the task, in id order, read page by page."""
        return self._run(_calls.steps(id))

    def steps_page(self, id: Id, *, after: Id | None = None, limit: int | None = None) -> StepPage:
        """One page of the task's steps in id order: ``limit`` of them (1-5,000, default
        1,000, fewer when their results are large) after the step ``after`` (the previous
        page's ``next``)."""
        return self._run(_calls.steps_page(id, after, limit))

    def history(self, id: Id) -> list[Transition]:
        """Every transition of the task and its steps, oldest first."""
        return self._run(_calls.history(id))

    def step_inputs(self, id: Id, step: str, *, attempt: int | None = None) -> dict[str, Any]:
        """One attempt of a step (name or id; the latest unless ``attempt``) as its handler
        received it — context, parent results, batch, attempt — with its type, retry policy and
        latest error, as a dict: what :func:`tasker.testing.replay` runs a local handler on."""
        return self._run(_calls.step_inputs(id, step, attempt))

    def retry(
        self,
        id: Id,
        *,
        step: str | None = None,
        by: str | None = None,
        reason: str | None = None,
    ) -> Task:
        """Runs the step that failed a task in ``error`` again (with its template's attempts;
        completed steps keep their results) and returns the task, ``running`` again. ``step``
        (a name or id) insists on that step. ``by`` and ``reason`` go into the history. Raises
        :class:`~tasker.Conflict` ``task_not_failed`` (``step_not_failed``) otherwise."""
        return self._run(_calls.retry(id, step, by, reason))

    def resolve(
        self,
        id: Id,
        step: str,
        result: JSON,
        *,
        by: str | None = None,
        reason: str | None = None,
    ) -> Task:
        """Completes the step (name or id) that failed a task in ``error`` with ``result``, as
        if its handler had returned it, and lets the task go on from there. ``by`` and
        ``reason`` go into the history."""
        return self._run(_calls.resolve(id, step, result, by, reason))

    def signal(
        self, id: Id, name: str, payload: JSON = None, *, signal_id: str | None = None
    ) -> Signal:
        """Sends the signal ``name`` with ``payload`` (any JSON, at most 64 KiB) to the task:
        the wait step waiting for ``name`` (now, or once one starts waiting) completes with
        ``payload`` as its result. With a ``signal_id`` (1-128 characters), sending it again
        with the same payload returns the signal sent first and changes nothing; another
        payload raises :class:`~tasker.Conflict` ``signal_conflict``. Without one, the server
        makes one and each call is a new signal. A finished task raises
        :class:`~tasker.Conflict` ``task_finished``; a name that is not 1-64 of
        ``[A-Za-z0-9_.-]`` :class:`~tasker.InvalidRequest` ``invalid_signal_name``."""
        return self._run(_calls.signal(id, name, payload, signal_id))

    def signals(self, id: Id) -> list[Signal]:
        """Every signal sent to the task, oldest first."""
        return self._run(_calls.signals(id))

    def list_schedules(self, namespace: str | None = None) -> list[Schedule]:
        """Every schedule, or those of a ``namespace``."""
        return self._run(_schedule_calls.list_schedules(namespace))

    def get_schedule(self, namespace: str, name: str) -> Schedule:
        """The schedule ``namespace``/``name``, with its ``upcoming`` fire times. None raises
        :class:`~tasker.NotFound` ``schedule_not_found``."""
        return self._run(_schedule_calls.get_schedule(namespace, name))

    def apply_schedule(self, definition: Mapping[str, JSON]) -> Schedule:
        """Creates the schedule ``definition`` describes, or updates the one of its
        ``namespace`` and ``name`` (a paused one stays paused): ``namespace``, ``name``,
        ``template``, ``cron`` and optionally ``version``, ``timezone``, ``context``,
        ``overlap``, ``catch_up``, as in a schedule's YAML file. A definition the API refuses
        raises :class:`~tasker.InvalidRequest` (``invalid_schedule``, ``invalid_cron``,
        ``invalid_timezone``, ...), an unknown template :class:`~tasker.NotFound`
        ``unknown_template``."""
        return self._run(_schedule_calls.apply_schedule(definition))

    def update_schedule(self, namespace: str, name: str, changes: Mapping[str, JSON]) -> Schedule:
        """Changes some fields of a schedule's definition (``{"cron": "0 3 * * *"}``) and
        returns it."""
        return self._run(_schedule_calls.update_schedule(namespace, name, changes))

    def delete_schedule(self, namespace: str, name: str) -> None:
        """Deletes a schedule; the tasks it created are left as they are."""
        self._run(_schedule_calls.delete_schedule(namespace, name))

    def pause_schedule(self, namespace: str, name: str, *, note: str | None = None) -> Schedule:
        """Pauses a schedule (it fires no more until :meth:`resume_schedule`), with a ``note``
        saying why."""
        return self._run(_schedule_calls.pause_schedule(namespace, name, note))

    def resume_schedule(self, namespace: str, name: str) -> Schedule:
        """Resumes a paused schedule: its next fire is computed from now (the fires of the
        paused time are not caught up)."""
        return self._run(_schedule_calls.resume_schedule(namespace, name))

    def trigger_schedule(self, namespace: str, name: str) -> Task:
        """Creates a task of the schedule now, whatever its overlap policy, and returns it."""
        return self._run(_schedule_calls.trigger_schedule(namespace, name))

    def backfill_schedule(self, namespace: str, name: str, from_: Time, to: Time) -> Backfilled:
        """Creates the tasks of the schedule's fire times from ``from_`` to ``to`` (aware
        ``datetime`` values or RFC 3339 strings) that have none yet: repeating a backfill
        creates nothing new. More than 1,000 fire times raise :class:`~tasker.InvalidRequest`
        ``backfill_too_large``."""
        return self._run(_schedule_calls.backfill_schedule(namespace, name, from_, to))

    def workers(self, all: bool = False) -> list[WorkerInfo]:
        """The workers the orchestrator knows (their heartbeats), live ones only unless ``all``
        (then also those not seen for longer than the liveness window, with ``live`` false):
        which namespaces and handlers each serves."""
        return self._run(_calls.workers(all))

    def concurrency_limits(self, key_prefix: str | None = None) -> list[ConcurrencyLimit]:
        """The concurrency keys with a slot in use or a step throttled, and the ones used most
        recently (at most 1,000): each one's ``limit``, slots ``in_use`` and steps ``throttled``.
        ``key_prefix`` keeps the keys that start with it (``"shop/charge_customer:"``)."""
        return self._run(_calls.concurrency_limits(key_prefix))

    def rate_limits(self) -> list[RateLimit]:
        """The rate keys: each one's ``limit`` per ``per_ms``, ``burst``, steps ``throttled``
        and pause (``paused_until``, ``pause_note``)."""
        return self._run(_calls.rate_limits())

    def pause_rate_limit(self, key: str, until: Time, *, note: str | None = None) -> RateLimit:
        """Pauses the rate key ``key``: no step of it starts before ``until`` (an aware
        ``datetime`` or an RFC 3339 string, in the future and at most a year ahead; else
        :class:`~tasker.InvalidRequest` ``invalid_until``), with a ``note`` saying why.
        Returns the key, paused. A key no step ever used raises :class:`~tasker.NotFound`
        ``unknown_rate_limit``; it takes a token with the ``write`` scope not restricted to
        namespaces (:class:`~tasker.AuthError` otherwise)."""
        return self._run(_calls.pause_rate_limit(key, until, note))

    def resume_rate_limit(self, key: str) -> RateLimit:
        """Ends the pause of the rate key ``key`` now and returns the key. The same errors and
        scope as :meth:`pause_rate_limit`."""
        return self._run(_calls.resume_rate_limit(key))

    def purge(
        self,
        older_than: str,
        *,
        states: list[PurgeState] | None = None,
        dry_run: bool = False,
        limit: int | None = None,
    ) -> Purged:
        """Purges finished tasks whose ``completed_at`` is older than ``older_than`` (a duration
        such as ``"90m"``, ``"36h"`` or ``"30d"``, at least an hour), with their steps,
        transitions, signals and dead letters (``POST /v1/purge``). ``states``: of those
        finished states (``complete``, ``error``, ``cancelled``; all three by default); never a
        task that is unfinished or whose parent or child task is. ``dry_run`` counts what would
        go and deletes nothing (``rows`` and ``bytes`` are then ``None``). ``limit`` (1-100,000,
        the server's default 10,000) bounds the tasks of one call: ``more`` is true when it
        stopped there with more left, so call again.

        A purged task's id answers :class:`~tasker.TaskPurged` (``410 task_purged``) for as long
        as the server keeps its tombstone. Refused with :class:`~tasker.InvalidRequest`
        ``invalid_older_than``, ``invalid_state`` or ``invalid_limit``; it takes a token not
        restricted to namespaces (:class:`~tasker.AuthError` ``forbidden`` otherwise)."""
        return self._run(_calls.purge(older_than, states, dry_run, limit))

    def retention(self) -> RetentionPolicy:
        """The retention policy the orchestrator runs (``GET /v1/retention``): how long finished
        tasks of each state are kept before it purges them and purged ids answer
        :class:`~tasker.TaskPurged` (durations such as ``"30d"``, or ``"never"``), the purge's
        pace, and ``last_purged_at``, when the most recently purged task still remembered was
        purged (``None`` when none is). Any valid token may read it."""
        return self._run(_calls.retention())
