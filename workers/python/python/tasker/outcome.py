"""Outcomes in the core's wire format (the worker protocol's ``outcome``,
tasker-worker/protocol.schema.json), one JSON object per job:
``{"id", "status": "success", "result"}`` or
``{"id", "status": "failure", "retryable", "error": {"kind", "message", "backtrace"},
"retry_after_ms"?}``."""

from __future__ import annotations

import json
import time
import traceback
from typing import Any

from ._native import ReferenceUnavailable
from .errors import PermanentError, RetryableError


def now() -> float:
    """Seconds since the epoch (the core records it as the attempt's start or finish). A number,
    not formatted text: formatting a date costs a handler thread more than the rest of its
    report."""
    return time.time()


def success(job_id: int, result: Any, started_at: float) -> str:
    """Encoded here, on the handler's thread, so a result that is not JSON fails its own step
    (permanently: running it again gives the same value) instead of the whole batch."""
    try:
        return json.dumps(
            {
                "id": job_id,
                "status": "success",
                "result": result,
                "started_at": started_at,
                "finished_at": now(),
            },
            allow_nan=False,  # NaN/Infinity are not JSON: the core would reject the batch
        )
    except (TypeError, ValueError) as e:
        return failure_of(
            job_id,
            "invalid_result",
            f"the handler's result is not JSON: {e}",
            retryable=False,
            started_at=started_at,
        )


def of_call(job_id: int, fn: Any, ctx: Any) -> str:
    """Runs a sync handler on ``ctx`` and encodes what it returned or raised: the outcome of
    the job."""
    started = now()
    try:
        return success(job_id, fn(ctx), started)
    except BaseException as e:  # even SystemExit must fail its step, not end the thread
        return failure(job_id, e, started)


def failure(job_id: int, error: BaseException, started_at: float) -> str:
    """A raised exception: permanent if it is a ``PermanentError``, retryable otherwise; its
    kind is the error's ``kind`` (``PermanentError``, ``RetryableError``; ``reference_unavailable``
    for a parent result that could not be read) or its class name, with its message, formatted
    traceback and, for a ``RetryableError``, its ``retry_after``."""
    if isinstance(error, ReferenceUnavailable):
        kind = "reference_unavailable"
    else:
        kind = getattr(error, "kind", None)
        if not isinstance(kind, str) or not kind:
            kind = type(error).__name__
    retry_after = error.retry_after if isinstance(error, RetryableError) else None
    return failure_of(
        job_id,
        kind,
        str(error),
        retryable=not isinstance(error, PermanentError),
        backtrace="".join(traceback.format_exception(error)),
        started_at=started_at,
        retry_after_ms=None if retry_after is None else round(retry_after * 1000),
    )


def failure_of(
    job_id: int,
    kind: str,
    message: str,
    *,
    retryable: bool,
    backtrace: str | None = None,
    started_at: float | None = None,
    retry_after_ms: int | None = None,
) -> str:
    error: dict[str, Any] = {"kind": kind, "message": message}
    if backtrace is not None:
        error["backtrace"] = backtrace
    outcome: dict[str, Any] = {
        "id": job_id,
        "status": "failure",
        "retryable": retryable,
        "error": error,
        "finished_at": now(),
    }
    if started_at is not None:
        outcome["started_at"] = started_at
    if retry_after_ms is not None:
        outcome["retry_after_ms"] = retry_after_ms
    return json.dumps(outcome)


def unknown_handler(job_id: int, name: str) -> str:
    """Same outcome as the Rust worker's: permanent, since no retry can find the handler."""
    return failure_of(
        job_id,
        "unknown_handler",
        f"no handler named {json.dumps(name)} is registered in this worker",
        retryable=False,
    )


def timed_out(job_id: int, timeout: float, started_at: float) -> str:
    """Same outcome as the core's timeout (retryable), reported as soon as it is known."""
    return failure_of(
        job_id,
        "timeout",
        f"handler did not finish within {round(timeout * 1000)} ms",
        retryable=True,
        started_at=started_at,
    )
