"""Riding through restarts: which failures are the connection's (worth sending again), and the
backoff between attempts. A call that retries yields a :class:`Pause` between attempts; each
client sleeps it its own way (``time.sleep``, ``asyncio.sleep``)."""

from __future__ import annotations

import random
import ssl
from dataclasses import dataclass

from .errors import ClientError, ConnectionFailed, ServerError

#: Answers of a gateway, or of a service restarting behind it: worth asking again.
RETRIED_STATUSES = frozenset({502, 503, 504})


@dataclass(frozen=True)
class Pause:
    """A call's wait before its next request (a backoff), in seconds."""

    seconds: float


def transient(error: ClientError) -> bool:
    """Whether ``error`` is the connection's and a new attempt may succeed: no answer (refused,
    reset, dropped, timed out; not a certificate that failed to verify), or a 502, 503 or 504.
    Never an answer of the API refusing the request (4xx)."""
    if isinstance(error, ConnectionFailed):
        cause: BaseException | None = error.__cause__
        for _ in range(16):
            if cause is None:
                return True
            if isinstance(cause, ssl.SSLError):
                return False
            cause = cause.__cause__ or cause.__context__
        return True
    return isinstance(error, ServerError) and error.status in RETRIED_STATUSES


class Backoff:
    """Delays between attempts: 0.1 s doubling up to 2 s, each between half and all of its step
    (jitter, so clients cut off together do not come back together)."""

    FIRST = 0.1
    MAX = 2.0

    def __init__(self) -> None:
        self._step = self.FIRST

    def next(self) -> float:
        step = self._step
        self._step = min(step * 2, self.MAX)
        return step * random.uniform(0.5, 1.0)

    def reset(self) -> None:
        self._step = self.FIRST
