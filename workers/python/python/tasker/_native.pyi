"""Types of ``tasker._native``, the Rust extension (``workers/python/src/lib.rs``), for mypy and
pyright. Written by hand and kept in step with lib.rs: ``tests/packages.rs`` runs mypy's
``stubtest`` on the module installed from the wheel, which fails on any name, parameter or
default that differs. The vocabulary is the one every binding shares (``tasker_worker::embedded``);
jobs, outcomes and start options are JSON text (``tasker-worker/protocol.schema.json``)."""

from typing import final

__all__ = [
    "NativeWorker",
    "WorkerError",
    "ReferenceUnavailable",
    "next_log_records",
    "test_job",
    "test_judge",
]

class WorkerError(Exception):
    """The worker core could not start, or was used after it stopped."""

class ReferenceUnavailable(Exception):
    """A step's parent results could not be read from the orchestrator (retried like any error)."""

@final
class NativeWorker:
    """A running worker core. ``take_steps`` hands out jobs; ``complete`` takes their outcomes."""

    @staticmethod
    def start(options: str) -> NativeWorker:
        """Starts the core from the protocol's ``start_options`` as JSON text: loads
        configuration and the templates, binds ``/health`` and starts consuming the templates'
        namespaces. Raises :class:`WorkerError` when it cannot, ``ValueError`` for bad options."""

    def take_steps(self, max: int, wait: float) -> str:
        """At most ``max`` jobs as a JSON array, ``"[]"`` when ``wait`` seconds ran out or the
        worker is stopping. The GIL is released meanwhile."""

    def take_ready_steps(self, max: int) -> str:
        """At most ``max`` queued jobs as a JSON array, without waiting."""

    def complete(self, outcomes: str) -> None:
        """Reports outcomes, a JSON array; ``ValueError`` if one is malformed."""

    def heartbeat(self, job: int) -> bool:
        """Whether the job is still this worker's to finish."""

    def emit(self, job: int, topic: str, payload: str, text: bool) -> tuple[str, str] | None:
        """A chunk of the job's stream (JSON text, or the text itself when ``text``): None when
        taken, else the refusal's ``(kind, message)``."""

    def parent_results_page(
        self, task_id: str, step_id: str, after: str | None = None
    ) -> tuple[str, str | None]:
        """One page of a step's parent results: (JSON object text, cursor of the next page or
        None). Raises :class:`ReferenceUnavailable` when the orchestrator cannot answer."""

    @property
    def health_addr(self) -> str:
        """``ip:port`` of the ``/health`` endpoint."""

    @property
    def namespaces(self) -> list[str]:
        """The namespaces consumed, sorted."""

    @property
    def concurrency(self) -> int:
        """Steps to run at once."""

    @property
    def shutdown_timeout(self) -> float:
        """Seconds running handlers may take to finish once stopping."""

    @property
    def stopped(self) -> bool:
        """True once ``shutdown`` or ``stop`` ran."""

    def shutdown(self) -> None:
        """Begins stopping without blocking. Idempotent."""

    def stop(self) -> None:
        """Stops, publishing the outcomes reported; blocks with the GIL released. Idempotent."""

def next_log_records(max: int, wait: float) -> str:
    """At most ``max`` of the worker core's log records as a JSON array of ``{"level", "target",
    "message"}``, ``"[]"`` when ``wait`` seconds ran out. The GIL is released meanwhile."""

def test_job(spec: str) -> str:
    """A handler test's job (``tasker.testing``): the test step as JSON to the job a worker
    would hand out, as JSON. Raises ``ValueError`` naming what is wrong with the step."""

def test_judge(spec: str, outcome: str) -> str:
    """A handler's encoded outcome for a test step, as the engine reads it, as JSON."""
