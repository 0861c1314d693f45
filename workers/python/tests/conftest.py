"""Shared fixtures. The end-to-end ones use the real RabbitMQ (AMQP_URL, set by test.sh):
step messages are published straight to a per-test queue prefix, the real binding consumes
them, and the results are read back from the results queue. The API client's tests run against
a real orchestrator (``target/debug/tasker-orchestrator``) on a database and a queue prefix of
their own, with the Python worker running the fixture handlers for it (``tasker_env``,
``orchestrator``, ``python_worker``)."""

from __future__ import annotations

import glob
import json
import os
import shutil
import socket
import subprocess
import threading
import uuid
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator
from urllib.parse import urlsplit, urlunsplit

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


def start_native(templates: Any = TEMPLATES, **options: Any) -> Any:
    """``NativeWorker.start`` with the protocol's start options as keyword arguments."""
    return _native.NativeWorker.start(json.dumps({"templates": str(templates), **options}))


def run_worker(registry: tasker.Registry, concurrency: int = 4, grace_s: float = 5.0) -> Running:
    """Starts the real native worker (configured from the environment) with a runner over
    ``registry``, in a thread."""
    native = start_native(health_port=0, concurrency=concurrency)
    runner = tasker.Runner(native, registry)
    drained: list[bool] = []
    thread = threading.Thread(target=lambda: drained.append(runner.run(grace_s)), daemon=True)
    thread.start()
    return Running(native, runner, thread, drained)


@pytest.fixture
def start_worker(broker: Broker) -> Iterator[Any]:
    """Starts the real native worker with a runner over the given registry, in a thread."""
    started: list[Running] = []

    def start(registry: tasker.Registry, concurrency: int = 4, grace_s: float = 5.0) -> Running:
        running = run_worker(registry, concurrency, grace_s)
        started.append(running)
        return running

    yield start
    for running in started:
        if running.thread.is_alive():
            running.stop()


# --- A real orchestrator for the API client's tests ------------------------------------------


def orchestrator_binary() -> Path:
    target = Path(os.environ.get("CARGO_TARGET_DIR") or REPO / "target")
    path = target / "debug" / "tasker-orchestrator"
    if not path.is_file():
        pytest.fail(
            f"{path} is missing: run `cargo build --workspace --bins` (cargo make test does)"
        )
    return path


def psql_binary() -> str:
    """``psql`` on the PATH, else the newest of Debian's PostgreSQL versions."""
    found = shutil.which("psql")
    if found:
        return found
    versions = glob.glob("/usr/lib/postgresql/*/bin/psql")
    if not versions:
        pytest.fail("psql is missing: install PostgreSQL's client (cargo-make/services.sh does)")
    return max(versions, key=lambda p: int(Path(p).parts[-3]))


def psql(url: str, sql: str) -> None:
    done = subprocess.run(
        [psql_binary(), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", url, "-c", sql],
        capture_output=True, text=True, timeout=60,
    )
    if done.returncode != 0:
        pytest.fail(f"psql {sql!r} failed: {done.stderr.strip()}")


def with_database(url: str, database: str) -> str:
    """``url`` naming another database on the same server."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{database}"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Orchestrator:
    """An orchestrator process; ``log`` keeps the last lines it wrote."""

    url: str
    process: subprocess.Popen[str]
    log: deque[str]

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


@dataclass
class TaskerEnv:
    """A database and a queue prefix of their own on the local services, and the orchestrators
    started on them (any number: they share the work, as in a cluster)."""

    admin_url: str
    database: str
    prefix: str
    orchestrators: list[Orchestrator] = field(default_factory=list)

    @classmethod
    def create(cls) -> TaskerEnv:
        admin_url = os.environ.get("DATABASE_URL")
        if not admin_url:
            pytest.fail(
                "DATABASE_URL is not set: run workers/python/test.sh (it starts the services)"
            )
        short = uuid.uuid4().hex[:12]
        env = cls(admin_url, f"tasker_pytest_{short}", f"pytest_{short}")
        psql(admin_url, f"CREATE DATABASE {env.database}")
        return env

    @property
    def database_url(self) -> str:
        return with_database(self.admin_url, self.database)

    def process_env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        return {
            **os.environ,
            "DATABASE_URL": self.database_url,
            "AMQP_URL": amqp_url(),
            "TASKER_QUEUE_PREFIX": self.prefix,
            "TASKER_ORCHESTRATOR__DB_MAX_CONNECTIONS": "8",
            # Tokens are required by default; the tests of tokens turn them on again.
            "TASKER_ORCHESTRATOR__AUTH": "off",
            "RUST_LOG": "info,sqlx=warn",
            "NO_COLOR": "1",
            "RUST_BACKTRACE": "0",
            **(extra or {}),
        }

    def start_orchestrator(self, env: Mapping[str, str] | None = None) -> Orchestrator:
        """Starts an orchestrator on a free port with the Python fixture templates and the
        given ``TASKER_*`` settings; returns once it listens."""
        port = free_port()
        scheme = "https" if env and "TASKER_ORCHESTRATOR__TLS_CERT_FILE" in env else "http"
        command = [str(orchestrator_binary()), "--bind", f"127.0.0.1:{port}"]
        process = subprocess.Popen(
            [*command, "--templates", str(TEMPLATES)],
            env=self.process_env(env), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        )
        orchestrator = Orchestrator(f"{scheme}://127.0.0.1:{port}", process, deque(maxlen=200))
        self.orchestrators.append(orchestrator)
        listening: list[bool] = []
        settled = threading.Event()

        def drain() -> None:
            # Read to the end, or the orchestrator blocks once the pipe is full.
            assert process.stderr is not None
            for line in process.stderr:
                orchestrator.log.append(line.rstrip())
                if not settled.is_set() and "tasker-orchestrator listening" in line:
                    listening.append(True)
                    settled.set()
            settled.set()  # it exited

        threading.Thread(target=drain, daemon=True).start()
        settled.wait(60)
        if not listening:
            orchestrator.stop()
            pytest.fail("the orchestrator did not start:\n" + "\n".join(orchestrator.log))
        return orchestrator

    def create_token(self, name: str, scope: str) -> str:
        """An API token, made with ``tasker-orchestrator token create``."""
        done = subprocess.run(
            [str(orchestrator_binary()), "token", "create", name, "--scope", scope],
            env=self.process_env(), capture_output=True, text=True, timeout=60,
        )
        if done.returncode != 0:
            pytest.fail(f"token create failed: {done.stderr.strip()}")
        return done.stdout.strip()

    def cleanup(self) -> None:
        for orchestrator in self.orchestrators:
            orchestrator.stop()
        connection = pika.BlockingConnection(pika.URLParameters(amqp_url()))
        channel = connection.channel()
        for queue in ("results", "dead", f"steps.{NAMESPACE}"):
            channel.queue_delete(f"{self.prefix}.{queue}")
        connection.close()
        psql(self.admin_url, f"DROP DATABASE IF EXISTS {self.database} WITH (FORCE)")


@pytest.fixture(scope="session")
def tasker_env() -> Iterator[TaskerEnv]:
    env = TaskerEnv.create()
    try:
        yield env
    finally:
        env.cleanup()


@pytest.fixture(scope="session")
def orchestrator(tasker_env: TaskerEnv) -> Orchestrator:
    """The session's orchestrator (the Python fixture templates loaded with ``--templates``)."""
    return tasker_env.start_orchestrator()


@pytest.fixture
def start_orchestrator(tasker_env: TaskerEnv) -> Iterator[Callable[..., Orchestrator]]:
    """Starts more orchestrators of the session's cluster, with settings of their own
    (``TASKER_*`` variables), for one test."""
    started: list[Orchestrator] = []

    def start(env: Mapping[str, str] | None = None) -> Orchestrator:
        started.append(tasker_env.start_orchestrator(env))
        return started[-1]

    yield start
    for orchestrator in started:
        orchestrator.stop()


@pytest.fixture(scope="session")
def python_worker(
    tasker_env: TaskerEnv, orchestrator: Orchestrator, fixture_handlers: tasker.Registry
) -> Iterator[Running]:
    """The Python worker running the fixture handlers for the session's orchestrators."""
    # The native worker reads its configuration once, when it starts.
    with pytest.MonkeyPatch.context() as env:
        env.setenv("TASKER_QUEUE_PREFIX", tasker_env.prefix)
        env.setenv("TASKER_WORKER__ORCHESTRATOR_URL", orchestrator.url)
        # The orchestrators have the templates already (--templates).
        env.setenv("TASKER_WORKER__REGISTER_TEMPLATES", "false")
        running = run_worker(fixture_handlers, concurrency=16)
    yield running
    running.stop()


def registering_worker(
    tasker_env: TaskerEnv,
    orchestrator: Orchestrator,
    templates: Path,
    registry: tasker.Registry,
    namespace: str,
) -> Iterator[tasker.Worker]:
    """A native worker of ``registry`` in a thread of its own, for a module's fixture to yield
    from: it registers the templates in ``templates`` with the session's orchestrator when it
    starts, and its namespace's step queue goes when it stops."""
    # The native worker reads its configuration once, when it starts.
    with pytest.MonkeyPatch.context() as env:
        env.setenv("TASKER_QUEUE_PREFIX", tasker_env.prefix)
        env.setenv("TASKER_WORKER__ORCHESTRATOR_URL", orchestrator.url)
        env.setenv("TASKER_WORKER__REGISTER_TEMPLATES", "true")
        worker = tasker.Worker.start(templates, registry=registry, health_port=0, concurrency=4)
    thread = threading.Thread(target=worker.run, daemon=True)
    thread.start()
    yield worker
    worker.stop()
    thread.join(timeout=30)
    connection = pika.BlockingConnection(pika.URLParameters(amqp_url()))
    connection.channel().queue_delete(f"{tasker_env.prefix}.steps.{namespace}")
    connection.close()
