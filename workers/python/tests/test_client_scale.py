"""Bulk create, purge, a purged task and the retention policy against a stand-in API
(client_stand_in), and the conformance client's ``scale`` mode."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
import uuid
from datetime import datetime, timedelta, timezone

import pytest

import tasker
from conftest import WORKER_DIR
from client_stand_in import NS, Recorder, recorder  # noqa: F401 (the fixture)


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
