"""The engine's clock (``/v1/clock``): reading it, and in test mode (``tasker-orchestrator
test-env``, what :class:`tasker.testing.WorkflowEnv` starts) moving it and waiting for a task
with time skipping. Its calls, and the methods both clients carry; the answer types
:class:`Clock` and :class:`Skipped` are generated from the API's document."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

from ._api.api.clock import advance_clock as advance_op
from ._api.api.clock import get_clock, skip_clock
from ._api.models import AdvanceClock
from ._calls import Call, Id, _call, get_task
from .values import Clock, Skipped, Task, is_terminal

#: Seconds one look at the task lasts before the clock may skip.
LOOK = 0.02


def clock() -> Call[Clock]:
    return _call(get_clock._get_kwargs(), Clock.from_dict)


def advance(by: str) -> Call[Clock]:
    return _call(advance_op._get_kwargs(body=AdvanceClock(by=by)), Clock.from_dict)


def skip() -> Call[Skipped]:
    return _call(skip_clock._get_kwargs(), Skipped.from_dict)


def wait_skipping(id: Id, timeout: float) -> Call[Task]:
    """Looks at the task (a long poll of :data:`LOOK` seconds) until it is terminal or
    ``timeout`` seconds of wall time have passed, skipping the clock to its next timer after
    each look that finds it running."""
    deadline = time.monotonic() + timeout
    while True:
        left = max(0.0, deadline - time.monotonic())
        task = yield from get_task(id, min(left, LOOK))
        if is_terminal(task) or left == 0:
            return task
        yield from skip()


_DOCS = {
    "clock": """The engine's clock: ``now`` (the time waits, retries, deadlines, schedules and
        rate limits read), ``skew_ms`` (how far a test moved it), ``test_clock``, the
        ``next_timer`` and whether a step is with a worker (``busy``).""",
    "advance_clock": """Test mode (admin): moves the engine's clock forward by ``by`` (``"7d"``,
        ``"90s"``); every timer then due has rung when it answers. :class:`~tasker.ApiError`
        ``409 test_clock_off`` on an orchestrator that is not in test mode.""",
    "skip_clock": """Test mode (admin): moves the clock to its next timer when no step is with
        a worker; ``skipped`` says whether it moved.""",
    "wait_skipping": """Test mode: waits up to ``timeout`` seconds of wall time for a task to
        end, skipping the clock to its next timer whenever no step is with a worker (a week's
        sleep passes at once); returns the task as it is then.""",
}


class ClockMethods:
    """The clock methods of :class:`~tasker.Client`."""

    _run: Callable[[Call[Any]], Any]

    def clock(self) -> Clock:
        result: Clock = self._run(clock())
        return result

    def advance_clock(self, by: str) -> Clock:
        result: Clock = self._run(advance(by))
        return result

    def skip_clock(self) -> Skipped:
        result: Skipped = self._run(skip())
        return result

    def wait_skipping(self, id: Id, timeout: float) -> Task:
        result: Task = self._run(wait_skipping(id, timeout))
        return result

    clock.__doc__ = _DOCS["clock"]
    advance_clock.__doc__ = _DOCS["advance_clock"]
    skip_clock.__doc__ = _DOCS["skip_clock"]
    wait_skipping.__doc__ = _DOCS["wait_skipping"]


class AsyncClockMethods:
    """The clock methods of :class:`~tasker.AsyncClient`."""

    _run: Callable[[Call[Any]], Awaitable[Any]]

    async def clock(self) -> Clock:
        result: Clock = await self._run(clock())
        return result

    async def advance_clock(self, by: str) -> Clock:
        result: Clock = await self._run(advance(by))
        return result

    async def skip_clock(self) -> Skipped:
        result: Skipped = await self._run(skip())
        return result

    async def wait_skipping(self, id: Id, timeout: float) -> Task:
        result: Task = await self._run(wait_skipping(id, timeout))
        return result

    clock.__doc__ = _DOCS["clock"]
    advance_clock.__doc__ = _DOCS["advance_clock"]
    skip_clock.__doc__ = _DOCS["skip_clock"]
    wait_skipping.__doc__ = _DOCS["wait_skipping"]
