"""Errors of the API client.

Every failure is a :class:`ClientError`. The API refused the request: an :class:`ApiError`
(a subclass for each kind of status) carrying the API's stable ``code``, e.g.
``task_not_found``; catch the subclass, or compare the code. No answer at all: a
:class:`ConnectionFailed` whose ``__cause__`` is the underlying error.
"""

from __future__ import annotations

from typing import Any, Literal, TypeAlias, cast

from ._api.models import ErrorCode

#: An error's code: one of the API's (the document's ``ErrorCode``), or ``"unknown"`` for an
#: answer that was not the API's JSON error. A newer server may add codes: the value is then
#: that string all the same.
Code: TypeAlias = ErrorCode | Literal["unknown"]


class ClientError(Exception):
    """Base of every error the client raises."""


class ConnectionFailed(ClientError):
    """The orchestrator could not be reached or did not answer in time: connection refused,
    a name that does not resolve, a certificate that could not be verified, a timeout. The
    cause is ``__cause__`` (an ``httpx`` error); the request may or may not have been applied
    (an idempotency key makes a retried create safe)."""


class ApiError(ClientError):
    """The API answered with an error: HTTP ``status``, the stable ``code`` (``"unknown"`` if
    the answer was not the API's JSON error, e.g. from a proxy), a human ``message`` and the
    optional ``details``."""

    def __init__(self, status: int, code: Code, message: str, details: Any = None) -> None:
        super().__init__(status, code, message, details)
        self.status = status
        self.code: Code = code
        self.message = message
        self.details = details

    def __str__(self) -> str:
        return f"{self.status} {self.code}: {self.message}"


class InvalidRequest(ApiError):
    """400, 413 or 422: the request is malformed or refused as it is (``invalid_context``,
    ``context_schema_violation``, ``invalid_wait``, ``unknown_template``, ...)."""


class AuthError(ApiError):
    """401 ``unauthenticated`` (no valid token) or 403 ``forbidden`` (the token's scope does
    not cover the request)."""


class NotFound(ApiError):
    """404: ``task_not_found``, ``step_not_found``, ``schedule_not_found``, ..."""


class TaskPurged(NotFound):
    """410 ``task_purged``: the task was purged by the retention policy (``purge``), its record
    is gone. ``details`` has its ``task_id``, the ``state`` it ended in and ``purged_at``. A
    :class:`NotFound`, as the id becomes once its tombstone expires (``404 task_not_found``)."""


class Conflict(ApiError):
    """409: the request contradicts the task's state (``task_not_running``,
    ``task_not_failed``, ``step_not_failed``, ``task_finished``) or an earlier request
    (``idempotency_key_reused``, ``signal_conflict``)."""


class ServerError(ApiError):
    """5xx: the orchestrator failed (``internal``) or a service behind it is unavailable
    (``storage_unavailable``, ``broker_unavailable``: worth retrying)."""


_BY_STATUS: dict[int, type[ApiError]] = {
    400: InvalidRequest,
    413: InvalidRequest,
    422: InvalidRequest,
    401: AuthError,
    403: AuthError,
    404: NotFound,
    409: Conflict,
    410: TaskPurged,
}


def api_error(status: int, code: str, message: str, details: Any = None) -> ApiError:
    """The :class:`ApiError` subclass for ``status``, with these fields (``code`` as the answer
    gave it)."""
    cls = ServerError if status >= 500 else _BY_STATUS.get(status, ApiError)
    return cls(status, cast(Code, code), message, details)
