"""The step stream calls (``read_stream``, ``stream``), sync and async, against stand-ins: a page
read from the API's JSON (client_stand_in), and Server-Sent Events from a socket server of the
standard library whose connections drop mid-way, close before the end or answer errors: the
resume with ``Last-Event-ID``, no gap and no duplicate, and ``children=true`` (a child task's
chunks merged in) asked for on every connection when wanted, never by default.
test_client_streams_live.py reads the streams of a real orchestrator."""

from __future__ import annotations

import asyncio
import json
import socketserver
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from socket import socket
from typing import Any

import pytest

import tasker
import tasker.client
from client_stand_in import Recorder, recorder  # noqa: F401 (the fixture)

TASK_ID = "019a0000-0000-7000-8000-0000000000f1"
STEP_ID = "019a0000-0000-7000-8000-0000000000f2"
#: A child task of TASK_ID's (a ``child:`` step's), and its step.
CHILD_ID = "019a0000-0000-7000-8000-0000000000f3"
CHILD_STEP_ID = "019a0000-0000-7000-8000-0000000000f4"
ROUTE = f"/v1/tasks/{TASK_ID}/stream"


def chunk(offset: int, text: str | None = None, **fields: Any) -> dict[str, Any]:
    """A chunk as the API writes it: ``text`` t<offset> unless given, of TASK_ID's step, in its
    attempt 1."""
    return {
        "offset": offset, "task_id": TASK_ID, "step_id": STEP_ID, "step": "generate",
        "attempt": 1, "seq": offset, "topic": "tokens",
        "text": f"t{offset}" if text is None else text, "end": False, "retry": False,
        "at": "2026-11-30T22:00:00.123456Z", **fields,
    }


def child_chunk(offset: int) -> dict[str, Any]:
    """A chunk of CHILD_ID's step, merged into TASK_ID's stream at ``offset``."""
    return chunk(offset, task_id=CHILD_ID, step_id=CHILD_STEP_ID, step="summarize", seq=0)


def test_read_stream_sends_the_contracts_request_and_reads_a_page(
    recorder: tuple[str, type[Recorder]],  # noqa: F811
) -> None:
    url, api = recorder
    # An end chunk has no text; a JSON chunk (emit) has data and no text.
    end = {k: v for k, v in chunk(3, end=True).items() if k != "text"}
    page = {"task_id": TASK_ID, "chunks": [chunk(2), {**chunk(3, data={"pct": 40}), "text": None}],
            "next": 4, "complete": False}
    ended = (200, {"task_id": TASK_ID, "chunks": [end], "next": 4, "complete": True})
    # Read with children=true: chunk 1 is a child task's.
    merged = (200, {"task_id": TASK_ID, "chunks": [chunk(0), child_chunk(1)], "next": 2,
                    "complete": False})
    api.answers.update({
        ("GET", ROUTE): [(200, page), ended, merged, ended, merged],
        ("GET", f"/v1/tasks/{STEP_ID}/stream"): (404, {"error": {
            "code": "task_not_found", "message": "no such task"}}),
    })
    with tasker.Client(url) as c:
        read = c.read_stream(TASK_ID, from_offset=2, topic="tokens", limit=2)
        assert isinstance(read, tasker.StreamPage)
        assert (read.task_id, read.next_, read.complete) == (uuid.UUID(TASK_ID), 4, False)
        first, second = read.chunks
        assert isinstance(first, tasker.StreamChunk)
        assert (first.offset, first.task_id, first.step_id, first.step) == (
            2, uuid.UUID(TASK_ID), uuid.UUID(STEP_ID), "generate"
        )
        assert (first.attempt, first.seq) == (1, 2)
        assert (first.topic, first.text, first.data, first.end, first.retry) == (
            "tokens", "t2", None, False, False
        )
        assert first.at == datetime(2026, 11, 30, 22, 0, 0, 123456, tzinfo=timezone.utc)
        assert (second.text, second.data) == (None, {"pct": 40})
        last = c.read_stream(uuid.UUID(TASK_ID))
        assert last.complete and last.chunks[0].end and last.chunks[0].text is None
        with pytest.raises(tasker.NotFound) as missing:
            c.read_stream(STEP_ID)
        assert missing.value.code == "task_not_found"
        # With the children's chunks: each says whose task's step emitted it.
        family = c.read_stream(TASK_ID, children=True)
        assert [(x.offset, x.task_id, x.step_id, x.step) for x in family.chunks] == [
            (0, uuid.UUID(TASK_ID), uuid.UUID(STEP_ID), "generate"),
            (1, uuid.UUID(CHILD_ID), uuid.UUID(CHILD_STEP_ID), "summarize"),
        ]

    async def the_async_twin() -> tuple[tasker.StreamPage, tasker.StreamPage]:
        async with tasker.AsyncClient(url) as c:
            return await c.read_stream(TASK_ID, limit=1), await c.read_stream(
                TASK_ID, topic="tokens", children=True
            )

    alone, family = asyncio.run(the_async_twin())
    assert alone.complete and family.next_ == 2
    assert family.chunks[1].task_id == uuid.UUID(CHILD_ID)
    assert [path for _, path, _ in api.requests] == [
        f"{ROUTE}?from=2&topic=tokens&limit=2",
        f"{ROUTE}?from=0",
        f"/v1/tasks/{STEP_ID}/stream?from=0",
        f"{ROUTE}?from=0&children=true",
        f"{ROUTE}?from=0&limit=1",
        f"{ROUTE}?from=0&topic=tokens&children=true",
    ]


# --- Server-Sent Events -----------------------------------------------------------------------

#: What one connection of the stand-in does with its socket.
Act = Callable[[socket], None]


def event(c: dict[str, Any], newline: str = "\n") -> bytes:
    text = f"event: chunk\nid: {c['offset']}\ndata: {json.dumps(c)}\n\n"
    return text.replace("\n", newline).encode()


END = b'event: end\ndata: {"next": 6}\n\n'


def head(*, chunked: bool, status: str = "200 OK", content_type: str = "text/event-stream") -> bytes:
    framing = "Transfer-Encoding: chunked" if chunked else "Connection: close"
    return f"HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\n{framing}\r\n\r\n".encode()


def piece(data: bytes) -> bytes:
    """``data`` as one piece of a chunked body."""
    return b"%x\r\n%s\r\n" % (len(data), data)


def json_answer(status: str, body: Any) -> Act:
    data = json.dumps(body).encode()
    return lambda s: s.sendall(
        f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {len(data)}\r\n"
        "Connection: close\r\n\r\n".encode() + data
    )


def drops_after_three(s: socket, one_of_a_child: bool = False) -> None:
    """Chunks 0, 1 and 2 (a keep-alive comment first, chunk 1 split across pieces; a child
    task's if ``one_of_a_child``), then half of chunk 3 and a piece cut short: the connection
    drops mid-body."""
    one = event(child_chunk(1) if one_of_a_child else chunk(1))
    s.sendall(head(chunked=True) + piece(b": keep-alive\n\n") + piece(event(chunk(0))))
    s.sendall(piece(one[:17]))
    s.sendall(piece(one[17:] + event(chunk(2))))
    s.sendall(b"c8\r\nevent: chunk\nid: 3\n")


def closes_before_the_end(s: socket) -> None:
    """Chunk 2 again (at or below the last one yielded: skipped), then 3 (the step's retry) and
    4, with CRLF line ends; then the server closes without an ``end`` event."""
    retried = chunk(3, "r0", attempt=2, seq=0, retry=True)
    s.sendall(head(chunked=False) + event(chunk(2), "\r\n") + event(retried, "\r\n"))
    s.sendall(event(chunk(4, "r1", attempt=2, seq=1), "\r\n"))


def ends(s: socket) -> None:
    """The attempt's end chunk and the ``end`` event, then the connection is held open: the
    stream must end at the event, not at the close."""
    s.sendall(head(chunked=True) + piece(event(chunk(5, end=True, attempt=2, seq=2))))
    s.sendall(piece(END))
    time.sleep(10)


class SseStandIn:
    """A stand-in for the stream route: each connection (request line and headers kept in
    ``requests``) is answered by the next act of ``acts``, the last one again once the others
    are used."""

    def __init__(self, acts: list[Act]) -> None:
        self.acts = acts
        self.requests: list[tuple[str, dict[str, str]]] = []
        stand_in = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self) -> None:
                target = self.rfile.readline().decode().split()[1]
                headers: dict[str, str] = {}
                while (line := self.rfile.readline().decode()) not in ("\r\n", "\n", ""):
                    name, _, value = line.partition(":")
                    headers[name.strip().lower()] = value.strip()
                stand_in.requests.append((target, headers))
                act = stand_in.acts.pop(0) if len(stand_in.acts) > 1 else stand_in.acts[0]
                act(self.request)

        self.server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.server.block_on_close = False
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def last_event_ids(self) -> list[str | None]:
        return [headers.get("last-event-id") for _, headers in self.requests]


@pytest.fixture
def sse() -> Iterator[Callable[[list[Act]], SseStandIn]]:
    started: list[SseStandIn] = []

    def start(acts: list[Act]) -> SseStandIn:
        started.append(SseStandIn(acts))
        return started[-1]

    yield start
    for stand_in in started:
        stand_in.close()


def resumes(children: bool) -> list[Act]:
    """A stream's connections: dropped after chunk 2, closed after 4, ended after 5; with
    ``children``, chunk 1 is a child task's."""

    def first(s: socket) -> None:
        drops_after_three(s, one_of_a_child=children)

    return [first, closes_before_the_end, ends]


def check_resumed(
    chunks: list[tasker.StreamChunk], api: SseStandIn, took: float, children: bool
) -> None:
    assert [c.offset for c in chunks] == [0, 1, 2, 3, 4, 5]
    child = uuid.UUID(CHILD_ID if children else TASK_ID)
    assert [c.task_id for c in chunks] == [uuid.UUID(TASK_ID), child] + [uuid.UUID(TASK_ID)] * 4
    assert [c.text for c in chunks] == ["t0", "t1", "t2", "r0", "r1", "t5"]
    assert [c.retry for c in chunks] == [False, False, False, True, False, False]
    assert [(c.attempt, c.seq, c.end) for c in chunks[3:]] == [(2, 0, False), (2, 1, False),
                                                               (2, 2, True)]
    # Each connection after the first resumes after the last offset received, and asks for the
    # children's chunks again if it did (only then).
    assert api.last_event_ids() == [None, "2", "4"]
    wanted = f"{ROUTE}?from=0&topic=tokens" + ("&children=true" if children else "")
    for target, headers in api.requests:
        assert target == wanted
        assert headers["accept"] == "text/event-stream"
        assert headers["authorization"] == "Bearer s3cret"
    assert took < 5, f"the stream did not end at the end event ({took:.1f} s)"


@pytest.mark.parametrize("children", [False, True], ids=["alone", "with_children"])
def test_a_stream_resumes_after_a_drop_and_a_close_with_no_gap_and_no_duplicate(
    sse: Any, children: bool
) -> None:
    api = sse(resumes(children))
    started = time.monotonic()
    with tasker.Client(api.url, token="s3cret") as c:
        if children:
            chunks = list(c.stream(TASK_ID, topic="tokens", children=True))
        else:
            chunks = list(c.stream(TASK_ID, topic="tokens"))
    check_resumed(chunks, api, time.monotonic() - started, children)


@pytest.mark.parametrize("children", [False, True], ids=["alone", "with_children"])
def test_the_async_stream_resumes_the_same_way(sse: Any, children: bool) -> None:
    api = sse(resumes(children))

    async def read() -> list[tasker.StreamChunk]:
        async with tasker.AsyncClient(api.url, token="s3cret") as c:
            if children:
                return [x async for x in c.stream(TASK_ID, topic="tokens", children=True)]
            return [x async for x in c.stream(TASK_ID, topic="tokens")]

    started = time.monotonic()
    chunks = asyncio.run(read())
    check_resumed(chunks, api, time.monotonic() - started, children)


def test_a_stream_from_an_offset_asks_for_it_and_a_gateways_error_is_ridden_through(
    sse: Any,
) -> None:
    unavailable = json_answer("503 Service Unavailable", {"error": {
        "code": "storage_unavailable", "message": "restarting"}})
    api = sse([unavailable, ends])
    with tasker.Client(api.url) as c:
        chunks = list(c.stream(uuid.UUID(TASK_ID), from_offset=5))
    assert [c.offset for c in chunks] == [5]
    assert [target for target, _ in api.requests] == [f"{ROUTE}?from=5"] * 2
    assert api.last_event_ids() == [None, None]


def test_an_answer_of_the_api_raises_at_once_and_leaving_early_closes(sse: Any) -> None:
    gone = json_answer("410 Gone", {"error": {"code": "task_purged", "message": "purged",
                                              "details": {"task_id": TASK_ID}}})
    too_many = json_answer("429 Too Many Requests", {"error": {
        "code": "too_many_streams", "message": "the orchestrator serves as many as it may"}})
    page = json_answer("200 OK", {"task_id": TASK_ID, "chunks": [], "next": 0, "complete": True})
    api = sse([gone, too_many, page, drops_after_three])
    with tasker.Client(api.url) as c:
        with pytest.raises(tasker.TaskPurged):
            next(c.stream(TASK_ID))
        with pytest.raises(tasker.ApiError) as refused:
            list(c.stream(TASK_ID))
        assert (refused.value.status, refused.value.code) == (429, "too_many_streams")
        # A server that answers the JSON page to an event stream's request is not followed.
        with pytest.raises(tasker.ClientError, match="not text/event-stream"):
            list(c.stream(TASK_ID))
        stream = c.stream(TASK_ID)
        assert [next(stream).offset, next(stream).offset] == [0, 1]
        stream.close()
    assert len(api.requests) == 4
