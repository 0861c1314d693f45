"""Tasker step handlers in Python.

    import tasker

    @tasker.handler("double")
    def double(ctx: tasker.StepContext):
        return {"value": ctx.context["value"] * 2}

Start a worker with ``python -m tasker.worker --templates DIR --handlers handlers.py``.
"""

from ._native import ReferenceUnavailable
from .context import StepContext
from .errors import PermanentError
from .registry import Handler, Registry, default_registry, handler, register
from .runner import Runner

__all__ = [
    "Handler",
    "PermanentError",
    "ReferenceUnavailable",
    "Registry",
    "Runner",
    "StepContext",
    "default_registry",
    "handler",
    "register",
]
