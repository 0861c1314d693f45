"""Operations by filter through the client: against a real orchestrator with the Python worker
(conftest: ``orchestrator``, ``python_worker``), sync and async, and their wire against a
stand-in API (client_stand_in). Nothing sleeps but ``wait_operation``'s polls."""

from __future__ import annotations

import asyncio
import uuid
from datetime import datetime, timedelta, timezone
from typing import Any, Iterator

import pytest

import tasker
import tasker.client
from conftest import Orchestrator
from client_stand_in import NS, Recorder, recorder  # noqa: F401 (the fixture)


@pytest.fixture
def client(orchestrator: Orchestrator, python_worker: Any) -> Iterator[tasker.Client]:
    with tasker.Client(orchestrator.url) as c:
        yield c


def failed_tasks(client: tasker.Client, run: str, n: int) -> list[uuid.UUID]:
    """``n`` tasks of retry_then_succeed in error: ``flaky`` has three attempts and succeeds on
    the fourth, so a retry (three more) completes them."""
    context = {"succeed_on_attempt": 4, "run": run}
    ids = [client.create_task(NS, "retry_then_succeed", context).id for _ in range(n)]
    for task_id in ids:
        assert client.wait(task_id, 60).state == "error"
    return ids


def test_a_retry_by_filter_counts_acts_on_every_failed_task_and_completes_them(
    client: tasker.Client,
) -> None:
    run = str(uuid.uuid4())
    ids = failed_tasks(client, run, 3)
    # The filter: this template's tasks with this run's marker in their context.
    matching = {"namespace": NS, "name": "retry_then_succeed", "context": {"run": run},
                "error_kind": "transient", "step": "flaky",
                "created_after": datetime.now(timezone.utc) - timedelta(hours=1)}

    count = client.count_operation("retry", matching)
    assert isinstance(count, tasker.OperationCount) and count.action == "retry"
    assert count.matched == 3 and set(count.sample) == set(ids)
    assert count.filter_.state == "error", "retry acts on tasks in error"
    listed = client.operations(limit=500).operations
    assert all(op.filter_.context != {"run": run} for op in listed), "a dry run starts none"

    started = client.start_operation("retry", matching, reason="upstream fixed", by="user:test")
    assert isinstance(started, tasker.Operation)
    assert (started.action, started.state, started.matched) == ("retry", "running", 3)
    assert (started.reason, started.by) == ("upstream fixed", "user:test")
    assert started.filter_.context == {"run": run} and started.finished_at is None

    readings: list[tasker.Operation] = []
    done = client.wait_operation(started.id, 60, progress=readings.append)
    assert done.state == "complete" and tasker.client.is_finished(done)
    assert done.acted == done.matched == 3 and done.skipped == 0
    assert done.finished_at is not None and done.finished_at >= done.created_at
    assert readings and readings[-1] == done
    assert client.operation(str(started.id)) == done

    reason = f"retried: operation {started.id}: upstream fixed"
    for task_id in ids:
        task = client.wait(task_id, 60)
        assert task.state == "complete", task
        assert task.result == {"after": {"attempt": 1, "parents": {"flaky": {"attempts": 4}}}}
        history = client.history(task_id)
        assert any(t.reason == reason and t.by == "user:test" for t in history), history
    # Nothing is left in error for the same filter.
    assert client.count_operation("retry", matching).matched == 0

    with pytest.raises(tasker.Conflict) as finished:
        client.cancel_operation(started.id)
    assert (finished.value.status, finished.value.code) == (409, "operation_finished")


def test_operations_are_listed_newest_first_a_page_at_a_time(client: tasker.Client) -> None:
    run = str(uuid.uuid4())
    # Operations that match nothing still start, and complete at once.
    ops = [client.start_operation("cancel", {"context": {"run": run}, "name": f"op{n}"})
           for n in range(3)]
    assert [op.matched for op in ops] == [0, 0, 0]
    first = client.operations(limit=2)
    assert [op.id for op in first.operations] == [ops[2].id, ops[1].id]
    assert first.next_before == ops[1].id
    second = client.operations(limit=2, before=first.next_before)
    assert second.operations[0].id == ops[0].id
    everything = client.operations(limit=500)
    assert {op.id for op in ops} <= {op.id for op in everything.operations}
    assert everything.next_before is None


def test_refusals_carry_the_apis_codes(client: tasker.Client) -> None:
    with pytest.raises(tasker.NotFound) as unknown:
        client.operation(uuid.uuid4())
    assert unknown.value.code == "operation_not_found"
    with pytest.raises(tasker.NotFound) as unknown:
        client.cancel_operation(str(uuid.uuid4()))
    assert unknown.value.code == "operation_not_found"
    with pytest.raises(tasker.InvalidRequest) as missing:
        client.count_operation("resolve", {"namespace": NS})
    assert (missing.value.status, missing.value.code) == (400, "missing_result")
    with pytest.raises(tasker.InvalidRequest) as state:
        client.start_operation("retry", {"state": "running"})
    assert state.value.code == "invalid_filter"
    with pytest.raises(tasker.InvalidRequest) as action:
        client.start_operation("delete", {"namespace": NS})  # type: ignore[arg-type]
    assert action.value.code == "invalid_action"


def test_the_async_client_cancels_by_filter(
    orchestrator: Orchestrator, python_worker: Any
) -> None:
    async def scenario() -> None:
        async with tasker.AsyncClient(orchestrator.url) as c:
            run = str(uuid.uuid4())
            later = [await c.create_task(NS, "linear", {"value": n, "run": run}, delay="1h")
                     for n in range(2)]
            ids = {t.id for t in later}
            matching = {"ids": [str(t.id) for t in later], "context": {"run": run}}
            assert (await c.count_operation("cancel", matching)).matched == 2
            started = await c.start_operation("cancel", matching, reason="not needed")
            done = await c.wait_operation(started.id, 60)
            assert (done.state, done.acted, done.matched) == ("complete", 2, 2)
            assert await c.operation(started.id) == done
            assert started.id in [op.id for op in (await c.operations(limit=5)).operations]
            for task_id in ids:
                assert (await c.get_task(task_id)).state == "cancelled"
            with pytest.raises(tasker.Conflict):
                await c.cancel_operation(started.id)

    asyncio.run(scenario())


OP_ID = "019a0000-0000-7000-8000-0000000000c1"
TASK_ID = "019a0000-0000-7000-8000-0000000000c2"
FILTER = {"namespace": NS, "name": "linear", "version": None, "state": "error", "step": None,
          "error_kind": "TimeoutError", "created_after": "2026-11-27T10:00:00Z",
          "created_before": None, "context": {"order": 42}, "ids": None, "queue": None,
          "reason": None, "dead_letters": None}
OPERATION = {
    "id": OP_ID, "action": "resolve", "filter": FILTER, "reason": "by hand", "by": "user:ops",
    "state": "running", "matched": 3, "acted": 1, "skipped": 0, "note": None,
    "created_at": "2026-11-27T10:02:03.123456Z", "updated_at": "2026-11-27T10:02:04Z",
    "finished_at": None,
}
COMPLETE = {**OPERATION, "state": "complete", "acted": 2, "skipped": 1,
            "finished_at": "2026-11-27T10:02:05Z"}


def test_the_operation_calls_send_the_contracts_requests_and_read_its_answers(
    recorder: tuple[str, type[Recorder]],  # noqa: F811
) -> None:
    url, api = recorder
    count = {"action": "resolve", "filter": FILTER, "matched": 3, "sample": [TASK_ID]}
    api.answers.update({
        ("POST", "/v1/operations"): [(200, count), (201, OPERATION)],
        # Then running again, for good: a wait whose timeout runs out.
        ("GET", f"/v1/operations/{OP_ID}"): [
            (200, OPERATION), (200, OPERATION), (200, COMPLETE), (200, OPERATION)],
        ("POST", f"/v1/operations/{OP_ID}/cancel"): [
            (200, {**OPERATION, "state": "cancelled", "note": "cancelled by user:ops"})],
        ("GET", "/v1/operations"): [(200, {"operations": [COMPLETE], "next_before": OP_ID})],
    })
    berlin = timezone(timedelta(hours=1))
    matching = {"namespace": NS, "name": "linear", "error_kind": "TimeoutError", "version": None,
                "created_after": datetime(2026, 11, 27, 11, 0, tzinfo=berlin),
                "context": {"order": 42}, "ids": [uuid.UUID(TASK_ID)]}
    with tasker.Client(url) as c:
        counted = c.count_operation("resolve", matching, result={"value": 1})
        assert counted.sample == [uuid.UUID(TASK_ID)]
        assert counted.filter_.error_kind == "TimeoutError"
        op = c.start_operation("resolve", counted.filter_, result={"value": 1}, reason="by hand")
        assert op.created_at == datetime(2026, 11, 27, 10, 2, 3, 123456, tzinfo=timezone.utc)
        assert op.filter_.created_after == datetime(2026, 11, 27, 10, 0, tzinfo=timezone.utc)
        readings: list[str] = []
        done = c.wait_operation(op.id, 30, progress=lambda o: readings.append(o.state))
        assert readings == ["running", "running", "complete"]
        assert (done.acted, done.skipped, done.note) == (2, 1, None)
        # The timeout runs out: the last reading, still running.
        assert c.wait_operation(OP_ID, 0.3).state == "running"
        cancelled = c.cancel_operation(OP_ID)
        assert (cancelled.state, cancelled.note) == ("cancelled", "cancelled by user:ops")
        page = c.operations(limit=1, before=uuid.UUID(OP_ID))
        assert page.operations == [done] and page.next_before == uuid.UUID(OP_ID)

    posted = [body for method, path, body in api.requests
              if (method, path) == ("POST", "/v1/operations")]
    wire_filter = {"namespace": NS, "name": "linear", "error_kind": "TimeoutError",
                   "created_after": "2026-11-27T10:00:00Z", "context": {"order": 42},
                   "ids": [TASK_ID]}
    assert posted[0] == {"action": "resolve", "filter": wire_filter, "result": {"value": 1},
                         "dry_run": True}
    # The filter read back is sent as it came (its nulls included), its time RFC 3339.
    again = {**FILTER, "created_after": "2026-11-27T10:00:00+00:00"}
    assert posted[1] == {"action": "resolve", "filter": again, "result": {"value": 1},
                         "reason": "by hand", "dry_run": False}
    assert ("GET", f"/v1/operations?limit=1&before={OP_ID}", None) in api.requests
    assert ("POST", f"/v1/operations/{OP_ID}/cancel", None) in api.requests
