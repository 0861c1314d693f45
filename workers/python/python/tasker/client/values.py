"""What the API answers with: the classes openapi-python-client generated from the API's OpenAPI
document (``tasker.client._api.models``, one per schema), under the names the client has always
given them, and the enums of the document as ``Literal`` types.

Field names are the JSON's, but for those that are Python keywords or builtins, which get a
trailing ``_`` (``Transition.from_``, ``StepPage.next_``, ``Purged.bytes_``). Ids are ``UUID``
values, timestamps timezone-aware ``datetime`` values, and results, errors and contexts the
decoded JSON (``dict``, ``list``, ``str``, ``int``, ``float``, ``bool`` or ``None``). A field the
document gives as optional and the server left out is ``UNSET`` (falsy). Fields of a newer server
that the document does not name yet are in each value's ``additional_properties``.
"""

from __future__ import annotations

from typing import Any, Literal, TypeAlias, get_args

from ._api.models import (
    Alert,
    AlertCondition,
    AlertKind,
    AlertList,
    AlertSinkType0,
    AlertSinkType1,
    AlertSinkType2,
    AuditEntry,
    AuditPage,
    Backfilled,
    Clock,
    BatchCreated,
    BatchItem,
    BatchStatus,
    ChildLink,
    ConcurrencyLimit,
    ConcurrencyLimitList,
    ErrorCode,
    ErrorDetail,
    Event,
    EventItem,
    EventPage,
    EventStart,
    EventsSent,
    History,
    OnTimeout,
    Operation,
    OperationAction,
    OperationCount,
    OperationFilter,
    OperationList,
    OperationState,
    Overlap,
    ParentCancel,
    Priority,
    PurgeState,
    Purged,
    RateLimit,
    RateLimitList,
    RetentionPolicy,
    Schedule,
    ScheduleList,
    Signal,
    SignalList,
    Skipped,
    Step,
    StepChild,
    StepConcurrencyLimit,
    StepLimits,
    StepPage,
    StepRateLimit,
    StepStateName,
    StepThrottle,
    StepWait,
    Task,
    TaskCounts,
    TaskPage,
    TaskStateName,
    ThrottleKind,
    Transition,
    WaitKind,
    Webhook,
    WebhookFormat,
    WebhookList,
    WorkerInfo,
    WorkerList,
)
from ._api.types import UNSET, Unset

#: A decoded JSON value.
JSON = Any

# The client's names for the schemas the document names otherwise.
#: A child task of a task (``Task.children``).
TaskChild = ChildLink
#: What a bulk create did with one item.
BatchItemResult = BatchItem
#: Why a bulk create refused one item: the API's usual error.
BatchItemError = ErrorDetail
#: What a purge did.
PurgeResult = Purged
#: What a backfill did.
Backfill = Backfilled
#: An alert rule's sink that is a URL its notices are posted to as JSON, signed as Tasker's
#: generic webhooks are (``{"kind": "webhook", "url": ...}``).
AlertWebhookSink = AlertSinkType0
#: An alert rule's sink that is a Slack-compatible incoming webhook
#: (``{"kind": "slack", "url": ...}``).
AlertSlackSink = AlertSinkType1
#: An alert rule's sink that is an email to each of ``to`` (``{"kind": "email", "to": [...]}``).
AlertEmailSink = AlertSinkType2
#: Where an alert rule's notices go (``Alert.sink``): one of the three, told apart by ``kind``.
AlertSink: TypeAlias = AlertWebhookSink | AlertSlackSink | AlertEmailSink

#: The states a task is in: ``scheduled`` until its delayed start (``run_at``), ``running``
#: until it is terminal, then one of the others.
TASK_STATES: tuple[TaskStateName, ...] = get_args(TaskStateName)
#: A task's priorities (``Task.priority``, ``create_task(priority=...)``).
PRIORITIES: tuple[Priority, ...] = get_args(Priority)
#: The finished states a purge removes tasks of (``purge(states=...)``; all three by default).
PURGE_STATES: tuple[PurgeState, ...] = get_args(PurgeState)
#: What an operation by filter does to each task (``retry``, ``resolve``, ``cancel``) or dead
#: letter (``replay``, ``discard``) it matched (``start_operation(action, ...)``).
OPERATION_ACTIONS: tuple[OperationAction, ...] = get_args(OperationAction)
#: Where an operation by filter stands: ``running`` until it has finished, then one of the others.
OPERATION_STATES: tuple[OperationState, ...] = get_args(OperationState)
#: How a webhook's requests are signed, and which event each makes by default
#: (``put_webhook(name, {"format": ...})``; ``generic`` when left out).
WEBHOOK_FORMATS: tuple[WebhookFormat, ...] = get_args(WebhookFormat)
#: What an alert rule watches in its namespace (``put_alert(name, {"when": {"kind": ...}})``).
ALERT_KINDS: tuple[AlertKind, ...] = get_args(AlertKind)
#: A code the client gives an error answer that is not the API's own (a proxy's, say).
UNKNOWN: Literal["unknown"] = "unknown"


def is_terminal(task: Task | ChildLink) -> bool:
    """Whether the task is finished (``complete``, ``error`` or ``cancelled``)."""
    return task.state not in ("scheduled", "running")


def is_finished(operation: Operation) -> bool:
    """Whether the operation has ended (``complete``, ``cancelled`` or ``failed``)."""
    return operation.state != "running"


__all__ = [
    "ALERT_KINDS",
    "JSON",
    "OPERATION_ACTIONS",
    "OPERATION_STATES",
    "PRIORITIES",
    "PURGE_STATES",
    "TASK_STATES",
    "UNKNOWN",
    "UNSET",
    "WEBHOOK_FORMATS",
    "Alert",
    "AlertCondition",
    "AlertEmailSink",
    "AlertKind",
    "AlertList",
    "AlertSink",
    "AlertSlackSink",
    "AlertWebhookSink",
    "AuditEntry",
    "AuditPage",
    "Clock",
    "Backfill",
    "Backfilled",
    "BatchCreated",
    "BatchItem",
    "BatchItemError",
    "BatchItemResult",
    "BatchStatus",
    "ChildLink",
    "ConcurrencyLimit",
    "ConcurrencyLimitList",
    "ErrorCode",
    "ErrorDetail",
    "Event",
    "EventItem",
    "EventPage",
    "EventStart",
    "EventsSent",
    "History",
    "OnTimeout",
    "Operation",
    "OperationAction",
    "OperationCount",
    "OperationFilter",
    "OperationList",
    "OperationState",
    "Overlap",
    "ParentCancel",
    "Priority",
    "PurgeResult",
    "PurgeState",
    "Purged",
    "RateLimit",
    "RateLimitList",
    "RetentionPolicy",
    "Schedule",
    "ScheduleList",
    "Signal",
    "SignalList",
    "Skipped",
    "Step",
    "StepChild",
    "StepConcurrencyLimit",
    "StepLimits",
    "StepPage",
    "StepRateLimit",
    "StepStateName",
    "StepThrottle",
    "StepWait",
    "Task",
    "TaskChild",
    "TaskCounts",
    "TaskPage",
    "TaskStateName",
    "ThrottleKind",
    "Transition",
    "Unset",
    "WaitKind",
    "Webhook",
    "WebhookFormat",
    "WebhookList",
    "WorkerInfo",
    "WorkerList",
    "is_finished",
    "is_terminal",
]
