"""A typed client of the orchestrator's REST API, blocking (:class:`Client`) and ``async``
(:class:`AsyncClient`)::

    import tasker

    with tasker.Client() as client:               # TASKER_URL, else http://127.0.0.1:8080
        task = client.create_task("python_examples", "linear", {"value": 6})
        done = client.wait(task.id, timeout=60)
        print(done.state, done.result)            # complete {'halve': {'value': 242}}

Answers are frozen dataclasses (:class:`Task`, :class:`Step`, :class:`Transition`,
:class:`TaskPage`, :class:`StepPage`, :class:`Signal`, :class:`Schedule`, :class:`WorkerInfo`,
:class:`ConcurrencyLimit`, :class:`RateLimit`, ...) with ``datetime`` timestamps; failures are :class:`ClientError` subclasses carrying the API's
stable error code.
"""

from ._clients import AsyncClient, Client
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
)
from .values import (
    PRIORITIES,
    TASK_STATES,
    Backfill,
    ConcurrencyLimit,
    RateLimit,
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
    "TASK_STATES",
    "ApiError",
    "AsyncClient",
    "AuthError",
    "Backfill",
    "Client",
    "ClientError",
    "ConcurrencyLimit",
    "Conflict",
    "ConnectionFailed",
    "InvalidRequest",
    "NotFound",
    "RateLimit",
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
    "Transition",
    "WorkerInfo",
]
