"""The worker entry point: ``python -m tasker.worker`` (or ``tasker-worker-python``), a
:class:`tasker.Worker` with the handlers it is told to import::

    tasker-worker-python --templates DIR --handlers my_handlers.py [--handlers pkg.module]
                         [--concurrency N] [--health-port N] [--config FILE]
                         [--orchestrator-url URL] [--shutdown-timeout SECONDS]

Connections come from ``DATABASE_URL``/``AMQP_URL``/``TASKER_*`` (or ``--config``), as for
every language's worker. SIGTERM and SIGINT stop it: no new steps; running ones finish and
their results are published within ``--shutdown-timeout`` (30 s by default); the rest go back
to their queues.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import logging
import os
import signal
import sys
from pathlib import Path
from types import ModuleType

from . import logs
from ._native import WorkerError
from ._worker import Worker
from .registry import default_registry

log = logging.getLogger("tasker")


def load_handlers(spec: str) -> ModuleType:
    """Imports a handler file (``path/to/handlers.py``) or module (``pkg.handlers``); importing
    it registers its handlers. A file's folder goes on ``sys.path`` so it can import its
    neighbours, as ``python path/to/handlers.py`` would allow."""
    path = Path(spec)
    if spec.endswith(".py") or os.sep in spec:
        if not path.is_file():
            raise FileNotFoundError(f"--handlers {spec}: no such file")
        path = path.resolve()
        folder = str(path.parent)
        if folder not in sys.path:
            sys.path.insert(0, folder)
        name = f"tasker_handlers_{path.stem}"
        module_spec = importlib.util.spec_from_file_location(name, path)
        assert module_spec is not None and module_spec.loader is not None
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[name] = module
        module_spec.loader.exec_module(module)
        return module
    return importlib.import_module(spec)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="tasker-worker-python", description="Tasker worker running Python step handlers."
    )
    p.add_argument("--templates", required=True, type=Path,
                   help="folder of task templates; the worker consumes their namespaces")
    p.add_argument("--handlers", action="append", default=[], metavar="FILE_OR_MODULE",
                   help="handler file or module to import (repeatable)")
    p.add_argument("--concurrency", type=int, help="steps run at the same time")
    p.add_argument("--health-port", type=int,
                   help="port of /health (0 picks a free port); its address is worker.health_bind, "
                        "127.0.0.1 by default")
    p.add_argument("--config", type=Path, default=os.environ.get("TASKER_CONFIG"),
                   help="TOML configuration file (see config/tasker.reference.toml)")
    p.add_argument("--orchestrator-url", metavar="URL",
                   help="orchestrator API the templates are registered with (default "
                        "http://127.0.0.1:8080, or TASKER_WORKER__ORCHESTRATOR_URL)")
    p.add_argument("--shutdown-timeout", type=float, metavar="SECONDS",
                   help="how long handlers running at SIGTERM may take to finish and report "
                        "(worker.shutdown_timeout_ms; 30 by default)")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    # Text, or one JSON object a line with TASKER_LOG_FORMAT=json (unless already configured).
    logs.configure(logging.INFO)
    if args.concurrency is not None and args.concurrency < 1:
        print("tasker-worker-python: --concurrency must be at least 1", file=sys.stderr)
        return 2
    if args.shutdown_timeout is not None and not 0 <= args.shutdown_timeout <= 86_400:
        print("tasker-worker-python: --shutdown-timeout must be 0 to 86400 seconds", file=sys.stderr)
        return 2
    for spec in args.handlers:
        load_handlers(spec)
    if not len(default_registry):
        log.warning(
            "no handlers registered (pass --handlers FILE_OR_MODULE): the worker consumes no "
            "namespace"
        )
    try:
        worker = Worker.start(
            args.templates,
            config=args.config,
            health_port=args.health_port,
            concurrency=args.concurrency,
            orchestrator_url=args.orchestrator_url,
            shutdown_timeout=args.shutdown_timeout,
        )
    except WorkerError as e:
        print(f"tasker-worker-python: {e}", file=sys.stderr)
        return 1

    def stopping(*_: object) -> None:
        # No more steps; the running handlers finish and are reported, then run() returns.
        worker.stop()

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, stopping)
    log.info("handlers: %s", ", ".join(default_registry.names()))
    # The one line scripts and the conformance suite wait for.
    print(
        f"tasker worker ready: language=python health={worker.health_addr} "
        f"namespaces={','.join(worker.namespaces)}",
        flush=True,
    )
    drained = worker.run()
    if not drained:
        # A sync handler thread cannot be interrupted, and would keep the process alive.
        log.warning("exiting with handlers still running; their steps will be redelivered")
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(1)
    log.info("stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
