"""Errors a handler raises to steer retries.

Every exception a handler raises fails its attempt. Its ``kind`` (stored with the step, shown
by the API and the dashboard) is the ``kind`` given to a :class:`PermanentError` or
:class:`RetryableError`, else the exception's class name (``ValueError``, or your subclass's).
"""

from __future__ import annotations

from datetime import timedelta


class PermanentError(Exception):
    """Raise it (or a subclass) when retrying cannot help: the step fails at once and the
    task ends in ``error``. Every other exception is retried per the template's retry policy::

        raise tasker.PermanentError("no such account", kind="validation")

        class InvalidInput(tasker.PermanentError): ...   # kind "InvalidInput"
    """

    def __init__(self, message: str = "", *, kind: str | None = None) -> None:
        super().__init__(message)
        self.kind = kind or type(self).__name__


class RetryableError(Exception):
    """Raise it to fail the attempt and have the step retried, naming the failure's ``kind``
    and, if you know better than the template's backoff (a rate limit's ``Retry-After``),
    when the next attempt should run: ``retry_after`` in seconds or as a ``timedelta`` (at most
    a day). Any other exception is retried too, after the template's backoff::

        raise tasker.RetryableError("429 from the payment API", kind="rate_limited", retry_after=30)
    """

    def __init__(
        self,
        message: str = "",
        *,
        kind: str | None = None,
        retry_after: float | timedelta | None = None,
    ) -> None:
        super().__init__(message)
        self.kind = kind or type(self).__name__
        if isinstance(retry_after, timedelta):
            retry_after = retry_after.total_seconds()
        if retry_after is not None and not retry_after >= 0:
            raise ValueError(f"retry_after must be at least 0 seconds, not {retry_after!r}")
        self.retry_after = retry_after


class StreamError(PermanentError):
    """Raised by ``ctx.emit`` and ``ctx.emit_text`` when a chunk is not taken. Its ``kind``:
    ``invalid_stream_chunk`` (a topic of 1 to 100 characters, at most 256 KiB, JSON data; the
    stream goes on), ``stream_too_large`` (the attempt streamed ``worker.max_stream_bytes``:
    the step fails with it whatever the handler does), ``stream_closed`` (the attempt ended).
    Left to propagate, it fails the step permanently with that kind."""
