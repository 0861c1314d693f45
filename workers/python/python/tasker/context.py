"""What a handler receives."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterator
from typing import Any, Mapping, Optional, Tuple

from .errors import StreamError

#: Reads one page of a step's parent results: given the cursor of the page (None for the
#: first), returns the page as JSON object text and the cursor of the next one (None after the
#: last). The native core's ``NativeWorker.parent_results_page`` bound to one step.
PageReader = Callable[[Optional[str]], Tuple[str, Optional[str]]]

#: Asks the core whether the step is still this worker's to finish: the native core's
#: ``NativeWorker.heartbeat`` bound to one job.
Heartbeat = Callable[[], bool]

#: Hands a chunk of the step's stream to the core: ``(topic, payload, is_text)`` to ``None``,
#: or the refusal's ``(kind, message)``. The native core's ``NativeWorker.emit`` bound to one job.
Emit = Callable[[str, str, bool], Optional[Tuple[str, str]]]


class StepContext:
    """One attempt of one step, as handed to its handler.

    ``context`` is the task's input; ``attempt`` counts from 1; ``timeout`` is the step's
    timeout in seconds. ``parent_results`` maps each completed parent step's name to its result;
    ``each_parent_result()`` yields the same ``(name, result)`` pairs one at a time.
    ``heartbeat()`` says whether the step is still the worker's to finish: a long handler checks
    it between units of work and stops once it is False (its outcome would be ignored).
    ``emit(topic, data)`` and ``emit_text(topic, text)`` stream to the task's readers while the
    handler runs (docs/streams.md); in a context built by hand they are kept in ``emitted``.

    A step message carries its parent results when they fit on one page. Beyond that (the
    convergence step of a large fan-out) they are read from the orchestrator when asked for:
    ``parent_results`` reads them all once and keeps them, ``each_parent_result()`` reads a page
    at a time and keeps none, so a handler that folds 100,000 results holds one page of them.
    Reading blocks the calling thread (in an ``async`` handler, its event loop) while the
    orchestrator answers; if it cannot be reached the handler raises
    ``tasker.ReferenceUnavailable`` and the step is retried.
    """

    __slots__ = (
        "task_id",
        "step_id",
        "namespace",
        "task_name",
        "step_name",
        "handler",
        "attempt",
        "max_attempts",
        "context",
        "timeout",
        "input",
        "_carried",
        "_pages",
        "_all",
        "_heartbeat",
        "_emit",
        "emitted",
    )

    def __init__(
        self,
        task_id: str,
        step_id: str,
        namespace: str,
        task_name: str,
        step_name: str,
        handler: str,
        attempt: int,
        max_attempts: int,
        context: Any,
        parent_results: Mapping[str, Any],
        timeout: float,
        input: Any = None,
        *,
        parent_pages: PageReader | None = None,
        heartbeat: Heartbeat | None = None,
        emit: Emit | None = None,
    ) -> None:
        self.task_id = task_id
        self.step_id = step_id
        self.namespace = namespace
        self.task_name = task_name
        self.step_name = step_name
        self.handler = handler
        self.attempt = attempt
        self.max_attempts = max_attempts
        self.context = context
        self.timeout = timeout
        #: A batch worker's batch (what its batchable parent returned for it); None otherwise.
        self.input = input
        self._carried = parent_results
        self._pages = parent_pages
        self._all: Mapping[str, Any] | None = None if parent_pages else parent_results
        self._heartbeat = heartbeat
        self._emit = emit
        #: What ``emit`` and ``emit_text`` sent, as ``(topic, data or text)``, in a context
        #: built by hand (no worker to stream to); empty under a worker.
        self.emitted: list[tuple[str, Any]] = []

    @property
    def timeout_ms(self) -> int:
        """The step's timeout in milliseconds (deprecated: ``timeout`` is in seconds)."""
        return round(self.timeout * 1000)

    def heartbeat(self) -> bool:
        """True while the step is still this worker's to finish: handed out, within its
        timeout, the worker not stopped. It does not extend the timeout. Outside a worker (a
        context built in a test) always True."""
        return self._heartbeat() if self._heartbeat is not None else True

    def emit(self, topic: str, data: Any) -> None:
        """Sends ``data`` (anything ``json.dumps`` takes) on ``topic`` of the step's stream,
        without waiting: readers of the task's stream get it within milliseconds, and it is kept
        for the task's retention. Raises ``tasker.StreamError`` if it is not taken."""
        try:
            payload = json.dumps(data, allow_nan=False)
        except (TypeError, ValueError) as e:
            raise StreamError(f"invalid stream chunk: its data is not JSON: {e}",
                              kind="invalid_stream_chunk") from None
        self._send(topic, payload, False, data)

    def emit_text(self, topic: str, text: str) -> None:
        """Sends ``text`` on ``topic`` of the step's stream: one chunk per call (a token of a
        model's answer, a line). As ``emit`` otherwise."""
        if not isinstance(text, str):
            raise StreamError("invalid stream chunk: emit_text takes a str",
                              kind="invalid_stream_chunk")
        self._send(topic, text, True, text)

    def _send(self, topic: str, payload: str, text: bool, value: Any) -> None:
        if self._emit is None:
            self.emitted.append((topic, value))
            return
        refused = self._emit(topic, payload, text)
        if refused is not None:
            kind, message = refused
            raise StreamError(message, kind=kind)

    @property
    def parent_results(self) -> Mapping[str, Any]:
        """Every completed parent's result, by step name (read once if not carried)."""
        if self._all is None:
            self._all = dict(self.each_parent_result())
        return self._all

    def each_parent_result(self) -> Iterator[tuple[str, Any]]:
        """``(name, result)`` of each completed parent, reading a page at a time (pages follow
        the parents' ids) when they are not carried by the step message."""
        if self._pages is None:
            yield from self._carried.items()
            return
        after: str | None = None
        while True:
            text, after = self._pages(after)
            yield from json.loads(text).items()
            if after is None:
                return

    def __repr__(self) -> str:
        return (
            f"StepContext(task_id={self.task_id!r}, step_id={self.step_id!r}, "
            f"step_name={self.step_name!r}, handler={self.handler!r}, attempt={self.attempt})"
        )

    @classmethod
    def from_job(cls, job: Mapping[str, Any], native: Any = None) -> StepContext:
        """Builds the context from a job as the core hands it out (the worker protocol's
        ``job``). ``native`` is the ``NativeWorker`` that handed it out: it reads parent
        results carried by reference and answers ``heartbeat()``."""
        reader: PageReader | None = None
        if job.get("parent_results_by_reference"):
            if native is None:
                raise ValueError("the job's parent results are by reference and nothing reads them")
            reader = functools.partial(native.parent_results_page, job["task_id"], job["step_id"])
        heartbeat = None if native is None else functools.partial(native.heartbeat, job["id"])
        emit = None if getattr(native, "emit", None) is None else functools.partial(native.emit, job["id"])
        return cls(
            task_id=job["task_id"],
            step_id=job["step_id"],
            namespace=job["namespace"],
            task_name=job["task_name"],
            step_name=job["step_name"],
            handler=job["handler"],
            attempt=job["attempt"],
            max_attempts=job["max_attempts"],
            context=job["context"],
            parent_results=job["parent_results"],
            timeout=job["timeout_ms"] / 1000,
            input=job.get("input"),
            parent_pages=reader,
            heartbeat=heartbeat,
            emit=emit,
        )
