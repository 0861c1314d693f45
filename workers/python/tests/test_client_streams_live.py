"""The step stream calls against a real orchestrator (conftest: ``tasker_env``, ``orchestrator``),
sync and async: a task's chunks read a page at a time and followed as they come, a step's retry
marked, an unknown task refused. Its templates and their handlers are this file's own (below),
run by a worker of its own that registers them with the session's orchestrator; the handlers
emit with ``ctx.emit_text`` (the worker's side of step streams)."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest

import tasker
from conftest import Orchestrator, TaskerEnv, registering_worker

NS = "python_streams"
TEXTS = [f"t{i}" for i in range(5)]

TEMPLATES = {
    "stream.yaml": f"""namespace: {NS}
name: stream
version: 1.0.0
description: One step that emits `count` text chunks (default 5) on the topic `tokens`
steps:
  - name: generate
    handler: stream_emitter
""",
    "stream_retry.yaml": f"""namespace: {NS}
name: stream_retry
version: 1.0.0
description: One step that emits a chunk, fails its first attempt and emits again on its second
steps:
  - name: generate
    handler: stream_retrier
    retry: {{ max_attempts: 2, backoff: none }}
""",
}

registry = tasker.Registry()


# `stream_emitter`: the stream fixture handler every language's tests assume: `count` (from the
# task's context, default 5) text chunks on the topic `tokens` with the text t<i>, then
# {"emitted": count}. `delay_ms` (default 0) between chunks lets a reader follow them live.
@registry.handler("stream_emitter")
def stream_emitter(ctx: tasker.StepContext) -> dict[str, int]:
    count = int(ctx.context.get("count", 5))
    delay = int(ctx.context.get("delay_ms", 0)) / 1000
    for i in range(count):
        if delay:
            time.sleep(delay)
        ctx.emit_text("tokens", f"t{i}")
    return {"emitted": count}


@registry.handler("stream_retrier")
def stream_retrier(ctx: tasker.StepContext) -> dict[str, int]:
    ctx.emit_text("tokens", f"attempt {ctx.attempt}")
    if ctx.attempt == 1:
        raise tasker.RetryableError("once more", kind="transient")
    return {"attempt": ctx.attempt}


@pytest.fixture(scope="module")
def stream_worker(
    tasker_env: TaskerEnv, orchestrator: Orchestrator, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tasker.Worker]:
    """A worker running this file's handlers; it registers their templates with the session's
    orchestrator when it starts."""
    templates: Path = tmp_path_factory.mktemp("stream_templates")
    for name, yaml in TEMPLATES.items():
        (templates / name).write_text(yaml)
    yield from registering_worker(tasker_env, orchestrator, templates, registry, NS)


@pytest.fixture
def client(orchestrator: Orchestrator, stream_worker: tasker.Worker) -> Iterator[tasker.Client]:
    with tasker.Client(orchestrator.url) as c:
        yield c


def texts(chunks: list[tasker.StreamChunk]) -> list[str | None]:
    return [c.text for c in chunks if not c.end]


def test_a_finished_tasks_stream_is_followed_to_its_end_and_read_a_page_at_a_time(
    client: tasker.Client,
) -> None:
    task = client.create_task(NS, "stream", {"count": 5})
    # The stream ends once the task has ended and its step's stream has: every chunk is kept.
    followed = list(client.stream(task.id))
    assert texts(followed) == TEXTS
    done = client.wait(task.id, 60)
    assert (done.state, done.result) == ("complete", {"generate": {"emitted": 5}})

    page = client.read_stream(task.id)
    assert isinstance(page, tasker.StreamPage)
    assert (page.task_id, page.complete, page.next_) == (task.id, True, len(page.chunks))
    assert page.chunks == followed
    # Dense offsets from 0; the attempt's chunks in order, its end chunk last.
    assert [c.offset for c in page.chunks] == list(range(len(page.chunks)))
    emitted = [c for c in page.chunks if not c.end]
    assert [c.seq for c in emitted] == list(range(5))
    for c in emitted:
        assert isinstance(c, tasker.StreamChunk)
        assert (c.step, c.attempt, c.topic, c.data, c.retry) == ("generate", 1, "tokens", None, False)
        assert isinstance(c.step_id, uuid.UUID)
        assert isinstance(c.at, datetime) and c.at.tzinfo is not None
    assert page.chunks[-1].end and page.chunks[-1].text is None

    two = client.read_stream(task.id, from_offset=1, limit=2)
    assert [c.offset for c in two.chunks] == [1, 2] and two.next_ == 3
    rest = client.read_stream(task.id, from_offset=page.next_)
    assert (rest.chunks, rest.next_, rest.complete) == ([], page.next_, True)
    assert texts(client.read_stream(task.id, topic="tokens").chunks) == TEXTS
    assert texts(client.read_stream(task.id, topic="no_such_topic").chunks) == []
    assert [c.offset for c in client.stream(task.id, from_offset=3)] == [
        c.offset for c in page.chunks[3:]
    ]


def test_a_running_tasks_chunks_are_yielded_as_they_come(client: tasker.Client) -> None:
    task = client.create_task(NS, "stream", {"count": 5, "delay_ms": 200})
    seen: list[tuple[str | None, str]] = []
    for c in client.stream(task.id, topic="tokens"):
        if not c.end:
            # Read while the task runs: its step has not finished when the first chunk comes.
            seen.append((c.text, client.get_task(task.id).state))
    assert [text for text, _ in seen] == TEXTS
    assert seen[0][1] == "running"
    assert client.wait(task.id, 60).state == "complete"


def test_a_steps_retry_is_marked_on_the_first_chunk_of_its_new_attempt(
    client: tasker.Client,
) -> None:
    task = client.create_task(NS, "stream_retry")
    chunks = [c for c in client.stream(task.id) if not c.end]
    assert [(c.text, c.attempt, c.retry) for c in chunks] == [
        ("attempt 1", 1, False), ("attempt 2", 2, True),
    ]
    assert client.wait(task.id, 60).result == {"generate": {"attempt": 2}}


def test_the_async_client_reads_and_follows_the_same_stream(client: tasker.Client) -> None:
    task = client.create_task(NS, "stream", {"count": 3})

    async def scenario() -> None:
        async with tasker.AsyncClient(client.base_url) as c:
            followed = [chunk async for chunk in c.stream(task.id)]
            assert texts(followed) == ["t0", "t1", "t2"]
            page = await c.read_stream(task.id)
            assert page.complete and page.chunks == followed
            with pytest.raises(tasker.NotFound) as missing:
                await c.read_stream(uuid.uuid4())
            assert missing.value.code == "task_not_found"

    asyncio.run(scenario())


def test_an_unknown_task_is_refused_at_once(client: tasker.Client) -> None:
    with pytest.raises(tasker.NotFound) as missing:
        next(client.stream(uuid.uuid4()))
    assert missing.value.code == "task_not_found"
    with pytest.raises(tasker.InvalidRequest) as invalid:
        client.read_stream("not-an-id")
    assert invalid.value.code == "invalid_id"
