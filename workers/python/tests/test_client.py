"""The API client against a real orchestrator, with the Python worker running the fixture
handlers (conftest: ``tasker_env``, ``orchestrator``, ``python_worker``). Nothing sleeps: every
wait is the API's long poll, with a timeout."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import threading
import time
import uuid
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Iterator

import httpx
import pytest

import tasker
from conftest import WORKER_DIR, Orchestrator, TaskerEnv, free_port

NS = "python_examples"
LINEAR_RESULT = {"halve": {"value": 242}}  # linear with {"value": 6}: 12, 22, 484, 242
APPROVED = {"approved_by": "pytest"}
# signal_wait with {"value": 5} and the signal `approved` carrying APPROVED.
SIGNAL_WAIT_RESULT = {"finish": {"value": 10, "approved_by": "pytest"}}


@pytest.fixture
def client(orchestrator: Orchestrator, python_worker: Any) -> Iterator[tasker.Client]:
    with tasker.Client(orchestrator.url) as c:
        yield c


@pytest.fixture(scope="module")
def capped(tasker_env: TaskerEnv) -> Orchestrator:
    """A second orchestrator of the same cluster whose long polls last at most 1 s."""
    return tasker_env.start_orchestrator({"TASKER_ORCHESTRATOR__MAX_WAIT_SECONDS": "1"})


def test_a_task_is_created_waited_for_and_complete_with_its_result(client: tasker.Client) -> None:
    created = client.create_task(NS, "linear", {"value": 6})
    assert isinstance(created, tasker.Task)
    assert (created.namespace, created.name, created.version) == (NS, "linear", "1.0.0")
    assert created.context == {"value": 6} and created.idempotency_key is None
    assert isinstance(created.created_at, datetime) and created.created_at.tzinfo is not None

    done = client.wait(created.id, timeout=60)
    assert done.id == created.id
    assert done.state == "complete" and tasker.is_terminal(done)
    assert done.result == LINEAR_RESULT
    assert done.error is None and done.open_steps == 0
    assert done.completed_at is not None and done.completed_at >= done.created_at
    assert done.duration_ms is not None and done.duration_ms >= 0
    assert client.get_task(str(created.id)) == done


def test_a_repeated_idempotency_key_gives_the_same_task_and_another_context_a_conflict(
    client: tasker.Client,
) -> None:
    key = f"order-{uuid.uuid4()}"
    first = client.create_task(NS, "linear", {"value": 6}, idempotency_key=key)
    again = client.create_task(NS, "linear", {"value": 6}, idempotency_key=key)
    assert again.id == first.id and again.idempotency_key == key

    with pytest.raises(tasker.Conflict) as refused:
        client.create_task(NS, "linear", {"value": 7}, idempotency_key=key)
    e = refused.value
    assert isinstance(e, tasker.ApiError) and isinstance(e, tasker.ClientError)
    assert (e.status, e.code) == (409, "idempotency_key_reused")
    assert str(first.id) in e.message and str(e).startswith("409 idempotency_key_reused: ")
    assert client.wait(first.id, 60).result == LINEAR_RESULT


def test_wait_loops_past_a_server_whose_cap_is_shorter(
    client: tasker.Client, capped: Orchestrator
) -> None:
    with tasker.Client(capped.url) as short:
        task = short.create_task(NS, "slow_chain", {"sleep_ms": 2500})
        # One long poll beyond the cap is refused...
        with pytest.raises(tasker.InvalidRequest) as refused:
            short.get_task(task.id, wait=25)
        assert (refused.value.status, refused.value.code) == (400, "invalid_wait")
        # ...and `wait` takes any timeout: it halves its polls until the server accepts them.
        started = time.monotonic()
        done = short.wait(task.id, timeout=30)
        took = time.monotonic() - started
    assert done.state == "complete", done
    assert done.result["quick"]["parents"] == {"slow": {"slept_ms": 2500}}
    assert took > 1.0, "finished within one capped poll: the loop was not tested"


def test_wait_returns_the_running_task_when_its_timeout_runs_out(
    client: tasker.Client, capped: Orchestrator
) -> None:
    task = client.create_task(NS, "slow_chain", {"sleep_ms": 3000})
    # Requests time out after 0.2 s, but a long poll gets its wait on top.
    with tasker.Client(capped.url, timeout=0.2) as short:
        started = time.monotonic()
        assert short.get_task(task.id, wait=1).state == "running"
        still = short.wait(task.id, timeout=1.5)
        took = time.monotonic() - started
    assert still.state == "running" and not tasker.is_terminal(still)
    assert 2.4 < took < 10, took
    assert client.wait(task.id, 60).state == "complete"


def test_paging_walks_every_task_once(client: tasker.Client) -> None:
    # A template no other test creates tasks of, so the set listed is exactly these.
    created = [client.create_task(NS, "hierarchical_tree", {"value": n}).id for n in range(7)]
    pages: list[tasker.TaskPage] = []
    before: str | None = None
    while True:
        page = client.list_tasks(namespace=NS, name="hierarchical_tree", limit=2, before=before)
        assert len(page.tasks) <= 2
        pages.append(page)
        if page.next_before is None:
            break
        before = page.next_before
    walked = [t.id for p in pages for t in p.tasks]
    assert len(walked) == len(set(walked)) == 7
    assert walked == list(reversed(created)), "newest first"
    assert len(pages) == 4

    iterated = [
        t.id for t in client.iter_tasks(namespace=NS, name="hierarchical_tree", page_size=3)
    ]
    assert iterated == walked

    for n, task_id in enumerate(created):
        assert client.wait(task_id, 60).result == {"merge": {"value": 12 * n * n + 6 * n + 50}}
    complete = list(client.iter_tasks(state="complete", name="hierarchical_tree", page_size=5))
    assert {t.id for t in complete} == set(created)
    assert all(t.result is None for t in complete), "listed tasks carry no result"
    assert client.list_tasks(state="running", name="hierarchical_tree").tasks == []

    with pytest.raises(tasker.InvalidRequest) as refused:
        client.list_tasks(state="finished")
    assert refused.value.code == "invalid_state"


def test_cancel_stops_a_running_task_and_refuses_a_finished_one(client: tasker.Client) -> None:
    running = client.create_task(NS, "slow_chain", {"sleep_ms": 2000})
    cancelled = client.cancel(running.id)
    assert cancelled.id == running.id and cancelled.state == "cancelled"

    finished = client.create_task(NS, "linear", {"value": 6})
    assert client.wait(finished.id, 60).state == "complete"
    for task_id in (running.id, finished.id):
        with pytest.raises(tasker.Conflict) as refused:
            client.cancel(task_id)
        assert (refused.value.status, refused.value.code) == (409, "task_not_running")


def test_steps_page_by_page_and_history(client: tasker.Client) -> None:
    task = client.create_task(NS, "linear", {"value": 6})
    assert client.wait(task.id, 60).state == "complete"

    steps = client.steps(task.id)
    assert [s.name for s in steps] == ["double", "add_ten", "square", "halve"]
    assert [s.result for s in steps] == [{"value": v} for v in (12, 22, 484, 242)]
    for s in steps:
        assert isinstance(s, tasker.Step)
        assert (s.state, s.attempt, s.step_type) == ("completed", 1, "standard")
        assert s.handler == s.name and s.error is None
        assert s.dispatched_at and s.started_at and s.finished_at and s.processed_at
        assert s.dispatched_at <= s.processed_at

    walked: list[tasker.Step] = []
    after: uuid.UUID | None = None
    while True:
        page = client.steps_page(task.id, after=after, limit=1)
        assert len(page.steps) <= 1
        walked.extend(page.steps)
        if page.next_ is None:
            break
        after = page.next_
    assert walked == steps

    history = client.history(task.id)
    assert all(isinstance(t, tasker.Transition) for t in history)
    task_states = [(t.from_, t.to) for t in history if t.step is None]
    assert task_states[-1] == ("running", "complete")
    assert [t.at for t in history] == sorted(t.at for t in history), "oldest first"
    for name in ("double", "halve"):
        assert "completed" in [t.to for t in history if t.step == name]
    assert all(t.by is None for t in history)


def test_retry_and_resolve_repair_a_failed_task(client: tasker.Client) -> None:
    task = client.create_task(NS, "permanent_failure")
    failed = client.wait(task.id, 60)
    assert failed.state == "error" and failed.error is not None

    again = client.retry(task.id, by="user:test", reason="try once more")
    # `running` again, unless the worker was quicker than the answer.
    assert again.id == task.id and again.state in ("running", "error")
    assert client.wait(task.id, 60).state == "error", "the handler fails for good every time"
    doomed = [s for s in client.steps(task.id) if s.name == "doomed"]
    assert [s.state for s in doomed] == ["failed"] and doomed[0].attempt >= 2

    with pytest.raises(tasker.NotFound) as missing:
        client.resolve(task.id, "nope", {"value": 1})
    assert missing.value.code == "step_not_found"

    client.resolve(task.id, "doomed", {"value": 1}, by="user:test", reason="done by hand")
    done = client.wait(task.id, 60)
    assert done.state == "complete" and done.result == {"never": {"value": 2}}
    repairs = {t.reason for t in client.history(task.id) if t.by == "user:test"}
    assert "retried: try once more" in repairs and "resolved: done by hand" in repairs

    with pytest.raises(tasker.Conflict) as refused:
        client.retry(task.id)
    assert refused.value.code == "task_not_failed"
    with pytest.raises(tasker.Conflict) as refused:
        client.retry(task.id, step="doomed")
    assert refused.value.code == "task_not_failed", "the task is not in error, whatever the step"


def test_an_unknown_task_is_not_found_and_a_malformed_id_invalid(client: tasker.Client) -> None:
    unknown = str(uuid.uuid4())
    for call in (client.get_task, client.steps, client.history, client.cancel):
        with pytest.raises(tasker.NotFound) as missing:
            call(unknown)
        assert (missing.value.status, missing.value.code) == (404, "task_not_found")
        assert unknown in missing.value.message
    with pytest.raises(tasker.InvalidRequest) as invalid:
        client.get_task("not-a-uuid")
    assert invalid.value.code == "invalid_id"
    with pytest.raises(tasker.NotFound) as template:
        client.create_task(NS, "no_such_template", {})
    assert template.value.code == "unknown_template"
    with pytest.raises(tasker.InvalidRequest) as schema:
        client.create_task(NS, "linear", {"value": "six"})
    assert (schema.value.status, schema.value.code) == (422, "context_schema_violation")
    assert schema.value.details, "the schema's complaints"


def test_a_delayed_task_is_scheduled_until_its_time(client: tasker.Client) -> None:
    later = client.create_task(NS, "linear", {"value": 6}, delay="1h")
    assert later.state == "scheduled" and not tasker.is_terminal(later)
    assert later.run_at is not None
    assert timedelta(minutes=59) < later.run_at - later.created_at <= timedelta(minutes=61)
    assert later.id in [t.id for t in client.list_tasks(state="scheduled", name="linear").tasks]
    in_seconds = client.create_task(NS, "linear", {"value": 6}, delay=600)  # sent as "600s"
    assert in_seconds.run_at is not None
    assert abs((in_seconds.run_at - in_seconds.created_at).total_seconds() - 600) < 5
    for task in (later, in_seconds):
        assert client.cancel(task.id).state == "cancelled", "a scheduled task cancels"

    run_at = datetime.now(timezone.utc) + timedelta(seconds=2)
    soon = client.create_task(NS, "linear", {"value": 6}, run_at=run_at)
    assert soon.state == "scheduled"
    assert soon.run_at is not None and abs((soon.run_at - run_at).total_seconds()) < 0.01
    done = client.wait(soon.id, 60)
    assert done.state == "complete" and done.result == LINEAR_RESULT
    assert all(s.started_at and s.started_at >= soon.run_at for s in client.steps(soon.id))
    moves = [(t.from_, t.to) for t in client.history(soon.id) if t.step is None]
    assert ("scheduled", "running") in moves and moves[-1] == ("running", "complete")

    for options, code in (
        ({"delay": "soon"}, "invalid_delay"),
        ({"delay": "400d"}, "invalid_delay"),
        ({"run_at": "tomorrow"}, "invalid_run_at"),
        ({"run_at": datetime.now(timezone.utc) + timedelta(days=400)}, "invalid_run_at"),
        ({"run_at": run_at, "delay": "10m"}, "invalid_run_at"),
    ):
        with pytest.raises(tasker.InvalidRequest) as refused:
            client.create_task(NS, "linear", {"value": 6}, **options)  # type: ignore[arg-type]
        assert (refused.value.status, refused.value.code) == (400, code), options
    with pytest.raises(ValueError, match="naive datetime"):
        client.create_task(NS, "linear", {"value": 6}, run_at=datetime(2030, 1, 1))


def test_a_signal_completes_the_step_waiting_for_it_once(client: tasker.Client) -> None:
    task = client.create_task(NS, "signal_wait", {"value": 5})
    with pytest.raises(tasker.InvalidRequest) as invalid:
        client.signal(task.id, "not a name!")
    assert invalid.value.code == "invalid_signal_name"
    with pytest.raises(tasker.NotFound) as missing:
        client.signal(str(uuid.uuid4()), "approved")
    assert missing.value.code == "task_not_found"

    sent = client.signal(task.id, "approved", APPROVED, signal_id="approval-1")
    assert isinstance(sent, tasker.Signal)
    assert (sent.task_id, sent.name, sent.signal_id, sent.payload) == (
        task.id, "approved", "approval-1", APPROVED,
    )
    assert sent.received_at.tzinfo is not None
    # The same id and payload again changes nothing; another payload is a conflict.
    again = client.signal(task.id, "approved", APPROVED, signal_id="approval-1")
    assert (again.signal_id, again.received_at) == (sent.signal_id, sent.received_at)
    with pytest.raises(tasker.Conflict) as conflict:
        client.signal(task.id, "approved", {"approved_by": "someone else"}, signal_id="approval-1")
    assert (conflict.value.status, conflict.value.code) == (409, "signal_conflict")

    done = client.wait(task.id, 60)
    assert done.state == "complete" and done.result == SIGNAL_WAIT_RESULT
    approval, finish = client.steps(task.id)
    assert (approval.name, approval.step_type, approval.state) == ("approval", "wait", "completed")
    assert approval.wait is not None and isinstance(approval.wait, tasker.StepWait)
    assert (approval.wait.kind, approval.wait.signal, approval.wait.on_timeout) == (
        "signal", "approved", "fail",
    )
    assert approval.result == APPROVED
    assert finish.wait is None and finish.handler == "signal_wait_finish"

    [received] = client.signals(task.id)
    assert received.signal_id == "approval-1" and received.consumed_by == "approval"
    assert received.consumed_at is not None and received.consumed_at >= received.received_at
    with pytest.raises(tasker.Conflict) as finished:
        client.signal(task.id, "approved", APPROVED)
    assert finished.value.code == "task_finished"


def test_a_schedule_is_applied_paused_resumed_triggered_backfilled_and_deleted(
    client: tasker.Client,
) -> None:
    name = f"nightly-{uuid.uuid4().hex[:8]}"
    definition = {
        "namespace": NS, "name": name, "template": "linear", "cron": "30 2 * * *",
        "timezone": "Europe/Berlin", "context": {"value": 6},
    }
    created = client.apply_schedule(definition)
    assert isinstance(created, tasker.Schedule)
    assert (created.namespace, created.name, created.template, created.version) == (
        NS, name, "linear", None,
    )
    assert (created.cron, created.timezone, created.context) == (
        "30 2 * * *", "Europe/Berlin", {"value": 6},
    )
    assert (created.overlap, created.catch_up, created.paused, created.note) == (
        "skip", "1h", False, None,
    )
    assert (created.fires, created.skipped, created.last_task_id) == (0, 0, None)
    assert created.next_fire_at is not None and created.next_fire_at > created.created_at

    shown = client.get_schedule(NS, name)
    assert shown.upcoming is not None and len(shown.upcoming) == 5
    assert shown.upcoming[0] == shown.next_fire_at and shown.upcoming == sorted(shown.upcoming)
    listed = client.list_schedules(NS)
    assert name in [s.name for s in listed] and all(s.namespace == NS for s in listed)
    assert name in [s.name for s in client.list_schedules()]

    paused = client.pause_schedule(NS, name, note="maintenance")
    assert paused.paused and paused.note == "maintenance"
    applied = client.apply_schedule({**definition, "cron": "0 3 * * *"})
    assert applied.cron == "0 3 * * *" and applied.paused, "a pause survives an update"
    patched = client.update_schedule(NS, name, {"overlap": "allow"})
    assert (patched.overlap, patched.cron) == ("allow", "0 3 * * *")
    resumed = client.resume_schedule(NS, name)
    assert not resumed.paused and resumed.next_fire_at is not None

    task = client.trigger_schedule(NS, name)
    assert isinstance(task, tasker.Task)
    assert (task.namespace, task.name, task.context) == (NS, "linear", {"value": 6})
    assert client.wait(task.id, 60).result == LINEAR_RESULT

    # 03:00 in Berlin on each of three winter days.
    start, end = datetime(2024, 1, 1, tzinfo=timezone.utc), "2024-01-03T12:00:00Z"
    backfill = client.backfill_schedule(NS, name, start, end)
    assert isinstance(backfill, tasker.Backfill)
    assert (backfill.created, backfill.existing, len(set(backfill.task_ids))) == (3, 0, 3)
    again = client.backfill_schedule(NS, name, start, end)
    assert (again.created, again.existing) == (0, 3), "a backfill is safe to repeat"
    assert sorted(again.task_ids) == sorted(backfill.task_ids)
    for task_id in backfill.task_ids:
        assert client.wait(task_id, 60).result == LINEAR_RESULT

    with pytest.raises(tasker.InvalidRequest) as refused:
        client.update_schedule(NS, name, {"cron": "every night"})
    assert refused.value.code == "invalid_cron"
    with pytest.raises(tasker.NotFound) as template:
        client.apply_schedule({**definition, "template": "no_such_template"})
    assert template.value.code == "unknown_template"

    assert client.delete_schedule(NS, name) is None
    for call in (client.get_schedule, client.delete_schedule, client.trigger_schedule):
        with pytest.raises(tasker.NotFound) as missing:
            call(NS, name)
        assert (missing.value.status, missing.value.code) == (404, "schedule_not_found")


class Gateway(BaseHTTPRequestHandler):
    """What may stand between a client and the API: answers 503 as the API does, anything else
    with a proxy's 502 page."""

    def do_GET(self) -> None:
        if self.path.partition("?")[0] == "/v1/tasks":
            status, kind = 503, "application/json"
            body = b'{"error": {"code": "storage_unavailable", "message": "try again"}}'
        else:
            status, kind, body = 502, "text/html", b"<html>Bad Gateway</html>"
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def test_server_errors_are_typed_even_when_not_the_apis_own() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Gateway)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with tasker.Client(f"http://127.0.0.1:{server.server_address[1]}") as c:
            with pytest.raises(tasker.ServerError) as unavailable:
                c.list_tasks()
            e = unavailable.value
            assert (e.status, e.code, e.message) == (503, "storage_unavailable", "try again")
            with pytest.raises(tasker.ServerError) as proxy:
                c.get_task(str(uuid.uuid4()))
            assert (proxy.value.status, proxy.value.code) == (502, "unknown")
            assert "Bad Gateway" in proxy.value.message
    finally:
        server.shutdown()
        server.server_close()


TIMES = {"created_at": "2026-11-26T09:00:00.123456Z"}
SCHEDULED_TASK = {
    "id": "019a0000-0000-7000-8000-000000000001", "namespace": NS, "name": "linear",
    "version": "1.0.0", "state": "scheduled", "context": {"value": 6}, "idempotency_key": None,
    "open_steps": 4, "result": None, "error": None, "completed_at": None, "duration_ms": None,
    "run_at": "2026-11-27T02:30:00Z", "parent_task_id": None, "parent_step_id": None,
    "depth": 0, "children": None, "priority": "normal", "some_later_field": 1, **TIMES,
}
WAIT_STEP = {
    "id": "019a0000-0000-7000-8000-000000000002", "name": "approval", "handler": "tasker:wait",
    "step_type": "wait", "state": "waiting", "attempt": 1, "max_attempts": 1, "result": None,
    "error": None, "worker": None, "dispatched_at": None, "started_at": None,
    "finished_at": None, "processed_at": None, "next_attempt_at": None, **TIMES,
    "namespace": NS, "child": None, "unserved": False, "throttle": None, "limits": None,
    "wait": {"kind": "signal", "signal": "approved", "until": "2026-12-03T09:00:00Z",
             "on_timeout": "fail"},
}
SIGNAL = {
    "task_id": SCHEDULED_TASK["id"], "name": "approved", "signal_id": "approval-1",
    "payload": APPROVED, "received_at": "2026-11-26T09:00:01Z", "consumed_by": None,
    "consumed_at": None,
}
SCHEDULE = {
    "namespace": NS, "name": "nightly report", "template": "linear", "version": None,
    "cron": "30 2 * * *", "timezone": "Europe/Berlin", "context": {"value": 6},
    "overlap": "skip", "catch_up": "1h", "paused": False, "note": None,
    "next_fire_at": "2026-11-27T01:30:00Z", "last_fire_at": None, "last_task_id": None,
    "fires": 0, "skipped": 0, "updated_at": "2026-11-26T09:00:00Z", "buffered_at": None,
    "updated_by": None, **TIMES,
}


class Recorder(BaseHTTPRequestHandler):
    """A stand-in for the API: answers each ``(method, path)`` of ``answers`` with its status
    and JSON (``None``: no body), or a list of them in turn (the last one again once the others
    are used), and keeps every request in ``requests``."""

    answers: dict[tuple[str, str], tuple[int, Any]] = {}
    requests: list[tuple[str, str, Any]] = []

    def answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length)) if length else None
        self.requests.append((self.command, self.path, body))
        route = (self.command, self.path.partition("?")[0])
        missing = (404, {"error": {"code": "no_route", "message": route}})
        found = self.answers.get(route, missing)
        if isinstance(found, list):
            found = found.pop(0) if len(found) > 1 else found[0]
        status, answer = found
        data = b"" if answer is None else json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PATCH = do_DELETE = answer

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def recorder() -> Iterator[tuple[str, type[Recorder]]]:
    """The stand-in API's URL and its handler class (``answers`` to fill)."""
    handler = type("Answers", (Recorder,), {"answers": {}, "requests": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", handler
    finally:
        server.shutdown()
        server.server_close()


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
            kind="signal", signal="approved",
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


THROTTLED_STEP = {
    **WAIT_STEP, "id": "019a0000-0000-7000-8000-000000000030", "name": "charge",
    "handler": "charge", "step_type": "standard", "state": "throttled", "attempt": 0,
    "max_attempts": 3, "wait": None, "namespace": NS, "child": None, "unserved": False,
    "throttle": {"kind": "rate", "key": "stripe", "limit": 100,
                 "since": "2026-11-26T09:00:00Z", "until": "2026-11-26T09:00:01.5Z"},
    "limits": {"concurrency": {"key": f"{NS}/charge_customer:c-1", "limit": 2},
               "rate": {"key": "stripe", "limit": 100, "per_ms": 1000, "burst": 20}},
}
USED_AT = "2026-11-26T09:00:00Z"
CONCURRENCY_LIMIT = {
    "key": f"{NS}/charge_customer:c-1", "limit": 2, "in_use": 2, "throttled": 1, "used_at": USED_AT,
}
RATE_LIMIT = {
    "key": "stripe", "limit": 100, "per_ms": 1000, "burst": 20, "paused_until": None,
    "pause_note": None, "paused_by": None, "throttled": 3, "used_at": USED_AT,
}
PAUSED_UNTIL = "2026-11-26T10:00:00Z"
PAUSED = {**RATE_LIMIT, "paused_until": PAUSED_UNTIL, "pause_note": "incident"}


def test_the_flow_calls_send_the_contracts_requests_and_read_its_answers(
    recorder: tuple[str, type[Recorder]],
) -> None:
    url, api = recorder
    task_path = f"/v1/tasks/{SCHEDULED_TASK['id']}"
    odd = "acct:42/eu"  # a key from a context value: one path segment, percent-encoded
    api.answers.update({
        ("POST", "/v1/tasks"): (201, {**SCHEDULED_TASK, "priority": "high"}),
        ("GET", f"{task_path}/steps"): (200, {"task_id": SCHEDULED_TASK["id"], "steps": [THROTTLED_STEP], "next": None}),
        ("GET", "/v1/concurrency-limits"): (200, {"limits": [CONCURRENCY_LIMIT]}),
        ("GET", "/v1/rate-limits"): (200, {"limits": [RATE_LIMIT]}),
        ("POST", "/v1/rate-limits/stripe/pause"): (200, PAUSED),
        ("DELETE", "/v1/rate-limits/stripe/pause"): (200, RATE_LIMIT),
        ("POST", "/v1/rate-limits/acct%3A42%2Feu/pause"): (200, {**PAUSED, "key": odd}),
        ("DELETE", "/v1/rate-limits/acct%3A42%2Feu/pause"): (
            404, {"error": {"code": "unknown_rate_limit", "message": odd}},
        ),
    })
    berlin = timezone(timedelta(hours=1))
    with tasker.Client(url) as c:
        task = c.create_task(NS, "linear", {"value": 6}, priority="high")
        assert task.priority == "high"
        c.create_task(NS, "linear", {"value": 6})
        # A task from a server before priorities: normal.
        assert tasker.Task.from_dict(SCHEDULED_TASK).priority == "normal"

        [step] = c.steps(task.id)
        assert step.state == "throttled"
        assert step.throttle == tasker.StepThrottle(
            kind="rate", key="stripe", limit=100,
            since=datetime(2026, 11, 26, 9, tzinfo=timezone.utc),
            until=datetime(2026, 11, 26, 9, 0, 1, 500_000, tzinfo=timezone.utc),
        )
        assert step.limits == tasker.StepLimits(
            concurrency=tasker.StepConcurrencyLimit(key=f"{NS}/charge_customer:c-1", limit=2),
            rate=tasker.StepRateLimit(key="stripe", limit=100, per_ms=1000, burst=20),
        )
        waiting = tasker.Step.from_dict({
            **THROTTLED_STEP,
            "throttle": {"kind": "concurrency", "key": "k", "limit": 2,
                         "since": "2026-11-26T09:00:00Z", "until": None},
            "limits": {"concurrency": {"key": "k", "limit": 2}, "rate": None},
        })
        assert waiting.throttle is not None and waiting.throttle.until is None
        assert waiting.limits == tasker.StepLimits(
            concurrency=tasker.StepConcurrencyLimit(key="k", limit=2), rate=None
        )
        # A step from a server before limits, and one that has none.
        older = tasker.Step.from_dict(WAIT_STEP)
        assert (older.throttle, older.limits) == (None, None)
        none = tasker.Step.from_dict({**THROTTLED_STEP, "throttle": None, "limits": None})
        assert (none.throttle, none.limits) == (None, None)

        assert c.concurrency_limits() == [tasker.ConcurrencyLimit(
            key=f"{NS}/charge_customer:c-1", limit=2, in_use=2, throttled=1,
            used_at=datetime(2026, 11, 26, 9, tzinfo=timezone.utc),
        )]
        assert len(c.concurrency_limits(f"{NS}/charge_customer:")) == 1
        [rate] = c.rate_limits()
        assert rate == tasker.RateLimit(
            key="stripe", limit=100, per_ms=1000, burst=20, paused_until=None, pause_note=None,
            paused_by=None, throttled=3, used_at=datetime(2026, 11, 26, 9, tzinfo=timezone.utc),
        )
        paused = c.pause_rate_limit(
            "stripe", datetime(2026, 11, 26, 11, tzinfo=berlin), note="incident"
        )
        assert (paused.paused_until, paused.pause_note) == (
            datetime(2026, 11, 26, 10, tzinfo=timezone.utc), "incident",
        )
        assert c.pause_rate_limit("stripe", PAUSED_UNTIL) == paused
        assert c.resume_rate_limit("stripe") == rate
        assert c.pause_rate_limit(odd, PAUSED_UNTIL).key == odd
        with pytest.raises(tasker.NotFound) as unknown:
            c.resume_rate_limit(odd)
        assert (unknown.value.status, unknown.value.code) == (404, "unknown_rate_limit")
        with pytest.raises(ValueError, match="naive"):
            c.pause_rate_limit("stripe", datetime(2026, 11, 26, 10))

    async def the_async_twin() -> None:
        async with tasker.AsyncClient(url) as c:
            # (The stand-in answers every creation with the same task.)
            assert (await c.create_task(NS, "linear", priority="low")).priority == "high"
            assert await c.concurrency_limits(key_prefix=NS) == [
                tasker.ConcurrencyLimit.from_dict(CONCURRENCY_LIMIT)
            ]
            assert await c.rate_limits() == [rate]
            assert await c.pause_rate_limit("stripe", PAUSED_UNTIL, note="incident") == paused
            assert await c.resume_rate_limit("stripe") == rate

    asyncio.run(the_async_twin())

    assert [(m, p) for m, p, _ in api.requests] == [
        ("POST", "/v1/tasks"),
        ("POST", "/v1/tasks"),
        ("GET", f"{task_path}/steps?limit=1000"),
        ("GET", "/v1/concurrency-limits"),
        ("GET", f"/v1/concurrency-limits?key={NS}%2Fcharge_customer%3A"),
        ("GET", "/v1/rate-limits"),
        ("POST", "/v1/rate-limits/stripe/pause"),
        ("POST", "/v1/rate-limits/stripe/pause"),
        ("DELETE", "/v1/rate-limits/stripe/pause"),
        ("POST", "/v1/rate-limits/acct%3A42%2Feu/pause"),
        ("DELETE", "/v1/rate-limits/acct%3A42%2Feu/pause"),
        # The async client's.
        ("POST", "/v1/tasks"),
        ("GET", f"/v1/concurrency-limits?key={NS}"),
        ("GET", "/v1/rate-limits"),
        ("POST", "/v1/rate-limits/stripe/pause"),
        ("DELETE", "/v1/rate-limits/stripe/pause"),
    ]
    bodies = [body for m, _, body in api.requests if m == "POST"]
    assert bodies == [
        {"namespace": NS, "name": "linear", "context": {"value": 6}, "priority": "high"},
        {"namespace": NS, "name": "linear", "context": {"value": 6}},
        {"until": PAUSED_UNTIL, "note": "incident"},
        {"until": PAUSED_UNTIL},
        {"until": PAUSED_UNTIL},
        {"namespace": NS, "name": "linear", "context": {}, "priority": "low"},
        {"until": PAUSED_UNTIL, "note": "incident"},
    ]
    # DELETE sends no body.
    assert [body for m, _, body in api.requests if m == "DELETE"] == [None, None, None]


def test_the_conformance_clients_flow_mode_prints_what_it_read_and_did(
    recorder: tuple[str, type[Recorder]],
) -> None:
    """``conformance-client URL flow``: four lines, a label and one line of JSON each, against
    the stand-in (the conformance suite runs it against a real orchestrator)."""
    url, api = recorder
    api.answers.update({
        ("GET", "/v1/rate-limits"): (200, {"limits": [{**RATE_LIMIT, "key": "z"}, RATE_LIMIT]}),
        ("GET", "/v1/concurrency-limits"): (200, {"limits": [CONCURRENCY_LIMIT]}),
        ("POST", "/v1/rate-limits/conformance-flow/pause"): (200, {
            **PAUSED, "key": "conformance-flow", "paused_until": "2026-11-26T10:00:00.123456Z",
            "pause_note": "conformance",
        }),
        ("DELETE", "/v1/rate-limits/conformance-flow/pause"): (200, {
            **RATE_LIMIT, "key": "conformance-flow",
        }),
    })
    started = datetime.now(timezone.utc)
    out = subprocess.run(
        [sys.executable, str(WORKER_DIR / "fixtures/conformance_client.py"), url, "flow"],
        capture_output=True, text=True, timeout=60,
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert [line.partition(" ")[0] for line in lines] == [
        "rate_limits", "concurrency_limits", "paused", "resumed",
    ]
    read = {label: json.loads(rest) for label, _, rest in (line.partition(" ") for line in lines)}
    assert read["rate_limits"] == [RATE_LIMIT, {**RATE_LIMIT, "key": "z"}]  # by key
    assert read["concurrency_limits"] == [CONCURRENCY_LIMIT]
    assert read["paused"] == {
        **PAUSED, "key": "conformance-flow", "paused_until": "2026-11-26T10:00:00.123456Z",
        "pause_note": "conformance",
    }
    assert read["resumed"] == {**RATE_LIMIT, "key": "conformance-flow"}
    [(_, _, pause)] = [r for r in api.requests if r[0] == "POST"]
    assert pause["note"] == "conformance"
    until = datetime.fromisoformat(pause["until"])
    assert timedelta(minutes=59) < until - started < timedelta(minutes=61), pause
    assert [(m, p) for m, p, _ in api.requests] == [
        ("GET", "/v1/rate-limits"),
        ("GET", "/v1/concurrency-limits"),
        ("POST", "/v1/rate-limits/conformance-flow/pause"),
        ("DELETE", "/v1/rate-limits/conformance-flow/pause"),
    ]


PURGED_ID = "019a0000-0000-7000-8000-000000000040"
PURGED = {"error": {
    "code": "task_purged",
    "message": f"task {PURGED_ID} was purged at 2026-11-27T06:00:00Z (retention)",
    "details": {"task_id": PURGED_ID, "state": "complete", "purged_at": "2026-11-27T06:00:00Z"},
}}
# As the server answers: a refused item has no task_id, a created one no error.
BATCH = {"created": 2, "existing": 1, "refused": 1, "results": [
    {"index": 0, "status": "created", "task_id": "019a0000-0000-7000-8000-000000000041"},
    {"index": 1, "status": "created", "task_id": "019a0000-0000-7000-8000-000000000042"},
    {"index": 2, "status": "existing", "task_id": "019a0000-0000-7000-8000-000000000043"},
    {"index": 3, "status": "refused",
     "error": {"code": "unknown_template", "message": "no template python_examples/nope"}},
]}
PURGE_ANSWER = {
    "dry_run": False, "older_than": "30d", "before": "2026-10-28T06:00:00Z",
    "states": ["complete", "error", "cancelled"], "tasks": 1234,
    "by_state": {"complete": 1200, "error": 30, "cancelled": 4}, "rows": 45678,
    "bytes": 12345678, "more": False,
}
DRY_RUN = {
    **PURGE_ANSWER, "dry_run": True, "older_than": "1h", "states": ["complete"],
    "by_state": {"complete": 3}, "tasks": 3, "rows": None, "bytes": None, "more": False,
}
RETENTION = {
    "complete": "30d", "error": "90d", "cancelled": "30d", "tombstones": "90d",
    "interval_ms": 60000, "batch": 200, "busy_percent": 5,
    "last_purged_at": "2026-11-27T10:02:03.123456Z",
}


def test_the_scale_calls_send_the_contracts_requests_and_read_its_answers(
    recorder: tuple[str, type[Recorder]],
) -> None:
    url, api = recorder
    duplicate = {"error": {
        "code": "duplicate_idempotency_key", "message": "two items share the key k",
        "details": {"key": "k", "indexes": [0, 1]},
    }}
    too_large = {"error": {
        "code": "batch_too_large", "message": "10001 tasks, at most 10000",
        "details": {"tasks": 10001, "limit": 10000},
    }}
    api.answers.update({
        ("POST", "/v1/tasks:batch"): [
            (200, BATCH), (400, duplicate), (413, too_large), (200, BATCH),
        ],
        ("POST", "/v1/purge"): [
            (200, PURGE_ANSWER), (200, DRY_RUN),
            (400, {"error": {"code": "invalid_state", "message": "running is not finished",
                             "details": {"state": "running"}}}),
            (403, {"error": {"code": "forbidden", "message": "an operator's token"}}),
            (200, DRY_RUN),
        ],
    })
    berlin = timezone(timedelta(hours=1))
    items = [
        {"namespace": NS, "name": "linear", "context": {"value": 1}, "idempotency_key": "k-1"},
        {"namespace": NS, "name": "linear", "context": {"value": 2}, "priority": "high",
         "run_at": datetime(2026, 11, 27, 3, 30, tzinfo=berlin), "version": None},
        {"namespace": NS, "name": "linear", "delay": 600, "idempotency_key": "k-3"},
        {"namespace": NS, "name": "nope", "run_at": "2026-11-27T02:30:00Z", "delay": "10m"},
    ]
    with tasker.Client(url) as c:
        batch = c.create_tasks(items)
        assert batch == tasker.BatchCreated(created=2, existing=1, refused=1, results=[
            tasker.BatchItemResult(index=0, status="created",
                                   task_id=uuid.UUID("019a0000-0000-7000-8000-000000000041")),
            tasker.BatchItemResult(index=1, status="created",
                                   task_id=uuid.UUID("019a0000-0000-7000-8000-000000000042")),
            tasker.BatchItemResult(index=2, status="existing",
                                   task_id=uuid.UUID("019a0000-0000-7000-8000-000000000043")),
            tasker.BatchItemResult(index=3, status="refused",
                                   error=tasker.BatchItemError(
                                       code="unknown_template",
                                       message="no template python_examples/nope")),
        ])
        with pytest.raises(tasker.InvalidRequest) as refused:
            c.create_tasks([items[0], items[0]])
        assert (refused.value.status, refused.value.code) == (400, "duplicate_idempotency_key")
        assert refused.value.details == {"key": "k", "indexes": [0, 1]}
        with pytest.raises(tasker.InvalidRequest) as large:
            c.create_tasks([items[2]])
        assert (large.value.status, large.value.code) == (413, "batch_too_large")
        assert large.value.details == {"tasks": 10001, "limit": 10000}

        purged = c.purge("30d")
        assert isinstance(purged, tasker.PurgeResult)
        assert purged.before == datetime(2026, 10, 28, 6, tzinfo=timezone.utc)
        assert (purged.tasks, purged.rows, purged.bytes_, purged.more) == (1234, 45678, 12345678, False)
        assert purged.states == ["complete", "error", "cancelled"]
        assert purged.by_state.additional_properties == {"complete": 1200, "error": 30, "cancelled": 4}
        would = c.purge("1h", states=["complete"], dry_run=True, limit=500)
        assert (would.dry_run, would.tasks, would.rows, would.bytes_) == (True, 3, None, None)
        with pytest.raises(tasker.InvalidRequest) as state:
            c.purge("30d", states=["running"])
        assert (state.value.code, state.value.details) == ("invalid_state", {"state": "running"})
        with pytest.raises(tasker.AuthError) as forbidden:
            c.purge("30d")
        assert (forbidden.value.status, forbidden.value.code) == (403, "forbidden")

    async def the_async_twin() -> None:
        async with tasker.AsyncClient(url) as c:
            assert await c.create_tasks(items[:1]) == batch
            assert await c.purge("36h", limit=10) == would

    asyncio.run(the_async_twin())

    wire = [
        {"namespace": NS, "name": "linear", "context": {"value": 1}, "idempotency_key": "k-1"},
        # None left out, a datetime in UTC as create_task sends it.
        {"namespace": NS, "name": "linear", "context": {"value": 2}, "priority": "high",
         "run_at": "2026-11-27T02:30:00Z"},
        {"namespace": NS, "name": "linear", "delay": "600s", "idempotency_key": "k-3"},
        {"namespace": NS, "name": "nope", "run_at": "2026-11-27T02:30:00Z", "delay": "10m"},
    ]
    assert api.requests == [
        ("POST", "/v1/tasks:batch", {"tasks": wire}),
        ("POST", "/v1/tasks:batch", {"tasks": [wire[0], wire[0]]}),
        ("POST", "/v1/tasks:batch", {"tasks": [wire[2]]}),
        # Only the fields given; dry_run always.
        ("POST", "/v1/purge", {"older_than": "30d", "dry_run": False}),
        ("POST", "/v1/purge",
         {"older_than": "1h", "states": ["complete"], "dry_run": True, "limit": 500}),
        ("POST", "/v1/purge", {"older_than": "30d", "states": ["running"], "dry_run": False}),
        ("POST", "/v1/purge", {"older_than": "30d", "dry_run": False}),
        # The async client's.
        ("POST", "/v1/tasks:batch", {"tasks": [wire[0]]}),
        ("POST", "/v1/purge", {"older_than": "36h", "dry_run": False, "limit": 10}),
    ]
    # The item dicts given are left as they were.
    assert items[1]["run_at"] == datetime(2026, 11, 27, 3, 30, tzinfo=berlin)


def test_a_purged_task_is_task_purged_everywhere_and_wait_stops_at_once(
    recorder: tuple[str, type[Recorder]],
) -> None:
    url, api = recorder
    path = f"/v1/tasks/{PURGED_ID}"
    api.answers.update({
        (method, route): (410, PURGED) for method, route in [
            ("GET", path), ("GET", f"{path}/steps"), ("GET", f"{path}/history"),
            ("POST", f"{path}/cancel"), ("POST", f"{path}/retry"),
            ("POST", f"{path}/signals/approved"), ("GET", f"{path}/signals"),
        ]
    })

    def is_purged(e: tasker.ApiError) -> None:
        assert isinstance(e, tasker.TaskPurged) and isinstance(e, tasker.NotFound)
        assert (e.status, e.code) == (410, "task_purged")
        assert e.details == PURGED["error"]["details"]
        assert str(e).startswith("410 task_purged: task ")

    with tasker.Client(url) as c:
        calls = [
            lambda: c.get_task(PURGED_ID), lambda: c.get_task(PURGED_ID, wait=5),
            lambda: c.steps(PURGED_ID), lambda: c.history(PURGED_ID),
            lambda: c.cancel(PURGED_ID), lambda: c.retry(PURGED_ID),
            lambda: c.signal(PURGED_ID, "approved"), lambda: c.signals(PURGED_ID),
        ]
        for call in calls:
            with pytest.raises(tasker.TaskPurged) as purged:
                call()
            is_purged(purged.value)
        # wait stops at the first answer: one request, no retry, no waiting out its timeout.
        before = len(api.requests)
        started = time.monotonic()
        with pytest.raises(tasker.TaskPurged) as purged:
            c.wait(PURGED_ID, 60)
        is_purged(purged.value)
        assert time.monotonic() - started < 5
        assert [(m, p.partition("?")[0]) for m, p, _ in api.requests[before:]] == [("GET", path)]

    async def the_async_twin() -> None:
        async with tasker.AsyncClient(url) as c:
            before = len(api.requests)
            with pytest.raises(tasker.TaskPurged) as purged:
                await c.wait(PURGED_ID, 60)
            is_purged(purged.value)
            assert len(api.requests) == before + 1

    asyncio.run(the_async_twin())


def test_the_retention_call_reads_the_policy(recorder: tuple[str, type[Recorder]]) -> None:
    url, api = recorder
    kept = {**RETENTION, "complete": "never", "tombstones": "1h30m", "busy_percent": 100,
            "last_purged_at": None}
    api.answers.update({
        ("GET", "/v1/retention"): [
            (200, RETENTION), (200, kept),
            (401, {"error": {"code": "unauthorized", "message": "a valid API token"}}),
            (200, RETENTION),
        ],
    })
    with tasker.Client(url) as c:
        policy = c.retention()
        assert policy == tasker.RetentionPolicy(
            complete="30d", error="90d", cancelled="30d", tombstones="90d", interval_ms=60000,
            batch=200, busy_percent=5,
            last_purged_at=datetime(2026, 11, 27, 10, 2, 3, 123456, tzinfo=timezone.utc),
        )
        assert c.retention() == tasker.RetentionPolicy(
            complete="never", error="90d", cancelled="30d", tombstones="1h30m",
            interval_ms=60000, batch=200, busy_percent=100, last_purged_at=None,
        )
        with pytest.raises(tasker.AuthError) as refused:
            c.retention()
        assert (refused.value.status, refused.value.code) == (401, "unauthorized")

    async def the_async_twin() -> None:
        async with tasker.AsyncClient(url) as c:
            assert await c.retention() == policy

    asyncio.run(the_async_twin())
    # A plain GET, no query, no body.
    assert api.requests == [("GET", "/v1/retention", None)] * 4


def test_the_conformance_clients_scale_mode_prints_what_it_read_and_did(
    recorder: tuple[str, type[Recorder]],
) -> None:
    """``conformance-client URL scale NAMESPACE NAME CONTEXT_JSON KEY_PREFIX``: four lines, a
    label and one line of compact JSON each, against the stand-in (the conformance suite runs it
    against a real orchestrator)."""
    url, api = recorder
    refused = {"index": 2, "status": "refused",
               "error": {"code": "unknown_template", "message": "no such template"}}
    first = {"created": 2, "existing": 0, "refused": 1, "results": [
        {"index": 0, "status": "created", "task_id": "019a0000-0000-7000-8000-000000000041"},
        {"index": 1, "status": "created", "task_id": "019a0000-0000-7000-8000-000000000042"},
        refused,
    ]}
    second = {"created": 0, "existing": 2, "refused": 1, "results": [
        {**first["results"][0], "status": "existing"},
        {**first["results"][1], "status": "existing"},
        refused,
    ]}
    api.answers.update({
        ("POST", "/v1/tasks:batch"): [(200, first), (200, second)],
        ("POST", "/v1/purge"): (200, DRY_RUN),
        ("GET", "/v1/retention"): (200, RETENTION),
    })
    out = subprocess.run(
        [sys.executable, str(WORKER_DIR / "fixtures/conformance_client.py"), url, "scale", NS,
         "linear", '{"value": 6}', "conformance-scale-7"],
        capture_output=True, text=True, timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        'first ["created","created","refused:unknown_template"]',
        'second ["existing","existing","refused:unknown_template"]',
        'purge {"dry_run":true,"states":["complete"],"more":false,"rows":null}',
        'retention {"complete":"30d","error":"90d","cancelled":"30d","busy_percent":5}',
    ]
    batch = {"tasks": [
        {"namespace": NS, "name": "linear", "context": {"value": 6},
         "idempotency_key": "conformance-scale-7-1"},
        {"namespace": NS, "name": "linear", "context": {"value": 6},
         "idempotency_key": "conformance-scale-7-2"},
        {"namespace": NS, "name": "no_such_template", "idempotency_key": "conformance-scale-7-3"},
    ]}
    assert api.requests == [
        ("POST", "/v1/tasks:batch", batch),
        ("POST", "/v1/tasks:batch", batch),
        ("POST", "/v1/purge", {"older_than": "1h", "states": ["complete"], "dry_run": True}),
        ("GET", "/v1/retention", None),
    ]


def test_an_unreachable_orchestrator_is_a_connection_error() -> None:
    url = f"http://127.0.0.1:{free_port()}"  # nobody listens there
    with tasker.Client(url, timeout=5) as c:
        with pytest.raises(tasker.ConnectionFailed) as failed:
            c.get_task(str(uuid.uuid4()))
    assert isinstance(failed.value, tasker.ClientError)
    assert not isinstance(failed.value, tasker.ApiError)
    assert isinstance(failed.value.__cause__, httpx.ConnectError)
    assert url in str(failed.value)

    async def unreachable() -> tasker.ConnectionFailed:
        async with tasker.AsyncClient(url, timeout=5) as c:
            with pytest.raises(tasker.ConnectionFailed) as failed:
                await c.list_tasks()
            return failed.value

    assert isinstance(asyncio.run(unreachable()).__cause__, httpx.ConnectError)


def test_the_async_client_has_the_same_calls(
    orchestrator: Orchestrator, python_worker: Any
) -> None:
    async def scenario() -> None:
        async with tasker.AsyncClient(orchestrator.url) as c:
            # Several tasks waited for at once, on one event loop.
            created = await asyncio.gather(
                *(c.create_task(NS, "diamond", {"value": n}) for n in range(3))
            )
            done = await asyncio.gather(*(c.wait(t.id, 60) for t in created))
            # diamond: 2n -> (4n², 2n + 10) -> 4n² + 2n + 10
            assert [t.result for t in done] == [
                {"join": {"value": 4 * n * n + 2 * n + 10}} for n in range(3)
            ]
            key = f"async-{uuid.uuid4()}"
            first = await c.create_task(NS, "diamond", {"value": 1}, idempotency_key=key)
            again = await c.create_task(NS, "diamond", {"value": 1}, idempotency_key=key)
            assert again.id == first.id
            with pytest.raises(tasker.Conflict) as reused:
                await c.create_task(NS, "diamond", {"value": 2}, idempotency_key=key)
            assert reused.value.code == "idempotency_key_reused"

            listed = [t.id async for t in c.iter_tasks(name="diamond", page_size=2)]
            assert set(listed) >= {t.id for t in created} | {first.id}
            assert len(listed) == len(set(listed))
            page = await c.list_tasks(name="diamond", limit=1)
            assert len(page.tasks) == 1 and page.next_before == page.tasks[0].id

            task = done[0]
            assert (await c.get_task(task.id)) == task
            assert [s.name for s in await c.steps(task.id)] == ["start", "left", "right", "join"]
            assert len((await c.steps_page(task.id, limit=3)).steps) == 3
            assert (await c.history(task.id))[-1].to == "complete"
            with pytest.raises(tasker.Conflict) as refused:
                await c.cancel(task.id)
            assert refused.value.code == "task_not_running"
            with pytest.raises(tasker.NotFound):
                await c.get_task(str(uuid.uuid4()))

            failed = await c.create_task(NS, "permanent_failure")
            assert (await c.wait(failed.id, 60)).state == "error"
            assert (await c.retry(failed.id)).id == failed.id
            assert (await c.wait(failed.id, 60)).state == "error"
            await c.resolve(failed.id, "doomed", {"value": 5})
            assert (await c.wait(failed.id, 60)).result == {"never": {"value": 10}}

    asyncio.run(scenario())


def test_settings_come_from_the_environment_when_not_given(
    monkeypatch: pytest.MonkeyPatch, orchestrator: Orchestrator
) -> None:
    for name in ("TASKER_URL", "TASKER_TOKEN", "TASKER_TLS_CA_FILE"):
        monkeypatch.delenv(name, raising=False)
    with tasker.Client() as c:
        assert c.base_url == tasker.client.DEFAULT_URL == "http://127.0.0.1:8080"
    monkeypatch.setenv("TASKER_URL", orchestrator.url + "/")
    with tasker.Client() as c:
        assert c.base_url == orchestrator.url
        assert c.list_tasks(limit=1).tasks is not None
    with tasker.Client("http://elsewhere:1") as c:
        assert c.base_url == "http://elsewhere:1", "an argument beats the environment"
    with pytest.raises(tasker.ClientError, match="must start with http"):
        tasker.Client("127.0.0.1:8080")


def test_tokens_are_sent_and_auth_errors_are_typed(
    monkeypatch: pytest.MonkeyPatch, tasker_env: TaskerEnv, start_orchestrator: Any,
    python_worker: Any,
) -> None:
    # The orchestrator refuses to start requiring tokens while none exists.
    reader = tasker_env.create_token(f"reader-{uuid.uuid4().hex[:8]}", "read")
    writer = tasker_env.create_token(f"writer-{uuid.uuid4().hex[:8]}", "write")
    guarded = start_orchestrator({"TASKER_ORCHESTRATOR__AUTH": "tokens"})
    monkeypatch.delenv("TASKER_TOKEN", raising=False)

    with tasker.Client(guarded.url) as anonymous:
        with pytest.raises(tasker.AuthError) as refused:
            anonymous.list_tasks()
        assert (refused.value.status, refused.value.code) == (401, "unauthenticated")
    with tasker.Client(guarded.url, token=reader) as c:
        assert c.list_tasks(limit=1) is not None
        with pytest.raises(tasker.AuthError) as forbidden:
            c.create_task(NS, "linear", {"value": 6})
        assert (forbidden.value.status, forbidden.value.code) == (403, "forbidden")
    monkeypatch.setenv("TASKER_TOKEN", writer)
    with tasker.Client(guarded.url) as c:
        task = c.create_task(NS, "linear", {"value": 6})
        assert c.wait(task.id, 60).result == LINEAR_RESULT


def make_tls(folder: Path) -> tuple[Path, Path, Path]:
    """A throwaway CA and a certificate it signs for 127.0.0.1 (as cargo-make/services.sh makes
    them): the CA's file, the certificate's, its key's."""
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    ca, ca_key = folder / "ca.pem", folder / "ca.key"
    cert, key, csr, ext = (folder / f"server.{e}" for e in ("pem", "key", "csr", "ext"))
    ext.write_text(
        "subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=critical,CA:FALSE\n"
        "keyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n"
    )
    for command in (
        ["req", "-x509", *ec, "-keyout", ca_key, "-out", ca, "-days", "2",
         "-subj", "/CN=Tasker pytest CA",
         "-addext", "basicConstraints=critical,CA:TRUE",
         "-addext", "keyUsage=critical,keyCertSign,cRLSign"],
        ["req", *ec, "-keyout", key, "-out", csr, "-subj", "/CN=localhost"],
        ["x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial",
         "-days", "2", "-extfile", ext, "-out", cert],
    ):
        subprocess.run(["openssl", *map(str, command)], check=True, capture_output=True, timeout=60)
    return ca, cert, key


def test_https_with_a_private_ca(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, start_orchestrator: Any, python_worker: Any
) -> None:
    monkeypatch.delenv("TASKER_TLS_CA_FILE", raising=False)
    ca, cert, key = make_tls(tmp_path)
    secure = start_orchestrator({
        "TASKER_ORCHESTRATOR__TLS_CERT_FILE": str(cert),
        "TASKER_ORCHESTRATOR__TLS_KEY_FILE": str(key),
    })
    assert secure.url.startswith("https://")
    with tasker.Client(secure.url, tls_ca_file=ca) as c:
        task = c.create_task(NS, "linear", {"value": 6})
        assert c.wait(task.id, 60).result == LINEAR_RESULT

    # Without the CA, the certificate cannot be verified.
    with tasker.Client(secure.url) as c:
        with pytest.raises(tasker.ConnectionFailed) as refused:
            c.get_task(task.id)
    assert "CERTIFICATE_VERIFY_FAILED" in str(refused.value)

    not_a_ca = tmp_path / "empty.pem"
    not_a_ca.write_text("no certificate here\n")
    for path in (not_a_ca, tmp_path / "missing.pem"):
        with pytest.raises(tasker.ClientError, match="TLS: cannot use"):
            tasker.Client(secure.url, tls_ca_file=path)


EXAMPLES = WORKER_DIR / "examples"


@pytest.mark.parametrize("example, output", [
    ("submit_and_wait.py", ['complete {"halve": {"value": 242}}']),
    # diamond: 2n -> (4n², 2n + 10) -> 4n² + 2n + 10
    ("submit_many.py", ["1 complete 16", "2 complete 30", "3 complete 52"]),
])
def test_the_example_apps_run_and_the_readme_shows_them(
    example: str, output: list[str], orchestrator: Orchestrator, python_worker: Any
) -> None:
    path = EXAMPLES / example
    done = subprocess.run(
        [sys.executable, str(path)], env={**os.environ, "TASKER_URL": orchestrator.url},
        capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == output

    readme = (WORKER_DIR / "README.md").read_text()
    shown = re.search(rf"```python\n(# examples/{re.escape(example)}\n.*?)```", readme, re.S)
    assert shown, f"the README shows examples/{example}"
    assert shown.group(1) == path.read_text(), "the README's copy of the example is stale"
