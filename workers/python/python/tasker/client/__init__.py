"""A typed client of the orchestrator's REST API, blocking (:class:`Client`) and ``async``
(:class:`AsyncClient`)::

    import tasker

    with tasker.Client() as client:               # TASKER_URL, else http://127.0.0.1:8080
        task = client.create_task("python_examples", "linear", {"value": 6})
        done = client.wait(task.id, timeout=60)
        print(done.state, done.result)            # complete {'halve': {'value': 242}}

Answers are frozen dataclasses (:class:`Task`, :class:`Step`, :class:`Transition`,
:class:`TaskPage`, :class:`StepPage`, :class:`Signal`, :class:`Schedule`, :class:`WorkerInfo`,
...) with ``datetime`` timestamps; failures are :class:`ClientError` subclasses carrying the API's
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
    TASK_STATES,
    Backfill,
    Schedule,
    Signal,
    Step,
    StepChild,
    StepPage,
    StepWait,
    Task,
    TaskChild,
    TaskPage,
    Transition,
    WorkerInfo,
)

__all__ = [
    "DEFAULT_URL",
    "TASK_STATES",
    "ApiError",
    "AsyncClient",
    "AuthError",
    "Backfill",
    "Client",
    "ClientError",
    "Conflict",
    "ConnectionFailed",
    "InvalidRequest",
    "NotFound",
    "Schedule",
    "ServerError",
    "Signal",
    "Step",
    "StepChild",
    "StepPage",
    "StepWait",
    "Task",
    "TaskChild",
    "TaskPage",
    "Transition",
    "WorkerInfo",
]
