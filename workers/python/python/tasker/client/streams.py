"""Step streams (``GET /v1/tasks/{id}/stream``, issue 47): what a task's handlers emitted while
they ran (``ctx.emit``, ``ctx.emit_text``), each chunk with a dense task-wide ``offset``. Read a
page at a time (:meth:`~StreamMethods.read_stream`), or followed as Server-Sent Events as they
come (:meth:`~StreamMethods.stream`), which resumes by itself after a dropped connection
(``_sse.py``). The methods both clients carry, and the answer types, :class:`StreamChunk` and
:class:`StreamPage`.

The types are written here rather than generated: they are the document's ``StreamChunk`` and
``StreamPage`` schemas (tasker-shared/src/api/streams.rs), field for field, and the same class
reads a page's chunks and an event's."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

import httpx

from ._calls import Call, Id, Send, _call, _error
from ._sse import Resume, stream_url
from ._transport import Settings
from .errors import ClientError
from .values import JSON


@dataclass(frozen=True)
class StreamChunk:
    """One chunk of a task's stream. ``offset``: its place in the task's stream (0, 1, 2 … in the
    order the orchestrator kept the chunks of all the task's steps); ``task_id``: the task whose
    step emitted it (the stream's own task, or, read with ``children=True``, one of its child
    tasks, at any depth); ``step_id`` and ``step`` (the name) of the step that emitted it, in its
    ``attempt`` (from 1), ``seq`` its place in that attempt's stream (from 0); ``topic``;
    ``text`` (what ``emit_text`` sent, else ``None``) or ``data`` (what ``emit`` sent, decoded
    JSON, else ``None``); ``end``: the attempt's stream ended here (no text or data); ``retry``:
    the first chunk of a step's retry, so what that step streamed under its earlier attempts is
    superseded by what follows; ``at``: when the handler emitted it (an aware ``datetime``)."""

    offset: int
    task_id: UUID
    step_id: UUID
    step: str
    attempt: int
    seq: int
    topic: str
    text: str | None
    data: JSON
    end: bool
    retry: bool
    at: datetime

    @classmethod
    def from_dict(cls, src: Mapping[str, Any]) -> StreamChunk:
        """A chunk as the API writes it (``text`` and ``data`` may be left out)."""
        return cls(
            offset=int(src["offset"]),
            task_id=UUID(src["task_id"]),
            step_id=UUID(src["step_id"]),
            step=str(src["step"]),
            attempt=int(src["attempt"]),
            seq=int(src["seq"]),
            topic=str(src["topic"]),
            text=src.get("text"),
            data=src.get("data"),
            end=bool(src.get("end", False)),
            retry=bool(src.get("retry", False)),
            at=datetime.fromisoformat(src["at"]),
        )


@dataclass(frozen=True)
class StreamPage:
    """A page of a task's stream: its ``chunks`` in offset order, ``next_`` the offset to read
    from next (``read_stream(id, from_offset=page.next_)``), and ``complete``: the task has
    ended and so has every step attempt's stream, so nothing will follow ``next_``."""

    task_id: UUID
    chunks: list[StreamChunk]
    next_: int
    complete: bool

    @classmethod
    def from_dict(cls, src: Mapping[str, Any]) -> StreamPage:
        """A page as the API writes it."""
        return cls(
            task_id=UUID(src["task_id"]),
            chunks=[StreamChunk.from_dict(c) for c in src["chunks"]],
            next_=int(src["next"]),
            complete=bool(src["complete"]),
        )


def read_stream(
    task_id: Id, from_offset: int, topic: str | None, limit: int | None, children: bool
) -> Call[StreamPage]:
    children_ = "true" if children else None
    params = {"from": from_offset, "topic": topic, "limit": limit, "children": children_}
    request = {
        "method": "get",
        "url": stream_url(task_id),
        "params": {k: v for k, v in params.items() if v is not None},
    }
    return _call(request, StreamPage.from_dict)


_READ_STREAM = """One page of the task's stream (``GET /v1/tasks/{id}/stream``): the chunks
        from the offset ``from_offset`` on (inclusive; 0 by default), of ``topic`` only if given,
        at most ``limit`` of them (1-1,000, the server's default 500), as a
        :class:`~tasker.client.StreamPage`. With ``children`` true, the chunks of the task's
        child tasks (those of its ``child:`` steps, at any depth) of the namespaces the token
        covers are merged in, at offsets of this task's stream (each chunk's ``task_id`` says
        whose it is). Read on from its ``next_``; once ``complete`` is true nothing more will
        come. Raises :class:`~tasker.InvalidRequest` ``invalid_id`` or ``invalid_query``,
        :class:`~tasker.AuthError` ``forbidden`` (the token does not cover the task's
        namespace), :class:`~tasker.NotFound` ``task_not_found`` and
        :class:`~tasker.TaskPurged`."""

_STREAM = """Every chunk of the task's stream from the offset ``from_offset`` on (of ``topic``
        only if given), as :class:`~tasker.client.StreamChunk` values as they come (``GET
        /v1/tasks/{id}/stream`` as Server-Sent Events), until the stream is complete: the task
        has ended and so has every step attempt's stream (the server's ``end`` event). With
        ``children`` true (asked for on every connection), its child tasks' chunks are merged
        in, as :meth:`read_stream` reads them. A chunk with ``retry`` true starts a step's new
        attempt: what that step streamed before is superseded.

        A connection that drops, times out (no keep-alive within the client's ``timeout``) or
        that the server closes before the end is opened again with backoff (0.1 s doubling to
        2 s), with ``Last-Event-ID`` set to the last offset received: no chunk is missed or
        repeated (one at or below the last yielded is skipped). Failures of the connection (and a
        gateway's 502, 503, 504) raise only once they have lasted 30 s in a row; an answer of the
        API raises at once: the errors of :meth:`read_stream`, and :class:`~tasker.ApiError` 429
        ``too_many_streams`` when the orchestrator serves as many streams as it may. Leaving the
        loop early closes the connection."""


class StreamMethods:
    """The step stream calls of :class:`~tasker.Client`."""

    _run: Callable[[Call[Any]], Any]
    _http: httpx.Client
    _settings: Settings

    def read_stream(
        self,
        task_id: Id,
        from_offset: int = 0,
        topic: str | None = None,
        limit: int | None = None,
        children: bool = False,
    ) -> StreamPage:
        page: StreamPage = self._run(read_stream(task_id, from_offset, topic, limit, children))
        return page

    def stream(
        self,
        task_id: Id,
        from_offset: int = 0,
        topic: str | None = None,
        children: bool = False,
    ) -> Iterator[StreamChunk]:
        resume = Resume(task_id, from_offset, topic, children, StreamChunk.from_dict)
        while True:
            request = resume.request()
            try:
                with self._settings.errors(Send(request)), self._http.stream(**request) as answer:
                    if not answer.is_success:
                        answer.read()
                        raise _error(answer)
                    resume.opened(answer.headers.get("content-type"))
                    for line in answer.iter_lines():
                        chunk = resume.line(line)
                        if chunk is not None:
                            yield chunk
                        if resume.ended:
                            return
                pause = resume.closed()
            except ClientError as e:
                pause = resume.failed(e)
            time.sleep(pause)

    read_stream.__doc__ = _READ_STREAM
    stream.__doc__ = _STREAM


class AsyncStreamMethods:
    """The step stream calls of :class:`~tasker.AsyncClient`: ``stream`` is an async iterator
    (``async for chunk in client.stream(task.id)``)."""

    _run: Callable[[Call[Any]], Awaitable[Any]]
    _http: httpx.AsyncClient
    _settings: Settings

    async def read_stream(
        self,
        task_id: Id,
        from_offset: int = 0,
        topic: str | None = None,
        limit: int | None = None,
        children: bool = False,
    ) -> StreamPage:
        page: StreamPage = await self._run(
            read_stream(task_id, from_offset, topic, limit, children)
        )
        return page

    async def stream(
        self,
        task_id: Id,
        from_offset: int = 0,
        topic: str | None = None,
        children: bool = False,
    ) -> AsyncIterator[StreamChunk]:
        resume = Resume(task_id, from_offset, topic, children, StreamChunk.from_dict)
        while True:
            request = resume.request()
            try:
                with self._settings.errors(Send(request)):
                    async with self._http.stream(**request) as answer:
                        if not answer.is_success:
                            await answer.aread()
                            raise _error(answer)
                        resume.opened(answer.headers.get("content-type"))
                        async for line in answer.aiter_lines():
                            chunk = resume.line(line)
                            if chunk is not None:
                                yield chunk
                            if resume.ended:
                                return
                pause = resume.closed()
            except ClientError as e:
                pause = resume.failed(e)
            await asyncio.sleep(pause)

    read_stream.__doc__ = _READ_STREAM
    stream.__doc__ = _STREAM
