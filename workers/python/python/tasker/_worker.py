"""``tasker.Worker``: a worker started from your own code (``tasker.worker`` is the command
line around it)."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterable
from typing import Any

from ._native import NativeWorker, WorkerError
from .registry import Registry, default_registry
from .runner import Runner


class Worker:
    """A worker: the native core consumes the templates' namespaces and publishes results;
    handler threads (and one asyncio loop for ``async`` handlers) run the steps. The same three
    calls in every language::

        worker = tasker.Worker.start(templates="templates/")
        worker.run()  # blocks until worker.stop(), from a signal handler or another thread
    """

    def __init__(self, native: NativeWorker, registry: Registry) -> None:
        self._native = native
        self._runner = Runner(native, registry)
        self._lock = threading.Lock()
        # started -> running -> stopped, or started -> stopped_before_run (stop() came first,
        # e.g. a signal between start() and run(): run() then has nothing to do).
        self._state = "started"

    @classmethod
    def start(
        cls,
        templates: str | os.PathLike[str],
        *,
        registry: Registry | None = None,
        concurrency: int | None = None,
        health_port: int | None = None,
        config: str | os.PathLike[str] | None = None,
        orchestrator_url: str | None = None,
        shutdown_timeout: float | None = None,
        amqp_url: str | None = None,
        queue_prefix: str | None = None,
        register_templates: bool | None = None,
    ) -> Worker:
        """Starts the core: loads configuration (``config``, ``DATABASE_URL``/``AMQP_URL``/
        ``TASKER_*``, these arguments) and the templates, registers them, binds ``/health``
        (``health_port`` 0 picks a free port) and starts consuming. ``registry`` defaults to
        the one ``@tasker.handler`` fills; ``shutdown_timeout`` is how many seconds running
        handlers may take to finish once stopping; ``amqp_url`` and ``queue_prefix`` name
        another broker and prefix than the configured ones (a test environment's), and
        ``register_templates`` overrides ``worker.register_templates``. Raises
        :class:`tasker.WorkerError` when the core cannot start, ``ValueError`` for a bad
        argument.

        The core is told the names of the registry's handlers: it consumes only the namespaces
        of the template steps whose handler is one of them (a step's own ``namespace:``, else
        its template's), so a worker takes no step it cannot run."""
        registry = registry if registry is not None else default_registry
        native = NativeWorker.start(
            start_options(
                templates,
                concurrency=concurrency,
                health_port=health_port,
                config=config,
                orchestrator_url=orchestrator_url,
                shutdown_timeout=shutdown_timeout,
                handlers=registry.names(),
                amqp_url=amqp_url,
                queue_prefix=queue_prefix,
                register_templates=register_templates,
            )
        )
        return cls(native, registry)

    @property
    def health_addr(self) -> str:
        """``ip:port`` of the ``/health`` endpoint."""
        return self._native.health_addr

    @property
    def namespaces(self) -> list[str]:
        """The namespaces consumed, sorted."""
        return self._native.namespaces

    @property
    def concurrency(self) -> int:
        """Steps run at once."""
        return self._runner.concurrency

    def run(self) -> bool:
        """Runs handlers until :meth:`stop`, then lets the running ones finish (within the
        shutdown timeout), reports their outcomes, which the core publishes, and stops the
        core; steps not reported by then go back to their queues. Returns False if a sync
        handler was still running (its thread keeps the interpreter from exiting). A worker
        stopped before it ran returns True at once."""
        with self._lock:
            if self._state == "stopped_before_run":
                return True
            if self._state != "started":
                raise WorkerError(f"the worker is {self._state}: run() is called once")
            self._state = "running"
        try:
            return self._runner.run(grace_s=self._native.shutdown_timeout)
        finally:
            self._native.stop()
            with self._lock:
                self._state = "stopped"

    def stop(self) -> None:
        """Stops taking steps; returns at once (safe from a signal handler). A running
        :meth:`run` then drains and returns; a worker that was never run stops here.
        Idempotent."""
        # The core takes no more steps from now and its shutdown timeout starts.
        self._native.shutdown()
        self._runner.stop()
        with self._lock:
            never_ran = self._state == "started"
            if never_ran:
                self._state = "stopped_before_run"
        if never_ran:
            self._native.stop()


def start_options(
    templates: str | os.PathLike[str],
    *,
    concurrency: int | None = None,
    health_port: int | None = None,
    config: str | os.PathLike[str] | None = None,
    orchestrator_url: str | None = None,
    shutdown_timeout: float | None = None,
    handlers: Iterable[str] | None = None,
    amqp_url: str | None = None,
    queue_prefix: str | None = None,
    register_templates: bool | None = None,
) -> str:
    """The worker protocol's ``start_options`` as JSON text; None values are left out (the
    configured value holds). ``handlers``: the names of the handlers registered (the core then
    consumes only the namespaces of the steps they run; all its templates' when left out)."""
    options: dict[str, Any] = {
        "templates": os.fspath(templates),
        "config": None if config is None else os.fspath(config),
        "health_port": health_port,
        "concurrency": concurrency,
        "orchestrator_url": orchestrator_url,
        "shutdown_timeout": shutdown_timeout,
        "handlers": None if handlers is None else list(handlers),
        "amqp_url": amqp_url,
        "queue_prefix": queue_prefix,
        "register_templates": register_templates,
    }
    return json.dumps({k: v for k, v in options.items() if v is not None})
