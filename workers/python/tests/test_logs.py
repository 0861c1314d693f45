"""``TASKER_LOG_FORMAT=json``: every line the worker writes to stderr is one JSON object, the core's
records and Python's own alike, as the Rust binaries write them (tests/fast/logs.rs); a program
that configured ``logging`` itself keeps its own format."""

import json
import os
import re
import signal
import subprocess
import sys
import threading
from typing import Any

from conftest import TEMPLATES, WORKER_DIR

TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")


def json_lines(lines: list[str]) -> list[dict[str, Any]]:
    """Each line parsed, with the fields every line has checked."""
    parsed = []
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError:
            raise AssertionError(f"not a JSON line: {line!r}") from None
        assert isinstance(record, dict), line
        assert TIMESTAMP.match(record["timestamp"]), line
        assert record["level"] in {"ERROR", "WARN", "INFO", "DEBUG", "TRACE"}, line
        assert isinstance(record["target"], str) and record["target"], line
        assert isinstance(record["message"], str), line
        parsed.append(record)
    return parsed


def test_the_worker_command_writes_json_lines(broker) -> None:
    env = {**os.environ, "TASKER_LOG_FORMAT": "json", "RUST_LOG": "info", "NO_COLOR": "1"}
    p = subprocess.Popen(
        [sys.executable, "-m", "tasker.worker", "--templates", str(TEMPLATES),
         "--handlers", str(WORKER_DIR / "fixtures/handlers.py"), "--health-port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )
    lines: list[str] = []
    consuming = threading.Event()

    def drain() -> None:
        assert p.stderr is not None
        for line in p.stderr:
            lines.append(line.rstrip("\n"))
            if "worker consuming" in line:
                consuming.set()

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        assert p.stdout is not None
        assert p.stdout.readline().startswith("tasker worker ready: language=python")
        assert consuming.wait(20), "no 'worker consuming' line within 20 s:\n" + "\n".join(lines)
        p.send_signal(signal.SIGTERM)
        assert p.wait(timeout=20) == 0, "\n".join(lines)
    finally:
        p.kill()
        p.wait()
    reader.join(timeout=10)
    records = json_lines([line for line in lines if line.strip()])
    # The core's records name their Rust module; Python's own lines their logger.
    core = [r for r in records if r["target"] == "tasker_worker::worker"]
    assert any(r["message"].startswith("worker consuming") for r in core), records
    assert all(r["level"] == "INFO" for r in core if r["message"].startswith("worker consuming"))
    own = [r for r in records if r["target"] == "tasker"]
    assert any(r["message"].startswith("handlers: ") for r in own), records
    assert records[-1]["target"] == "tasker" and records[-1]["message"] == "stopped", records
    assert records[-1]["level"] == "INFO"


LIBRARY = """
import logging, sys
from tasker import logs
if sys.argv[1] == "configured":
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
logs.forward()  # what a Worker's run does first
logging.getLogger("app.orders").warning("order %s late", 7, extra={"order": 7, "late_s": 1.5})
"""


def run_library(mode: str) -> str:
    env = {**os.environ, "TASKER_LOG_FORMAT": "JSON"}
    done = subprocess.run([sys.executable, "-c", LIBRARY, mode], capture_output=True, text=True,
                          env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stderr


def test_a_program_that_has_not_configured_logging_gets_json_lines_with_their_fields() -> None:
    [record] = json_lines(run_library("bare").splitlines())
    assert record["level"] == "WARN" and record["target"] == "app.orders"
    assert record["message"] == "order 7 late"
    assert record["order"] == 7 and record["late_s"] == 1.5


def test_a_program_that_configured_logging_keeps_its_format() -> None:
    assert run_library("configured").splitlines() == ["WARNING app.orders: order 7 late"]


def test_a_core_record_with_fields_apart_from_its_message() -> None:
    """Text lines end with the fields as ``key=value``; JSON lines have them at the top level,
    and keep the core's own level name and module."""
    import io
    import logging

    from tasker import logs

    logger = logging.getLogger("tasker_worker.logs_test")
    text, as_json = io.StringIO(), io.StringIO()
    handlers = [logging.StreamHandler(text), logging.StreamHandler(as_json)]
    handlers[0].setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    handlers[1].setFormatter(logs.JsonFormatter())
    for handler in handlers:
        logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        logs.emit({"level": "TRACE", "target": "tasker_worker::logs_test", "message": "took",
                   "fields": {"count": 3, "queue": "q.steps"}})
    finally:
        for handler in handlers:
            logger.removeHandler(handler)
        logger.setLevel(logging.NOTSET)
    assert text.getvalue() == "DEBUG tasker_worker.logs_test: took count=3 queue=q.steps\n"
    [record] = json_lines(as_json.getvalue().splitlines())
    assert record["level"] == "TRACE" and record["target"] == "tasker_worker::logs_test"
    assert record["message"] == "took" and record["count"] == 3 and record["queue"] == "q.steps"
