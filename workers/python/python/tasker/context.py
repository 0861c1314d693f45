"""What a handler receives."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping


@dataclass(frozen=True, slots=True)
class StepContext:
    """One attempt of one step, as handed to its handler.

    ``context`` is the task's input; ``parent_results`` maps each completed parent step's
    name to its result; ``attempt`` counts from 1.
    """

    task_id: str
    step_id: str
    namespace: str
    task_name: str
    step_name: str
    handler: str
    attempt: int
    max_attempts: int
    context: Any
    parent_results: Mapping[str, Any]
    timeout_ms: int
    #: A batch worker's batch (what its batchable parent returned for it); None otherwise.
    input: Any = None

    @classmethod
    def from_job(cls, job: Mapping[str, Any]) -> StepContext:
        """Builds the context from a job as the core serializes it."""
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
            timeout_ms=job["timeout_ms"],
            input=job.get("input"),
        )
