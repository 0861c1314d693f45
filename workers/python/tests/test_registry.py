"""Registering handlers: decorator, class style, explicit registries, mistakes."""

import pytest

import tasker


def test_decorator_registers_and_returns_the_function() -> None:
    reg = tasker.Registry()

    @reg.handler("double")
    def double(ctx):
        return {"value": ctx.context["value"] * 2}

    entry = reg.get("double")
    assert entry is not None and entry.fn is double and not entry.is_async
    assert "double" in reg and reg.names() == ["double"] and len(reg) == 1
    assert reg.get("missing") is None


def test_async_functions_are_recognised() -> None:
    reg = tasker.Registry()

    @reg.handler("later")
    async def later(ctx):
        return 1

    assert reg.get("later").is_async


def test_class_style_registers_on_definition_sync_or_async() -> None:
    reg = tasker.Registry()

    class Base(tasker.Handler, registry=reg):
        """No name: an abstract base, not registered."""

    class Double(Base, registry=reg):
        name = "double"

        def call(self, ctx):
            return {"value": 2}

    class Slow(tasker.Handler, registry=reg):
        name = "slow"

        async def call(self, ctx):
            return {}

    assert reg.names() == ["double", "slow"]
    assert not reg.get("double").is_async
    assert reg.get("double").fn(None) == {"value": 2}
    assert reg.get("slow").is_async
    # A handler instance is made once; its bound `call` is what runs.
    assert reg.get("double").fn.__self__.__class__ is Double


def test_module_level_decorator_uses_the_default_registry() -> None:
    @tasker.handler("test_registry_default_only")
    def h(ctx):
        return None

    assert tasker.default_registry.get("test_registry_default_only").fn is h


def test_duplicates_and_bad_handlers_are_rejected() -> None:
    reg = tasker.Registry()
    reg.register("x", lambda ctx: 1)
    with pytest.raises(ValueError, match="already registered"):
        reg.register("x", lambda ctx: 2)
    with pytest.raises(ValueError, match="non-empty"):
        reg.register("", lambda ctx: 1)
    with pytest.raises(TypeError, match="callable"):
        reg.register("y", 42)  # type: ignore[arg-type]
