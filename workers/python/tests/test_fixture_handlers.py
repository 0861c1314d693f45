"""The conformance handlers compute what the Rust ones compute (tasker-worker-rust/src/handlers.rs)."""

import asyncio

import pytest

import tasker


def ctx(context=None, parents=None, attempt=1) -> tasker.StepContext:
    return tasker.StepContext(
        task_id="t", step_id="s", namespace="python_examples", task_name="t", step_name="s",
        handler="h", attempt=attempt, max_attempts=3, context={} if context is None else context,
        parent_results=parents or {}, timeout=1.0,
    )


def call(registry, name, c):
    entry = registry.get(name)
    result = entry.fn(c)
    return asyncio.run(result) if entry.is_async else result


def test_root_reads_context_and_children_sum_parents(fixture_handlers) -> None:
    assert call(fixture_handlers, "double", ctx({"value": 6})) == {"value": 12}
    assert call(fixture_handlers, "add_ten", ctx({"value": 6})) == {"value": 16}
    assert call(fixture_handlers, "square", ctx({"value": -7})) == {"value": 49}
    parents = {"a": {"value": 36}, "b": {"value": 16}}
    assert call(fixture_handlers, "sum_parents", ctx({}, parents)) == {"value": 52}
    # Rust's division truncates toward zero.
    assert call(fixture_handlers, "halve", ctx({"value": -7})) == {"value": -3}
    assert call(fixture_handlers, "halve", ctx({"value": 484})) == {"value": 242}


def test_bad_input_and_overflow_are_permanent(fixture_handlers) -> None:
    for bad in ({"value": "x"}, {"value": True}, {"value": 6.0}, {}):
        with pytest.raises(tasker.PermanentError) as e:
            call(fixture_handlers, "double", ctx(bad))
        assert type(e.value).__name__ == "InvalidInput"
    with pytest.raises(tasker.PermanentError) as e:
        call(fixture_handlers, "square", ctx({"value": 2**63 - 1}))
    assert type(e.value).__name__ == "Overflow"
    with pytest.raises(tasker.PermanentError, match="parent `a` has no integer `value`"):
        call(fixture_handlers, "sum_parents", ctx({}, {"a": {"v": 1}}))


def test_decision_routes_by_size(fixture_handlers) -> None:
    large = call(fixture_handlers, "route_by_size", ctx({}, {"c": {"value": 84}}))
    assert large == {"branches": ["large"], "value": 84}
    small = call(fixture_handlers, "route_by_size", ctx({}, {"c": {"value": 14}}))
    assert small == {"branches": ["small"], "value": 14}


def test_flaky_fails_retryably_until_its_attempt(fixture_handlers) -> None:
    with pytest.raises(Exception) as e:
        call(fixture_handlers, "flaky", ctx({}, attempt=2))
    assert not isinstance(e.value, tasker.PermanentError)
    assert call(fixture_handlers, "flaky", ctx({}, attempt=3)) == {"attempts": 3}
    assert call(fixture_handlers, "flaky", ctx({"succeed_on_attempt": 1})) == {"attempts": 1}


def test_the_other_fixtures(fixture_handlers) -> None:
    parents = {"flaky": {"attempts": 3}}
    assert call(fixture_handlers, "echo_attempts", ctx({}, parents, attempt=2)) == {
        "attempt": 2, "parents": parents,
    }
    assert call(fixture_handlers, "sleep", ctx({"sleep_ms": 5})) == {"slept_ms": 5}
    assert fixture_handlers.get("sleep").is_async
    with pytest.raises(tasker.PermanentError, match="input rejected for good"):
        call(fixture_handlers, "fail_permanently", ctx())
    with pytest.raises(RuntimeError, match="always panics"):
        call(fixture_handlers, "panic", ctx())


def test_signal_wait_finish_doubles_the_value_and_says_who_approved(fixture_handlers) -> None:
    approval = {"approval": {"approved_by": "conformance"}}
    assert call(fixture_handlers, "signal_wait_finish", ctx({"value": 5}, approval)) == {
        "value": 10, "approved_by": "conformance",
    }
    # A payload without the field (or a wait that timed out and continued) approves nobody.
    timed_out = {"approval": {"timed_out": True}}
    assert call(fixture_handlers, "signal_wait_finish", ctx({"value": 5}, timed_out)) == {
        "value": 10, "approved_by": None,
    }
    for bad in ({"value": "5"}, {}):
        with pytest.raises(tasker.PermanentError) as e:
            call(fixture_handlers, "signal_wait_finish", ctx(bad, approval))
        assert type(e.value).__name__ == "InvalidInput"
    with pytest.raises(tasker.PermanentError) as e:
        call(fixture_handlers, "signal_wait_finish", ctx({"value": 2**62}, approval))
    assert type(e.value).__name__ == "Overflow"


def test_csv_files_outside_the_allowed_folder_are_refused(fixture_handlers) -> None:
    # A task's context names the file: only the fixtures folder (TASKER_CSV_ROOT) may be read.
    for outside in ("/etc/passwd", "/etc/../etc/hostname"):
        with pytest.raises(tasker.PermanentError, match="must name a file under") as e:
            call(fixture_handlers, "csv_split", ctx({"csv_path": outside}))
        assert type(e.value).__name__ == "InvalidInput"


def test_pipeline_rules_drops_views_and_keeps_the_order(fixture_handlers) -> None:
    events = [[5122, 1, 2826], [2561, 2, 5726], [8215, 0, 9734], [5958, 0, 9912], [4546, 1, 7804]]
    assert call(fixture_handlers, "pipeline_rules", ctx({}, {"parse": {"events": events}})) == {
        "events": [[2561, 2, 5726], [8215, 0, 9734], [5958, 0, 9912]],
    }
    assert call(fixture_handlers, "pipeline_rules", ctx({}, {"parse": {"events": []}})) == {"events": []}
    for bad in ({}, {"parse": {"lines": []}}, {"parse": {"events": [[1]]}}, {"parse": {"events": [5]}}):
        with pytest.raises(tasker.PermanentError) as e:
            call(fixture_handlers, "pipeline_rules", ctx({}, bad))
        assert type(e.value).__name__ == "InvalidInput"
