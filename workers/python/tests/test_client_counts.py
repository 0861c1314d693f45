"""Counts by state for a task filter through the client (``task_counts``, ``list_tasks(...,
counts=True)``): against a real orchestrator with the Python worker (conftest:
``orchestrator``, ``python_worker``), sync and async."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any, Iterator

import pytest

import tasker
from conftest import Orchestrator
from client_stand_in import NS


@pytest.fixture
def client(orchestrator: Orchestrator, python_worker: Any) -> Iterator[tasker.Client]:
    with tasker.Client(orchestrator.url) as c:
        yield c


def test_task_counts_count_each_state_the_filter_matches(
    client: tasker.Client, orchestrator: Orchestrator
) -> None:
    run = str(uuid.uuid4())
    # ``flaky`` has three attempts: it fails on all of them when asked to succeed on the fourth.
    failing = [client.create_task(NS, "retry_then_succeed", {"succeed_on_attempt": 4, "run": run})
               for _ in range(2)]
    passing = [client.create_task(NS, "retry_then_succeed", {"succeed_on_attempt": 1, "run": run})
               for _ in range(3)]
    later = [client.create_task(NS, "retry_then_succeed", {"run": run}, delay="1h")
             for _ in range(2)]
    client.cancel(later[1].id)
    for task in failing:
        assert client.wait(task.id, 60).state == "error"
    for task in passing:
        assert client.wait(task.id, 60).state == "complete"

    counts = client.task_counts(namespace=NS, name="retry_then_succeed", context={"run": run})
    assert isinstance(counts, tasker.TaskCounts)
    assert (counts.scheduled, counts.running, counts.complete, counts.error, counts.cancelled,
            counts.total) == (1, 0, 3, 2, 1, 7)

    # A state filter (and the page's limit) narrows the page, not its counts.
    page = client.list_tasks(state="error", context={"run": run}, limit=1, counts=True)
    assert [t.state for t in page.tasks] == ["error"] and page.next_before is not None
    assert page.counts == counts
    # Without counts=true the page has none.
    assert not client.list_tasks(context={"run": run}, limit=1).counts
    # Filters that match nothing count nothing.
    none = client.task_counts(name="linear", context={"run": run})
    assert (none.total, none.error, none.complete) == (0, 0, 0)
    with pytest.raises(tasker.InvalidRequest) as bad:
        client.task_counts(context=["run"])  # type: ignore[arg-type]
    assert bad.value.code == "invalid_context_filter"

    async def the_async_client() -> tasker.TaskCounts:
        async with tasker.AsyncClient(orchestrator.url) as c:
            return await c.task_counts(namespace=NS, context={"run": run})

    assert asyncio.run(the_async_client()) == counts


def test_a_task_is_found_by_the_beginning_of_its_id_or_by_its_idempotency_key(
    client: tasker.Client,
) -> None:
    key = f"lookup-{uuid.uuid4()}"
    task = client.create_task(NS, "retry_then_succeed", {}, idempotency_key=key, delay="1h")
    by_prefix = client.list_tasks(id_prefix=str(task.id)[:28])
    assert [t.id for t in by_prefix.tasks] == [task.id]
    assert [t.id for t in client.list_tasks(idempotency_key=key).tasks] == [task.id]
    assert client.list_tasks(idempotency_key=key + "-other").tasks == []
    with pytest.raises(tasker.InvalidRequest) as bad:
        client.list_tasks(id_prefix="nothex")
    assert bad.value.code == "invalid_id_prefix"
    client.cancel(task.id)
