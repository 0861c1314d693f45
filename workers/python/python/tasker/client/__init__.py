"""A typed client of the orchestrator's REST API, blocking (:class:`Client`) and ``async``
(:class:`AsyncClient`)::

    import tasker

    with tasker.Client() as client:               # TASKER_URL, else http://127.0.0.1:8080
        task = client.create_task("python_examples", "linear", {"value": 6})
        done = client.wait(task.id, timeout=60)
        print(done.state, done.result)            # complete {'halve': {'value': 242}}

Answers are frozen dataclasses (:class:`Task`, :class:`Step`, :class:`Transition`,
:class:`TaskPage`, :class:`StepPage`, :class:`Signal`, :class:`Schedule`, :class:`WorkerInfo`,
:class:`ConcurrencyLimit`, :class:`RateLimit`, :class:`BatchCreated`, :class:`PurgeResult`,
:class:`RetentionPolicy`, :class:`AuditPage`, ...) with ``datetime`` timestamps; failures are
:class:`ClientError` subclasses carrying the API's stable error code.
"""

from ._clients import AsyncClient, Client
from ._transport import DEFAULT_URL
from .audit import AuditEntry, AuditPage
from .errors import (
    ApiError,
    AuthError,
    ClientError,
    Conflict,
    ConnectionFailed,
    InvalidRequest,
    NotFound,
    ServerError,
    TaskPurged,
)
from .values import (
    PRIORITIES,
    PURGE_STATES,
    TASK_STATES,
    Backfill,
    BatchCreated,
    BatchItemError,
    BatchItemResult,
    ConcurrencyLimit,
    PurgeResult,
    RateLimit,
    RetentionPolicy,
    Schedule,
    Signal,
    Step,
    StepChild,
    StepConcurrencyLimit,
    StepLimits,
    StepPage,
    StepRateLimit,
    StepThrottle,
    StepWait,
    Task,
    TaskChild,
    TaskPage,
    Transition,
    WorkerInfo,
)

__all__ = [
    "DEFAULT_URL",
    "PRIORITIES",
    "PURGE_STATES",
    "TASK_STATES",
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
    "InvalidRequest",
    "NotFound",
    "PurgeResult",
    "RateLimit",
    "RetentionPolicy",
    "Schedule",
    "ServerError",
    "Signal",
    "Step",
    "StepChild",
    "StepConcurrencyLimit",
    "StepLimits",
    "StepPage",
    "StepRateLimit",
    "StepThrottle",
    "StepWait",
    "Task",
    "TaskChild",
    "TaskPage",
    "TaskPurged",
    "Transition",
    "WorkerInfo",
]
