"""Workflow tests on the real engine with a clock the test controls (docs/testing.md)::

    from tasker.testing import WorkflowEnv

    def test_a_week_passes():
        with WorkflowEnv("templates/") as env:
            task = env.client.create_task("shop", "follow_up")
            assert env.wait(task.id).state == "complete"   # its `sleep: 7d` skipped

:class:`WorkflowEnv` starts ``tasker-orchestrator test-env`` (``TASKER_ORCHESTRATOR_BIN``, else
``tasker-orchestrator`` on ``PATH``): an orchestrator in test mode on a database and queue prefix
of this environment's own, on the PostgreSQL and RabbitMQ that ``DATABASE_URL`` and ``AMQP_URL``
name. It registers the templates and runs the registry's handlers in this process, as a worker
would. Leaving the ``with`` block stops both; the orchestrator then deletes the database and
the queues.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
from datetime import datetime
from types import TracebackType
from typing import Any, Self

from ._worker import Worker
from .client import Client, Clock, Skipped, Task
from .registry import Registry, default_registry


def orchestrator_bin() -> str:
    """``TASKER_ORCHESTRATOR_BIN``, else ``tasker-orchestrator`` on ``PATH``."""
    given = os.environ.get("TASKER_ORCHESTRATOR_BIN")
    if given:
        return given
    found = shutil.which("tasker-orchestrator")
    if found is None:
        raise FileNotFoundError(
            "tasker-orchestrator is not on PATH: build it (cargo build -p tasker-orchestration) "
            "and put it on PATH or in TASKER_ORCHESTRATOR_BIN"
        )
    return found


class WorkflowEnv:
    """An orchestrator in test mode and this process's handlers; see the module's docs.

    ``time_skipping`` (on by default): :meth:`wait` moves the engine's clock to its next timer
    whenever no step is with a worker, so waits, retry backoffs, deadlines and schedules pass
    at once. :meth:`advance` moves it by a duration, :meth:`skip` to the next timer."""

    def __init__(
        self,
        templates: str | os.PathLike[str],
        *,
        registry: Registry | None = None,
        time_skipping: bool = True,
    ) -> None:
        self.time_skipping = time_skipping
        self._process = subprocess.Popen(
            [orchestrator_bin(), "test-env"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        assert self._process.stdout is not None
        line = self._process.stdout.readline()
        if not line:
            self._process.wait()
            raise RuntimeError(
                "tasker-orchestrator test-env ended before serving (its error is on stderr)"
            )
        self.place: dict[str, str] = json.loads(line)
        self.client = Client(self.place["url"])
        try:
            self._worker = Worker.start(
                templates,
                registry=registry if registry is not None else default_registry,
                health_port=0,
                orchestrator_url=self.place["url"],
                amqp_url=self.place["amqp_url"],
                queue_prefix=self.place["queue_prefix"],
                register_templates=True,
            )
        except BaseException:
            self._end_orchestrator()
            raise
        self._thread = threading.Thread(target=self._worker.run, name="tasker-env-worker")
        self._thread.start()

    def now(self) -> datetime:
        """The engine's time."""
        return self.client.clock().now

    def advance(self, by: str) -> Clock:
        """Moves the engine's clock forward by ``by`` (``"7d"``, ``"90s"``); every timer then
        due has rung when it returns."""
        return self.client.advance_clock(by)

    def skip(self) -> Skipped:
        """Moves the engine's clock to its next timer if no step is with a worker."""
        return self.client.skip_clock()

    def wait(self, task_id: Any, timeout: float = 60.0) -> Task:
        """Waits up to ``timeout`` seconds of wall time for a task to end (skipping time when
        :attr:`time_skipping` is on); the task as it is then."""
        if self.time_skipping:
            return self.client.wait_skipping(task_id, timeout)
        return self.client.wait(task_id, timeout)

    def stop(self) -> None:
        """Stops the handlers (running ones finish), then the orchestrator, which deletes the
        environment's database and queues. Idempotent."""
        self._worker.stop()
        self._thread.join()
        self.client.close()
        self._end_orchestrator()

    def _end_orchestrator(self) -> None:
        if self._process.stdin is not None and not self._process.stdin.closed:
            # Its stdin closing is what ends it.
            self._process.stdin.close()
        self._process.wait()
        if self._process.stdout is not None:
            self._process.stdout.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
