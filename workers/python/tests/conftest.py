"""Shared fixtures. The end-to-end ones use the real RabbitMQ (AMQP_URL, set by test.sh):
step messages are published straight to a per-test queue prefix, the real binding consumes
them, and the results are read back from the results queue."""

from __future__ import annotations

import json
import os
import threading
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator

import pika
import pytest

import tasker
from tasker import _native
from tasker.worker import load_handlers

HERE = Path(__file__).resolve().parent
WORKER_DIR = HERE.parent
REPO = WORKER_DIR.parent.parent
TEMPLATES = REPO / "tests/fixtures/task_templates/python"
NAMESPACE = "python_examples"


@pytest.fixture(scope="session")
def fixture_handlers() -> tasker.Registry:
    """The conformance handlers, loaded once (they register in the default registry)."""
    if "double" not in tasker.default_registry:
        load_handlers(str(WORKER_DIR / "fixtures/handlers.py"))
    return tasker.default_registry


def amqp_url() -> str:
    url = os.environ.get("AMQP_URL")
    if not url:
        pytest.fail("AMQP_URL is not set: run workers/python/test.sh (it starts the services)")
    return url


def dead_letter_args(prefix: str) -> dict[str, str]:
    # Must match tasker-broker's declarations, or RabbitMQ refuses the second declare.
    return {"x-dead-letter-exchange": "", "x-dead-letter-routing-key": f"{prefix}.dead"}


@dataclass
class Broker:
    """A queue prefix of this test's own on the real RabbitMQ."""

    prefix: str
    channel: Any
    published: int = 0
    _results: list[dict[str, Any]] = field(default_factory=list)

    @property
    def steps_queue(self) -> str:
        return f"{self.prefix}.steps.{NAMESPACE}"

    @property
    def results_queue(self) -> str:
        return f"{self.prefix}.results"

    def publish_step(self, handler: str, context: Any = None, *, attempt: int = 1,
                     parents: dict[str, Any] | None = None, timeout_ms: int = 10_000) -> str:
        """Publishes a step message as the orchestrator would; returns its step id."""
        step_id = str(uuid.uuid4())
        message = {
            "task_id": str(uuid.uuid4()),
            "step_id": step_id,
            "namespace": NAMESPACE,
            "task_name": "pytest",
            "step_name": f"step_{handler}",
            "handler": handler,
            "attempt": attempt,
            "max_attempts": 3,
            "context": {} if context is None else context,
            "parent_results": parents or {},
            "dispatched_at": datetime.now(timezone.utc).isoformat(),
            "timeout_ms": timeout_ms,
        }
        self.channel.basic_publish(
            exchange="",
            routing_key=self.steps_queue,
            body=json.dumps(message).encode(),
            properties=pika.BasicProperties(delivery_mode=2, content_type="application/json"),
        )
        self.published += 1
        return step_id

    def results(self, n: int, timeout_s: float = 20.0) -> dict[str, dict[str, Any]]:
        """Waits (on the socket, up to timeout_s without a message) for n results in total;
        returns every result so far by step id."""
        if len(self._results) < n:
            for method, _props, body in self.channel.consume(
                self.results_queue, inactivity_timeout=timeout_s
            ):
                if method is None:
                    break
                self.channel.basic_ack(method.delivery_tag)
                # One message carries a batch of results (a JSON array).
                batch = json.loads(body)
                self._results.extend(batch if isinstance(batch, list) else [batch])
                if len(self._results) >= n:
                    break
            self.channel.cancel()
        assert len(self._results) >= n, f"{len(self._results)} of {n} results within {timeout_s} s"
        return {r["step_id"]: r for r in self._results}


@pytest.fixture
def broker(monkeypatch: pytest.MonkeyPatch) -> Iterator[Broker]:
    prefix = f"pytest_{uuid.uuid4().hex[:12]}"
    # The native worker reads its queue prefix from the environment when it starts.
    monkeypatch.setenv("TASKER_QUEUE_PREFIX", prefix)
    connection = pika.BlockingConnection(pika.URLParameters(amqp_url()))
    channel = connection.channel()
    # Declared before publishing, so no message is dropped before the worker declares them.
    channel.queue_declare(f"{prefix}.dead", durable=True)
    for queue in (f"{prefix}.results", f"{prefix}.steps.{NAMESPACE}"):
        channel.queue_declare(queue, durable=True, arguments=dead_letter_args(prefix))
    try:
        yield Broker(prefix, channel)
    finally:
        for queue in (f"{prefix}.steps.{NAMESPACE}", f"{prefix}.results", f"{prefix}.dead"):
            channel.queue_delete(queue)
        connection.close()


@dataclass
class Running:
    native: Any
    runner: tasker.Runner
    thread: threading.Thread
    drained: list[bool]

    def stop(self) -> bool:
        self.runner.stop()
        self.thread.join(timeout=30)
        assert not self.thread.is_alive(), "the runner did not stop within 30 s"
        self.native.stop()
        return self.drained[0]


@pytest.fixture
def start_worker(broker: Broker) -> Iterator[Any]:
    """Starts the real native worker with a runner over the given registry, in a thread."""
    started: list[Running] = []

    def start(registry: tasker.Registry, concurrency: int = 4, grace_s: float = 5.0) -> Running:
        native = _native.Worker(str(TEMPLATES), health_port=0, concurrency=concurrency)
        runner = tasker.Runner(native, registry)
        drained: list[bool] = []
        thread = threading.Thread(target=lambda: drained.append(runner.run(grace_s)), daemon=True)
        thread.start()
        running = Running(native, runner, thread, drained)
        started.append(running)
        return running

    yield start
    for running in started:
        if running.thread.is_alive():
            running.stop()
