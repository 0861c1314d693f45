"""Events sent to a namespace (``/v1/events``, docs/events.md): each starts a task of every
template whose trigger (``on:``) matches it. Their calls, and the methods both clients carry; the
answer types, :class:`Event`, :class:`EventStart`, :class:`EventPage`, :class:`EventsSent` and
:class:`EventItem`, are generated from the API's document. Semantics follow the Rust client
(tasker-client/src/namespace_events.rs)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, cast

from ._api.api.events import get_event, list_events
from ._api.api.events import send_event as send_one
from ._api.api.events import send_events as send_many
from ._api.models import SendEvent, SendEvents
from ._api.types import UNSET
from ._calls import Call, Id, _AsGiven, _call, _given, _id
from .values import JSON, Event, EventPage, EventsSent


def send_event(
    namespace: str, name: str, data: JSON, key: str | None, id: str | None
) -> Call[Event]:
    body = SendEvent(
        namespace=namespace, name=name, data=_given(data), key=_given(key), id=_given(id)
    )
    return _call(send_one._get_kwargs(body=body), Event.from_dict)


def send_events(events: Sequence[Mapping[str, JSON]]) -> Call[EventsSent]:
    # Each item as the caller wrote it (``None`` left out), for the server to judge.
    items = [{k: v for k, v in item.items() if v is not None} for item in events]
    body = cast(SendEvents, _AsGiven(events=items))
    return _call(send_many._get_kwargs(body=body), EventsSent.from_dict)


def events(
    namespace: str | None, name: str | None, before: Id | None, limit: int | None
) -> Call[EventPage]:
    request = list_events._get_kwargs(
        namespace=_given(namespace), name=_given(name),
        before=UNSET if before is None else _id(before), limit=_given(limit),
    )
    return _call(request, EventPage.from_dict)


def event(id: Id) -> Call[Event]:
    return _call(get_event._get_kwargs(_id(id)), Event.from_dict)


_SEND_EVENT = """Sends the event ``name`` (1-64 of ``[A-Za-z0-9_.-]``, such as
        ``"order.created"``) to ``namespace`` with ``data`` (a JSON object, ``{}`` by default)
        and returns it as stored: its ``started`` has one :class:`~tasker.EventStart` per
        template whose trigger matched it, with the ``task_id`` it started or why it was
        ``refused``. ``key`` (1-255 characters) says what the event is about (a customer, an
        order). With an ``id`` (1-255 characters, the sender's own), sending it again in the
        namespace returns the event stored the first time and starts nothing: a retried send is
        safe (:meth:`send_events` tells a repeat apart, ``existing``). Raises
        :class:`~tasker.InvalidRequest` ``invalid_event_name``, ``invalid_event_data`` (not an
        object, or over the server's ``max_context_bytes``), ``invalid_event_key`` or
        ``invalid_event_id``, and :class:`~tasker.AuthError` ``forbidden`` for a namespace the
        token does not cover; nothing is stored then."""

_SEND_EVENTS = """Sends many events in one request and one transaction (``POST
        /v1/events:batch``, at most the server's ``max_batch_tasks``, 10,000 by default). Each
        item is what :meth:`send_event` sends, a dict of the API's fields: ``namespace``,
        ``name`` and optionally ``data``, ``key`` and ``id`` (``None`` values left out).

        The answer has an :class:`~tasker.EventItem` per item, in request order: ``created``,
        ``existing`` (its ``id`` was sent before, or earlier in the batch; ``task_ids`` are the
        tasks it started the first time) or ``refused`` (nothing stored for it; its ``error``
        has the code :meth:`send_event` would raise). One refused item does not fail the
        others. The whole request is refused, nothing stored, with
        :class:`~tasker.InvalidRequest` ``empty_batch``, ``batch_too_large`` (413; ``details``:
        ``events`` and ``limit``) or ``body_too_large``."""

_EVENTS = """One page of events, newest first (``GET /v1/events/log``): of ``namespace`` and
        ``name`` if given; ``limit`` of them (1-500, default 50) older than the event ``before``
        (the previous page's ``next_before``); each with what it started. A token scoped to
        namespaces reads its namespaces' events (:class:`~tasker.AuthError` ``forbidden`` for
        another ``namespace``); :class:`~tasker.InvalidRequest` ``invalid_limit``."""

_EVENT = """The event ``id`` with what it started. An unknown id raises
        :class:`~tasker.NotFound` ``event_not_found``, one of a namespace the token does not
        cover :class:`~tasker.AuthError` ``forbidden``."""


class EventMethods:
    """The events calls of :class:`~tasker.Client`."""

    _run: Callable[[Call[Any]], Any]

    def send_event(
        self,
        namespace: str,
        name: str,
        data: JSON = None,
        *,
        key: str | None = None,
        id: str | None = None,
    ) -> Event:
        sent: Event = self._run(send_event(namespace, name, data, key, id))
        return sent

    def send_events(self, events: Sequence[Mapping[str, JSON]]) -> EventsSent:
        sent: EventsSent = self._run(send_events(events))
        return sent

    def events(
        self,
        namespace: str | None = None,
        name: str | None = None,
        *,
        before: Id | None = None,
        limit: int | None = None,
    ) -> EventPage:
        page: EventPage = self._run(events(namespace, name, before, limit))
        return page

    def event(self, id: Id) -> Event:
        found: Event = self._run(event(id))
        return found

    send_event.__doc__ = _SEND_EVENT
    send_events.__doc__ = _SEND_EVENTS
    events.__doc__ = _EVENTS
    event.__doc__ = _EVENT


class AsyncEventMethods:
    """The events calls of :class:`~tasker.AsyncClient`."""

    _run: Callable[[Call[Any]], Awaitable[Any]]

    async def send_event(
        self,
        namespace: str,
        name: str,
        data: JSON = None,
        *,
        key: str | None = None,
        id: str | None = None,
    ) -> Event:
        sent: Event = await self._run(send_event(namespace, name, data, key, id))
        return sent

    async def send_events(self, events: Sequence[Mapping[str, JSON]]) -> EventsSent:
        sent: EventsSent = await self._run(send_events(events))
        return sent

    async def events(
        self,
        namespace: str | None = None,
        name: str | None = None,
        *,
        before: Id | None = None,
        limit: int | None = None,
    ) -> EventPage:
        page: EventPage = await self._run(events(namespace, name, before, limit))
        return page

    async def event(self, id: Id) -> Event:
        found: Event = await self._run(event(id))
        return found

    send_event.__doc__ = _SEND_EVENT
    send_events.__doc__ = _SEND_EVENTS
    events.__doc__ = _EVENTS
    event.__doc__ = _EVENT
