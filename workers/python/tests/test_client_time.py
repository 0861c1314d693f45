"""The time and composition calls (delays, signals, schedules, children, workers, list
filters) against a stand-in API (client_stand_in): the requests the contract describes and
the answers read back."""

from __future__ import annotations

import asyncio
import uuid
from datetime import datetime, timedelta, timezone

import pytest

import tasker
from client_stand_in import NS, APPROVED, SCHEDULED_TASK, WAIT_STEP, SIGNAL, SCHEDULE, Recorder, recorder  # noqa: F401 (the fixture)


def test_the_time_calls_send_the_contracts_requests_and_read_its_answers(
    recorder: tuple[str, type[Recorder]],
) -> None:
    url, api = recorder
    task_path = f"/v1/tasks/{SCHEDULED_TASK['id']}"
    schedule_path = f"/v1/schedules/{NS}/nightly%20report"
    api.answers.update({
        ("POST", "/v1/tasks"): (201, SCHEDULED_TASK),
        ("GET", f"{task_path}/steps"): (200, {"task_id": SCHEDULED_TASK["id"], "steps": [WAIT_STEP], "next": None}),
        ("POST", f"{task_path}/signals/approved"): (201, SIGNAL),
        ("GET", f"{task_path}/signals"): (200, {"signals": [SIGNAL]}),
        ("GET", "/v1/schedules"): (200, {"schedules": [SCHEDULE]}),
        ("GET", schedule_path): (200, {**SCHEDULE, "upcoming": ["2026-11-27T01:30:00Z"]}),
        ("POST", "/v1/schedules"): (201, SCHEDULE),
        ("PATCH", schedule_path): (200, SCHEDULE),
        ("DELETE", schedule_path): (204, None),
        ("POST", f"{schedule_path}/pause"): (200, {**SCHEDULE, "paused": True, "note": "why"}),
        ("POST", f"{schedule_path}/resume"): (200, SCHEDULE),
        ("POST", f"{schedule_path}/trigger"): (201, {**SCHEDULED_TASK, "state": "running"}),
        ("POST", f"{schedule_path}/backfill"): (
            200, {"created": 1, "existing": 1, "task_ids": [PARENT_ID, CHILD_LINK["step_id"]]},
        ),
    })
    berlin = timezone(timedelta(hours=1))
    with tasker.Client(url) as c:
        at = datetime(2026, 11, 27, 3, 30, tzinfo=berlin)
        task = c.create_task(NS, "linear", {"value": 6}, run_at=at)
        assert (task.state, tasker.is_terminal(task)) == ("scheduled", False)
        assert task.run_at == datetime(2026, 11, 27, 2, 30, tzinfo=timezone.utc)
        for delay in ("10m", 600, 600.0, 1.5, timedelta(minutes=10)):
            c.create_task(NS, "linear", {"value": 6}, delay=delay)
        c.create_task(NS, "linear")
        with pytest.raises(ValueError, match="naive datetime"):
            c.create_task(NS, "linear", run_at=datetime(2026, 11, 27))

        [step] = c.steps(task.id)
        assert step.wait == tasker.StepWait(
            kind="signal", signal="approved", event=None,
            until=datetime(2026, 12, 3, 9, tzinfo=timezone.utc), on_timeout="fail",
        )
        assert (step.step_type, step.state) == ("wait", "waiting")

        sent = c.signal(task.id, "approved", APPROVED, signal_id="approval-1")
        assert sent == tasker.Signal(
            task_id=task.id, name="approved", signal_id="approval-1", payload=APPROVED,
            received_at=datetime(2026, 11, 26, 9, 0, 1, tzinfo=timezone.utc),
            consumed_by=None, consumed_at=None,
        )
        c.signal(task.id, "approved")
        assert c.signals(task.id) == [sent]

        [listed] = c.list_schedules(NS)
        assert not listed.upcoming and listed.next_fire_at is not None
        assert listed.name == "nightly report" and listed.catch_up == "1h"
        assert c.list_schedules() == [listed]
        shown = c.get_schedule(NS, "nightly report")
        assert shown.upcoming == [datetime(2026, 11, 27, 1, 30, tzinfo=timezone.utc)]
        definition = {"namespace": NS, "name": "nightly report", "template": "linear",
                      "cron": "30 2 * * *"}
        assert c.apply_schedule(definition) == listed
        assert c.update_schedule(NS, "nightly report", {"cron": "0 3 * * *"}) == listed
        assert c.delete_schedule(NS, "nightly report") is None
        assert c.pause_schedule(NS, "nightly report", note="why").note == "why"
        c.pause_schedule(NS, "nightly report")
        assert not c.resume_schedule(NS, "nightly report").paused
        assert c.trigger_schedule(NS, "nightly report").state == "running"
        backfill = c.backfill_schedule(
            NS, "nightly report", datetime(2026, 1, 1, tzinfo=timezone.utc), "2026-01-02T00:00:00Z"
        )
        assert backfill == tasker.Backfill(
            created=1, existing=1, task_ids=[uuid.UUID(PARENT_ID), uuid.UUID(CHILD_LINK["step_id"])]
        )
        with pytest.raises(tasker.NotFound):
            c.get_schedule(NS, "missing")

    async def the_async_twin() -> None:
        async with tasker.AsyncClient(url) as c:
            assert (await c.signals(task.id)) == [sent]
            assert (await c.signal(task.id, "approved", APPROVED, signal_id="approval-1")) == sent
            assert (await c.list_schedules(NS)) == [listed]
            assert (await c.delete_schedule(NS, "nightly report")) is None
            assert (await c.pause_schedule(NS, "nightly report", note="why")).paused
            await c.create_task(NS, "linear", {"value": 6}, delay=30)

    asyncio.run(the_async_twin())

    sent_bodies = [(m, p, b) for m, p, b in api.requests]
    create = {"namespace": NS, "name": "linear", "context": {"value": 6}}
    assert sent_bodies == [
        ("POST", "/v1/tasks", {**create, "run_at": "2026-11-27T02:30:00Z"}),
        *[("POST", "/v1/tasks", {**create, "delay": d})
          for d in ("10m", "600s", "600s", "1500ms", "600s")],
        ("POST", "/v1/tasks", {**create, "context": {}}),
        ("GET", f"{task_path}/steps?limit=1000", None),
        ("POST", f"{task_path}/signals/approved", {"signal_id": "approval-1", "payload": APPROVED}),
        ("POST", f"{task_path}/signals/approved", {}),
        ("GET", f"{task_path}/signals", None),
        ("GET", f"/v1/schedules?namespace={NS}", None),
        ("GET", "/v1/schedules", None),
        ("GET", schedule_path, None),
        ("POST", "/v1/schedules", definition),
        ("PATCH", schedule_path, {"cron": "0 3 * * *"}),
        ("DELETE", schedule_path, None),
        ("POST", f"{schedule_path}/pause", {"note": "why"}),
        ("POST", f"{schedule_path}/pause", {}),
        ("POST", f"{schedule_path}/resume", None),
        ("POST", f"{schedule_path}/trigger", None),
        ("POST", f"{schedule_path}/backfill",
         {"from": "2026-01-01T00:00:00Z", "to": "2026-01-02T00:00:00Z"}),
        ("GET", f"{schedule_path.replace('nightly%20report', 'missing')}", None),
        # The async client's.
        ("GET", f"{task_path}/signals", None),
        ("POST", f"{task_path}/signals/approved", {"signal_id": "approval-1", "payload": APPROVED}),
        ("GET", f"/v1/schedules?namespace={NS}", None),
        ("DELETE", schedule_path, None),
        ("POST", f"{schedule_path}/pause", {"note": "why"}),
        ("POST", "/v1/tasks", {**create, "delay": "30s"}),
    ]


PARENT_ID = "019a0000-0000-7000-8000-000000000010"
CHILD_LINK = {
    "task_id": SCHEDULED_TASK["id"], "step_id": "019a0000-0000-7000-8000-000000000011",
    "step_name": "enrich", "attempt": 1, "state": "running", "namespace": "shop",
    "name": "enrich_order", "version": "1.2.0",
}
PARENT_TASK = {
    **SCHEDULED_TASK, "id": PARENT_ID, "state": "running", "run_at": None,
    "parent_task_id": None, "parent_step_id": None, "depth": 0, "children": [CHILD_LINK],
}
CHILD_TASK = {
    **SCHEDULED_TASK, "state": "running", "run_at": None, "namespace": "shop",
    "name": "enrich_order", "version": "1.2.0", "parent_task_id": PARENT_ID,
    "parent_step_id": CHILD_LINK["step_id"], "depth": 1, "children": None,
}
CHILD_STEP = {
    **WAIT_STEP, "id": CHILD_LINK["step_id"], "name": "enrich", "handler": "tasker:child",
    "step_type": "child", "wait": None, "namespace": "python_examples", "unserved": False,
    "child": {"namespace": "shop", "name": "enrich_order", "version": "1.2.0",
              "task_id": CHILD_LINK["task_id"], "on_parent_cancel": "abandon"},
}
ROUTED_STEP = {
    **WAIT_STEP, "id": "019a0000-0000-7000-8000-000000000012", "name": "score",
    "handler": "score", "step_type": "standard", "state": "enqueued", "wait": None,
    "namespace": "ruby_examples", "child": None, "unserved": True,
}
WORKER = {
    "id": "019a0000-0000-7000-8000-000000000020", "name": "worker-1", "language": "python",
    "version": "0.1.0", "host": "box", "pid": 4242, "namespaces": ["python_examples"],
    "handlers": ["double", "score"], "concurrency": 8, "heartbeat_ms": 5000,
    "started_at": "2026-11-26T08:00:00Z", "last_seen_at": "2026-11-26T09:00:00Z", "live": True,
}


def test_the_composition_calls_send_the_contracts_requests_and_read_its_answers(
    recorder: tuple[str, type[Recorder]],
) -> None:
    url, api = recorder
    gone = {**WORKER, "id": "019a0000-0000-7000-8000-000000000021", "live": False}
    api.answers.update({
        ("GET", f"/v1/tasks/{PARENT_ID}"): (200, PARENT_TASK),
        ("GET", "/v1/tasks"): (200, {"tasks": [CHILD_TASK], "next_before": None}),
        ("GET", f"/v1/tasks/{PARENT_ID}/steps"): (
            200, {"task_id": SCHEDULED_TASK["id"], "steps": [CHILD_STEP, ROUTED_STEP], "next": None},
        ),
        ("GET", "/v1/workers"): (200, {"workers": [WORKER, gone], "heartbeat_seconds": 10}),
    })
    with tasker.Client(url) as c:
        parent = c.get_task(PARENT_ID)
        assert (parent.parent_task_id, parent.parent_step_id, parent.depth) == (None, None, 0)
        assert parent.children == [tasker.TaskChild(
            task_id=uuid.UUID(CHILD_LINK["task_id"]), step_id=uuid.UUID(CHILD_LINK["step_id"]),
            step_name="enrich",
            attempt=1, state="running", namespace="shop", name="enrich_order", version="1.2.0",
        )]
        [child] = c.list_tasks(parent=PARENT_ID).tasks
        assert (child.parent_task_id, child.parent_step_id, child.depth) == (
            uuid.UUID(PARENT_ID), uuid.UUID(CHILD_LINK["step_id"]), 1,
        )
        assert child.children is None
        assert [t.id for t in c.iter_tasks(parent=uuid.UUID(PARENT_ID), state="running")] == [
            child.id
        ]
        # A task from a server before composition: no parent, depth 0.
        older = tasker.Task.from_dict(SCHEDULED_TASK)
        assert (older.parent_task_id, older.depth, older.children) == (None, 0, None)

        enrich, score = c.steps(PARENT_ID)
        assert (enrich.step_type, enrich.handler, enrich.namespace) == (
            "child", "tasker:child", "python_examples",
        )
        assert enrich.child == tasker.StepChild(
            namespace="shop", name="enrich_order", version="1.2.0",
            task_id=uuid.UUID(CHILD_LINK["task_id"]), on_parent_cancel="abandon",
        )
        assert not enrich.unserved and enrich.wait is None
        assert (score.namespace, score.child, score.unserved) == ("ruby_examples", None, True)
        older_step = tasker.Step.from_dict(WAIT_STEP)
        assert (older_step.namespace, older_step.child, older_step.unserved) == (NS, None, False)
        pending = tasker.StepChild.from_dict({**CHILD_STEP["child"], "task_id": None})
        assert pending.task_id is None

        live, stale = c.workers(all=True)
        assert live == tasker.WorkerInfo(
            id=uuid.UUID(WORKER["id"]), name="worker-1", language="python", version="0.1.0",
            host="box", pid=4242, namespaces=["python_examples"], handlers=["double", "score"],
            concurrency=8, heartbeat_ms=5000, started_at=datetime(2026, 11, 26, 8, tzinfo=timezone.utc),
            last_seen_at=datetime(2026, 11, 26, 9, tzinfo=timezone.utc), live=True,
        )
        assert stale.live is False
        assert len(c.workers()) == 2

    async def the_async_twin() -> None:
        async with tasker.AsyncClient(url) as c:
            assert (await c.workers())[0] == live
            assert [w.live for w in await c.workers(all=True)] == [True, False]
            assert (await c.list_tasks(parent=PARENT_ID)).tasks == [child]
            assert [t async for t in c.iter_tasks(parent=PARENT_ID)] == [child]

    asyncio.run(the_async_twin())

    assert [(m, p) for m, p, _ in api.requests] == [
        ("GET", f"/v1/tasks/{PARENT_ID}"),
        ("GET", f"/v1/tasks?parent={PARENT_ID}"),
        ("GET", f"/v1/tasks?state=running&parent={PARENT_ID}"),
        ("GET", f"/v1/tasks/{PARENT_ID}/steps?limit=1000"),
        ("GET", "/v1/workers?all=true"),
        ("GET", "/v1/workers"),
        # The async client's.
        ("GET", "/v1/workers"),
        ("GET", "/v1/workers?all=true"),
        ("GET", f"/v1/tasks?parent={PARENT_ID}"),
        ("GET", f"/v1/tasks?parent={PARENT_ID}"),
    ]


def test_the_list_filters_send_times_and_the_context_in_the_query(
    recorder: tuple[str, type[Recorder]],
) -> None:
    url, api = recorder
    api.answers[("GET", "/v1/tasks")] = (200, {"tasks": [CHILD_TASK], "next_before": None})
    berlin = timezone(timedelta(hours=1))
    order = {"order_id": 42, "customer": {"tier": "gold"}}
    with tasker.Client(url) as c:
        [task] = c.list_tasks(
            created_after=datetime(2026, 11, 26, 10, tzinfo=berlin),
            created_before="2026-11-27T00:00:00Z", context=order,
        ).tasks
        assert str(task.id) == CHILD_TASK["id"]
        assert [t.id for t in c.iter_tasks(state="running", context={"tags": ["rush"]})] == [
            task.id
        ]
        with pytest.raises(ValueError, match="naive"):
            c.list_tasks(created_after=datetime(2026, 11, 26))

    async def the_async_twin() -> None:
        async with tasker.AsyncClient(url) as c:
            assert (await c.list_tasks(created_before="2026-11-27T00:00:00Z")).tasks == [task]
            assert [t async for t in c.iter_tasks(created_after="2026-11-26T09:00:00Z")] == [task]

    asyncio.run(the_async_twin())

    context = "%7B%22order_id%22%3A42%2C%22customer%22%3A%7B%22tier%22%3A%22gold%22%7D%7D"
    assert [(m, p) for m, p, _ in api.requests] == [
        ("GET", "/v1/tasks?created_after=2026-11-26T09%3A00%3A00Z"
                "&created_before=2026-11-27T00%3A00%3A00Z&context=" + context),
        ("GET", "/v1/tasks?state=running&context=%7B%22tags%22%3A%5B%22rush%22%5D%7D"),
        # The async client's.
        ("GET", "/v1/tasks?created_before=2026-11-27T00%3A00%3A00Z"),
        ("GET", "/v1/tasks?created_after=2026-11-26T09%3A00%3A00Z"),
    ]
