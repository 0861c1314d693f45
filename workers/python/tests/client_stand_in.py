"""A stand-in for the API (``recorder``: a server answering what a test fills in, keeping every
request) and the answers the stand-in tests share."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Iterator

import pytest


NS = "python_examples"
LINEAR_RESULT = {"halve": {"value": 242}}  # linear with {"value": 6}: 12, 22, 484, 242
APPROVED = {"approved_by": "pytest"}
# signal_wait with {"value": 5} and the signal `approved` carrying APPROVED.
SIGNAL_WAIT_RESULT = {"finish": {"value": 10, "approved_by": "pytest"}}

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
    "wait": {"kind": "signal", "signal": "approved", "event": None,
             "until": "2026-12-03T09:00:00Z", "on_timeout": "fail"},
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

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = answer

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
