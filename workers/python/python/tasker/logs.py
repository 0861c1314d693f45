"""The worker core's logs, in Python's ``logging``.

The Rust core of a worker (consuming, publishing results, reconnecting) logs through
``logging`` like the rest of the process: each record goes to the logger named for the Rust
module that wrote it, ``tasker_worker.worker`` for ``tasker_worker::worker``, at its level, so
the application's logging configuration (handlers, levels, formats) applies to it too.
``RUST_LOG`` chooses what the core emits at all (``info`` by default).

A daemon thread moves the records from the core; it starts with the first ``Runner``.
"""

from __future__ import annotations

import json
import logging
import threading

from . import _native

#: The core's level names, as ``logging`` levels.
LEVELS = {
    "ERROR": logging.ERROR,
    "WARN": logging.WARNING,
    "INFO": logging.INFO,
    "DEBUG": logging.DEBUG,
    "TRACE": logging.DEBUG,
}

_lock = threading.Lock()
_thread: threading.Thread | None = None


def forward() -> None:
    """Starts moving the core's log records into ``logging`` (once per process)."""
    global _thread
    with _lock:
        if _thread is None:
            _thread = threading.Thread(target=_drain, name="tasker-logs", daemon=True)
            _thread.start()


def _drain() -> None:
    while True:
        # Blocks with the GIL released, at most half a second at a time.
        for record in json.loads(_native.next_log_records(256, 0.5)):
            name = str(record["target"]).replace("::", ".")
            logging.getLogger(name).log(LEVELS.get(record["level"], logging.INFO), record["message"])
