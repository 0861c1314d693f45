"""A typed client of the orchestrator's REST API, blocking (:class:`Client`) and ``async``
(:class:`AsyncClient`)::

    import tasker

    with tasker.Client() as client:               # TASKER_URL, else http://127.0.0.1:8080
        task = client.create_task("python_examples", "linear", {"value": 6})
        done = client.wait(task.id, timeout=60)
        print(done.state, done.result)            # complete {'halve': {'value': 242}}

Answers (:class:`Task`, :class:`Step`, :class:`Transition`, :class:`TaskPage`,
:class:`StepPage`, :class:`Signal`, :class:`Schedule`, :class:`WorkerInfo`,
:class:`ConcurrencyLimit`, :class:`RateLimit`, :class:`BatchCreated`, :class:`PurgeResult`,
:class:`RetentionPolicy`, :class:`AuditPage`, ...) are the classes generated from the API's OpenAPI document (the
repository's openapi.json), with ``datetime`` timestamps, ``UUID`` ids and ``Literal`` states;
failures are :class:`ClientError` subclasses carrying the API's stable error code.
"""

from ._async import AsyncClient
from ._clients import Client
from ._transport import DEFAULT_URL
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
    UNSET,
    AuditEntry,
    AuditPage,
    Backfill,
    BatchCreated,
    BatchItemError,
    BatchItemResult,
    ChildLink,
    ConcurrencyLimit,
    ErrorCode,
    Priority,
    PurgeState,
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
    TaskStateName,
    Transition,
    Unset,
    WorkerInfo,
    is_terminal,
)

__all__ = [
    "DEFAULT_URL",
    "PRIORITIES",
    "PURGE_STATES",
    "TASK_STATES",
    "UNSET",
    "ApiError",
    "AsyncClient",
    "AuditEntry",
    "AuditPage",
    "AuthError",
    "Backfill",
    "BatchCreated",
    "BatchItemError",
    "BatchItemResult",
    "ChildLink",
    "Client",
    "ClientError",
    "ConcurrencyLimit",
    "Conflict",
    "ConnectionFailed",
    "ErrorCode",
    "InvalidRequest",
    "NotFound",
    "Priority",
    "PurgeState",
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
    "TaskStateName",
    "Transition",
    "Unset",
    "WorkerInfo",
    "is_terminal",
]
