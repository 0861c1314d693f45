"""The worker core's logs, in Python's ``logging``, and the worker's own log format.

The Rust core of a worker (consuming, publishing results, reconnecting) logs through
``logging`` like the rest of the process: each record goes to the logger named for the Rust
module that wrote it, ``tasker_worker.worker`` for ``tasker_worker::worker``, at its level, so
the application's logging configuration (handlers, levels, formats) applies to it too.
``RUST_LOG`` chooses what the core emits at all (``info`` by default).

A daemon thread moves the records from the core; it starts with the first ``Runner``.

``TASKER_LOG_FORMAT=json`` writes one JSON object a line, as the Rust binaries do
(:class:`JsonFormatter`): in ``tasker-worker-python``, and in a program of your own that has
not configured ``logging`` when its first worker runs (:func:`configure`).
"""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
from datetime import datetime, timezone
from typing import Any

from . import _native

#: The core's level names, as ``logging`` levels.
LEVELS = {
    "ERROR": logging.ERROR,
    "WARN": logging.WARNING,
    "INFO": logging.INFO,
    "DEBUG": logging.DEBUG,
    "TRACE": logging.DEBUG,
}

#: The variable that chooses the format: ``text`` (the default) or ``json``.
FORMAT_VARIABLE = "TASKER_LOG_FORMAT"

#: The text format of ``tasker-worker-python``'s lines.
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

# The attributes every LogRecord has: the others came from `extra=` and are the record's fields.
_STANDARD = frozenset(logging.LogRecord("", 0, "", 0, "", (), None).__dict__) | {
    "message", "asctime", "taskName",
}

_lock = threading.Lock()
_thread: threading.Thread | None = None


def json_wanted() -> bool:
    """``TASKER_LOG_FORMAT=json`` (any case)."""
    return os.environ.get(FORMAT_VARIABLE, "").strip().lower() == "json"


class JsonFormatter(logging.Formatter):
    """One JSON object a line, as the Rust binaries write with ``TASKER_LOG_FORMAT=json``:
    ``timestamp`` (RFC 3339, UTC, microseconds), ``level`` (``ERROR``, ``WARN``, ``INFO``,
    ``DEBUG``, ``TRACE``), ``target`` (the Rust module for the core's records, else the logger's
    name), ``message``, then the record's fields (``extra=``) at the top level, and
    ``exception`` with its traceback if there is one."""

    def format(self, record: logging.LogRecord) -> str:
        stamp = datetime.fromtimestamp(record.created, timezone.utc)
        message = getattr(record, "_rust_message", None)
        line: dict[str, Any] = {
            "timestamp": stamp.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
            "level": getattr(record, "_rust_level", None) or level_name(record.levelno),
            "target": getattr(record, "_rust_target", None) or record.name,
            "message": record.getMessage() if message is None else message,
        }
        for key, value in record.__dict__.items():
            if key not in _STANDARD and not key.startswith("_"):
                line.setdefault(key, value)
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        elif record.exc_text:
            line["exception"] = record.exc_text
        if record.stack_info:
            line["stack"] = self.formatStack(record.stack_info)
        return json.dumps(line, ensure_ascii=False, separators=(",", ":"), default=str)


def level_name(levelno: int) -> str:
    """A ``logging`` level as the Rust core names levels."""
    if levelno >= logging.ERROR:
        return "ERROR"
    if levelno >= logging.WARNING:
        return "WARN"
    return "INFO" if levelno >= logging.INFO else "DEBUG"


def configure(level: int = logging.INFO) -> None:
    """Lines on stderr at ``level`` and above, as text or, with ``TASKER_LOG_FORMAT=json``, one
    JSON object a line; does nothing if ``logging`` is configured already (the root logger has
    a handler), as :func:`logging.basicConfig`."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if json_wanted() else logging.Formatter(TEXT_FORMAT))
    logging.basicConfig(level=level, handlers=[handler])


def forward() -> None:
    """Starts moving the core's log records into ``logging`` (once per process). With
    ``TASKER_LOG_FORMAT=json`` and ``logging`` not configured yet, configures it first."""
    global _thread
    with _lock:
        if _thread is None:
            if json_wanted():
                configure()
            _thread = threading.Thread(target=_drain, name="tasker-logs", daemon=True)
            _thread.start()


def _drain() -> None:
    while True:
        # Blocks with the GIL released, at most half a second at a time.
        for record in json.loads(_native.next_log_records(256, 0.5)):
            emit(record)


def emit(record: dict[str, Any]) -> None:
    """Hands one of the core's records (``{"level", "target", "message"}``, and ``fields`` when
    the core sends the event's fields apart from its message) to ``logging``: text lines end
    with the fields as `` key=value``, JSON lines have them at the top level."""
    level, target, message = str(record["level"]), str(record["target"]), str(record["message"])
    fields = record.get("fields")
    fields = fields if isinstance(fields, dict) else {}
    extra = {k: v for k, v in fields.items() if k not in _STANDARD}
    extra.update(_rust_level=level, _rust_target=target, _rust_message=message)
    text = message + "".join(f" {k}={v}" for k, v in fields.items())
    logging.getLogger(target.replace("::", ".")).log(
        LEVELS.get(level, logging.INFO), text, extra=extra
    )
