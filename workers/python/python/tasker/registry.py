"""Handlers by name: a function decorated with ``@tasker.handler("name")`` or a subclass of
``tasker.Handler`` with a ``name``. Either may be ``async``."""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Iterator

from .context import StepContext

HandlerFn = Callable[[StepContext], Any]


@dataclass(frozen=True)
class Registered:
    """A handler as the runner calls it."""

    name: str
    fn: HandlerFn
    # Decided once at registration: async handlers run on the event loop, others on threads.
    is_async: bool


class Registry:
    """Handlers by name. Names are unique: registering one twice is a mistake worth an error,
    because the step would otherwise run whichever was loaded last."""

    def __init__(self) -> None:
        self._handlers: dict[str, Registered] = {}

    def register(self, name: str, fn: HandlerFn | type[Handler] | Handler) -> Registered:
        """Registers a function of one ``StepContext``, a ``Handler`` subclass (instantiated
        once, with no arguments) or a ``Handler`` instance."""
        if not isinstance(name, str) or not name:
            raise ValueError(f"a handler name must be a non-empty string, not {name!r}")
        if name in self._handlers:
            raise ValueError(f"a handler named {name!r} is already registered")
        if isinstance(fn, type) and issubclass(fn, Handler):
            fn = fn()
        if isinstance(fn, Handler):
            fn = fn.call
        if not callable(fn):
            raise TypeError(f"handler {name!r} must be callable, not {type(fn).__name__}")
        entry = Registered(name, fn, inspect.iscoroutinefunction(fn))
        self._handlers[name] = entry
        return entry

    def handler(self, name: str) -> Callable[[HandlerFn], HandlerFn]:
        """Decorator form of :meth:`register`; returns the function unchanged."""

        def decorate(fn: HandlerFn) -> HandlerFn:
            self.register(name, fn)
            return fn

        return decorate

    def get(self, name: str) -> Registered | None:
        return self._handlers.get(name)

    def names(self) -> list[str]:
        return sorted(self._handlers)

    def __contains__(self, name: object) -> bool:
        return name in self._handlers

    def __len__(self) -> int:
        return len(self._handlers)

    def __iter__(self) -> Iterator[Registered]:
        return iter(self._handlers.values())


#: Where ``@tasker.handler`` and ``tasker.Handler`` subclasses register unless told otherwise;
#: the worker entry point runs these.
default_registry = Registry()


class Handler:
    """Class-style handler: set ``name`` and define ``call(self, ctx)`` (or ``async def``).
    Defining the subclass registers it (in ``default_registry``, or in the registry passed as
    ``class Double(tasker.Handler, registry=my_registry)``)."""

    name: ClassVar[str | None] = None

    def __init_subclass__(cls, registry: Registry | None = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # Only classes that name themselves register: abstract bases in between do not.
        if cls.__dict__.get("name"):
            (registry if registry is not None else default_registry).register(cls.name, cls)

    def call(self, ctx: StepContext) -> Any:
        raise NotImplementedError(f"{type(self).__name__}.call")


def handler(name: str) -> Callable[[HandlerFn], HandlerFn]:
    """``@tasker.handler("double")`` registers the function in ``default_registry``."""
    return default_registry.handler(name)


def register(name: str, fn: HandlerFn | type[Handler] | Handler) -> Registered:
    """Registers a handler in ``default_registry``."""
    return default_registry.register(name, fn)
