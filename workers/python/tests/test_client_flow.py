"""The fair-sharing calls (priorities, throttled steps, concurrency and rate keys, pauses)
against a stand-in API (client_stand_in), and the conformance client's ``flow`` mode."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from datetime import datetime, timedelta, timezone

import pytest

import tasker
from conftest import WORKER_DIR
from client_stand_in import NS, SCHEDULED_TASK, WAIT_STEP, Recorder, recorder  # noqa: F401 (the fixture)


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
