"""A task's stream read as Server-Sent Events (``GET /v1/tasks/{id}/stream`` with ``Accept:
text/event-stream``), written once for the sync and the async client: the lines of an answer
into events, and where a stream stands across its connections (:class:`Resume`). Each client
only sends the requests and hands over the lines (``streams.py``).

The events: ``chunk`` (its ``id`` the chunk's offset, its data the chunk as JSON), ``end`` (data
``{"next": N}``: the stream is complete and the server closes) and comments (keep-alives). A
connection that drops, or that the server closes before ``end``, is opened again with
``Last-Event-ID`` set to the last offset received: the server resumes after it, and a chunk at or
below it is skipped, so the caller sees each chunk once and in order."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from ._retry import Backoff, transient
from .errors import ClientError

if TYPE_CHECKING:
    from ._calls import Id
    from .streams import StreamChunk

#: Seconds a stream keeps opening its connection again while every attempt fails (refused,
#: dropped, a gateway's 502, 503, 504) before it raises the last error.
RECONNECT_FOR = 30.0

#: The media type of an event stream.
EVENT_STREAM = "text/event-stream"


def stream_url(task_id: Id) -> str:
    """The stream's route, the id percent-encoded (a malformed one is the server's to refuse)."""
    return f"/v1/tasks/{quote(str(task_id), safe='')}/stream"


@dataclass(frozen=True)
class SseEvent:
    """One event of an event stream: its type (``message`` when it names none), its ``id`` (as
    sent, ``None`` when it has none) and its data lines joined with newlines."""

    event: str
    id: str | None
    data: str


@dataclass
class SseParser:
    """An event stream's lines (without their line ends) into events, as the HTML standard
    reads them: ``field: value`` lines, one leading space of the value dropped, ``data`` lines
    joined, comment lines (``:``) and unknown fields ignored, an event dispatched at a blank
    line (none when it has no data)."""

    _event: str = ""
    _id: str | None = None
    _data: list[str] = field(default_factory=list)

    def line(self, line: str) -> SseEvent | None:
        """Reads one line; the event it completes, if it completes one."""
        if line == "":
            return self._dispatch()
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "event":
            self._event = value
        elif name == "data":
            self._data.append(value)
        elif name == "id" and "\0" not in value:
            self._id = value
        return None

    def reset(self) -> None:
        """Forgets a half-read event (a new connection starts afresh)."""
        self._event, self._id, self._data = "", None, []

    def _dispatch(self) -> SseEvent | None:
        event = SseEvent(self._event or "message", self._id, "\n".join(self._data))
        had_data = bool(self._data)
        self.reset()
        return event if had_data else None


class Resume:
    """Where one call of ``stream`` stands across its connections: the request of the next
    connection (``Last-Event-ID`` once a chunk came), the last offset yielded, whether ``end``
    came, and the pause before opening a connection again (a backoff of 0.1 s doubling to 2 s,
    reset by each chunk; :data:`RECONNECT_FOR` seconds of failures in a row raise the last).
    Every connection asks for the same ``from`` (``Last-Event-ID`` wins over it on the server),
    ``topic`` and ``children``. ``parse`` reads a chunk's JSON."""

    def __init__(
        self,
        task_id: Id,
        from_offset: int,
        topic: str | None,
        children: bool,
        parse: Callable[[Mapping[str, Any]], StreamChunk],
    ) -> None:
        self.url = stream_url(task_id)
        self._parse = parse
        self.params: dict[str, Any] = {"from": from_offset}
        if topic is not None:
            self.params["topic"] = topic
        if children:
            self.params["children"] = "true"
        #: The offset of the last chunk yielded, ``None`` before the first.
        self.last: int | None = None
        #: Whether the ``end`` event came: the stream is complete.
        self.ended = False
        self._parser = SseParser()
        self._backoff = Backoff()
        self._failing_since: float | None = None

    def request(self) -> dict[str, Any]:
        """Keyword arguments of ``httpx.Client.stream`` for the next connection."""
        headers = {"Accept": EVENT_STREAM}
        if self.last is not None:
            headers["Last-Event-ID"] = str(self.last)
        return {"method": "GET", "url": self.url, "params": dict(self.params), "headers": headers}

    def opened(self, content_type: str | None) -> None:
        """A connection was answered with success: it must be an event stream (not a page of
        JSON, which a server without the route's streaming answers would send)."""
        if (content_type or "").split(";")[0].strip().lower() != EVENT_STREAM:
            raise ClientError(
                f"GET {self.url}: the answer is {content_type or 'untyped'}, not {EVENT_STREAM}"
            )
        self._parser.reset()
        self._failing_since = None

    def line(self, line: str) -> StreamChunk | None:
        """Reads one line of the answer; the chunk to yield, if it completes a new one. Sets
        :attr:`ended` at the ``end`` event."""
        event = self._parser.line(line)
        if event is None:
            return None
        if event.event == "end":
            self.ended = True
            return None
        if event.event != "chunk":
            return None
        try:
            chunk = self._parse(json.loads(event.data))
        except (ValueError, KeyError, TypeError) as e:
            raise ClientError(f"GET {self.url}: a chunk that is not the API's: {e}") from e
        if self.last is not None and chunk.offset <= self.last:
            return None  # sent again after a reconnection: yielded already
        self.last = chunk.offset
        self._backoff.reset()
        return chunk

    def closed(self) -> float:
        """The connection ended before the ``end`` event: seconds to pause before the next."""
        return self._backoff.next()

    def failed(self, error: ClientError) -> float:
        """A connection failed with ``error``: seconds to pause before the next, or ``error``
        raised when it is not the connection's (an answer of the API: 4xx, 500) or the failures
        have lasted :data:`RECONNECT_FOR` seconds."""
        now = time.monotonic()
        if self._failing_since is None:
            self._failing_since = now
        if not transient(error) or now - self._failing_since >= RECONNECT_FOR:
            raise error
        return self._backoff.next()
