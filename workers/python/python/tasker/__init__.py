"""Tasker step handlers in Python.

    import tasker

    @tasker.handler("double")
    def double(ctx: tasker.StepContext):
        return {"value": ctx.context["value"] * 2}

Start a worker with ``python -m tasker.worker --templates DIR --handlers handlers.py``, or from
your own code::

    worker = tasker.Worker.start(templates="templates/")
    worker.run()  # until worker.stop()

Submit tasks and wait for them with :class:`tasker.Client` (or :class:`tasker.AsyncClient`).
"""

from ._native import ReferenceUnavailable, WorkerError
from .client import (
    Alert,
    AlertCondition,
    ApiError,
    AsyncClient,
    AuditEntry,
    AuditPage,
    AuthError,
    Backfill,
    BatchCreated,
    BatchItemError,
    BatchItemResult,
    Client,
    ClientError,
    ConcurrencyLimit,
    Conflict,
    ConnectionFailed,
    Event,
    EventItem,
    EventPage,
    EventStart,
    EventsSent,
    InvalidRequest,
    NotFound,
    Operation,
    OperationCount,
    OperationList,
    PurgeResult,
    RateLimit,
    RetentionPolicy,
    Schedule,
    ServerError,
    Signal,
    Step,
    StepChild,
    StepConcurrencyLimit,
    StepLimits,
    StepPage,
    StepRateLimit,
    StepThrottle,
    StepWait,
    StreamChunk,
    StreamPage,
    Task,
    TaskChild,
    TaskCounts,
    TaskPage,
    TaskPurged,
    Transition,
    Webhook,
    WorkerInfo,
    is_terminal,
)
from .context import StepContext
from .errors import PermanentError, RetryableError, StreamError
from .registry import Handler, Registry, default_registry, handler, register
from .runner import Runner
from ._worker import Worker

__all__ = [
    "Alert",
    "AlertCondition",
    "ApiError",
    "AsyncClient",
    "AuditEntry",
    "AuditPage",
    "AuthError",
    "Backfill",
    "BatchCreated",
    "BatchItemError",
    "BatchItemResult",
    "Client",
    "ClientError",
    "ConcurrencyLimit",
    "Conflict",
    "ConnectionFailed",
    "Event",
    "EventItem",
    "EventPage",
    "EventStart",
    "EventsSent",
    "Handler",
    "InvalidRequest",
    "NotFound",
    "Operation",
    "OperationCount",
    "OperationList",
    "PermanentError",
    "PurgeResult",
    "RateLimit",
    "RetentionPolicy",
    "RetryableError",
    "StreamError",
    "ReferenceUnavailable",
    "Registry",
    "Runner",
    "Schedule",
    "ServerError",
    "Signal",
    "Step",
    "StepChild",
    "StepConcurrencyLimit",
    "StepContext",
    "StepLimits",
    "StepPage",
    "StepRateLimit",
    "StepThrottle",
    "StepWait",
    "StreamChunk",
    "StreamPage",
    "Task",
    "TaskChild",
    "TaskCounts",
    "TaskPage",
    "TaskPurged",
    "Transition",
    "Webhook",
    "Worker",
    "WorkerInfo",
    "is_terminal",
    "WorkerError",
    "default_registry",
    "handler",
    "register",
]
