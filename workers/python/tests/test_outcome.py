"""Outcomes in the core's wire format: success, permanent and retryable failures."""

import json
import math
import time

import tasker
from tasker import outcome


class Rejected(tasker.PermanentError):
    pass


def raise_and_catch(error: BaseException) -> BaseException:
    def failing_handler():
        raise error

    try:
        failing_handler()
    except BaseException as e:
        return e
    raise AssertionError("unreachable")


def test_success_carries_the_result_and_times() -> None:
    o = json.loads(outcome.success(7, {"value": 12}, outcome.now()))
    assert o["id"] == 7 and o["status"] == "success" and o["result"] == {"value": 12}
    assert isinstance(o["started_at"], float), "seconds since the epoch, as the core takes them"
    assert o["started_at"] <= o["finished_at"] <= time.time()


def test_a_result_that_is_not_json_fails_its_step_permanently() -> None:
    for bad in ({"when": object()}, {"x": math.nan}):
        o = json.loads(outcome.success(1, bad, outcome.now()))
        assert o["status"] == "failure" and o["retryable"] is False
        assert o["error"]["kind"] == "invalid_result"


def test_permanent_error_is_not_retryable_and_named_by_its_class() -> None:
    o = json.loads(outcome.failure(3, raise_and_catch(Rejected("input rejected")), outcome.now()))
    assert o["status"] == "failure" and o["retryable"] is False
    assert o["error"]["kind"] == "Rejected"
    assert o["error"]["message"] == "input rejected"
    base = json.loads(outcome.failure(3, tasker.PermanentError("no"), outcome.now()))
    assert base["error"]["kind"] == "PermanentError" and base["retryable"] is False


def test_other_exceptions_are_retryable_with_class_message_and_backtrace() -> None:
    o = json.loads(outcome.failure(4, raise_and_catch(KeyError("value")), outcome.now()))
    assert o["retryable"] is True
    assert o["error"]["kind"] == "KeyError"
    assert o["error"]["message"] == "'value'"
    assert "failing_handler" in o["error"]["backtrace"]
    assert "Traceback (most recent call last)" in o["error"]["backtrace"]


def test_unknown_handler_and_timeout_match_the_rust_worker() -> None:
    o = json.loads(outcome.unknown_handler(5, "nope"))
    assert o["retryable"] is False and o["error"]["kind"] == "unknown_handler"
    assert o["error"]["message"] == 'no handler named "nope" is registered in this worker'
    t = json.loads(outcome.timed_out(6, 0.25, outcome.now()))
    assert t["retryable"] is True and t["error"] == {
        "kind": "timeout",
        "message": "handler did not finish within 250 ms",
    }


def test_a_kind_given_replaces_the_class_name() -> None:
    o = json.loads(outcome.failure(8, tasker.PermanentError("no", kind="validation"), outcome.now()))
    assert o["error"]["kind"] == "validation" and o["retryable"] is False
    r = json.loads(outcome.failure(9, tasker.RetryableError("later", kind="transient"), outcome.now()))
    assert r["error"]["kind"] == "transient" and r["retryable"] is True
    assert "retry_after_ms" not in r, "no delay unless asked for"
    plain = json.loads(outcome.failure(9, tasker.RetryableError("later"), outcome.now()))
    assert plain["error"]["kind"] == "RetryableError"


def test_a_retryable_error_may_ask_for_its_retry_delay() -> None:
    from datetime import timedelta

    o = json.loads(outcome.failure(
        10, tasker.RetryableError("slow down", kind="rate_limited", retry_after=2.5), outcome.now()))
    assert o["retryable"] is True and o["retry_after_ms"] == 2500
    d = json.loads(outcome.failure(
        11, tasker.RetryableError("later", retry_after=timedelta(minutes=1)), outcome.now()))
    assert d["retry_after_ms"] == 60_000
    for bad in (-1, float("nan")):
        try:
            tasker.RetryableError("x", retry_after=bad)
        except ValueError:
            continue
        raise AssertionError(f"retry_after={bad!r} was accepted")


def test_an_unreadable_parent_result_is_reference_unavailable_as_in_every_language() -> None:
    o = json.loads(outcome.failure(12, tasker.ReferenceUnavailable("gone"), outcome.now()))
    assert o["error"]["kind"] == "reference_unavailable" and o["retryable"] is True
