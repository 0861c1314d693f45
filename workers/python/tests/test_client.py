"""The API client against a real orchestrator, with the Python worker running the fixture
handlers (conftest: ``tasker_env``, ``orchestrator``, ``python_worker``). Nothing sleeps: every
wait is the API's long poll, with a timeout. The calls' wire against a stand-in API is in
test_client_time.py, test_client_flow.py and test_client_scale.py; settings, tokens, TLS and
the async twin in test_client_transport.py."""

from __future__ import annotations

import threading
import time
import uuid
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Iterator

import pytest

import tasker
from conftest import Orchestrator, TaskerEnv
from client_stand_in import NS, LINEAR_RESULT, APPROVED, SIGNAL_WAIT_RESULT


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
