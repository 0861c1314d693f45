"""Parent results carried by reference are read through the native worker's
``parent_results_page`` (a stand-in here, answering only that), a page at a time (the end-to-end read is tests/slow/references.rs)."""

import pytest

import tasker


class _Pages:
    """Two pages of parent results, recording the cursors asked for."""

    def __init__(self) -> None:
        self.asked: list[str | None] = []

    def heartbeat(self, job: int) -> bool:
        return True

    def parent_results_page(
        self, task_id: str, step_id: str, after: str | None
    ) -> tuple[str, str | None]:
        self.asked.append(after)
        if after is None:
            return '{"a": {"v": 1}, "b": {"v": 2}}', "c1"
        return '{"c": {"v": 3}}', None


def _job_by_reference() -> dict:
    return {
        "id": 1, "task_id": "t", "step_id": "s", "namespace": "ns", "task_name": "t", "step_name": "s",
        "handler": "h", "attempt": 1, "max_attempts": 1, "context": {}, "parent_results": {},
        "parent_results_by_reference": True, "timeout_ms": 1000,
    }


def test_each_parent_result_reads_the_next_page_only_when_the_last_is_used_up() -> None:
    pages = _Pages()
    ctx = tasker.StepContext.from_job(_job_by_reference(), pages)
    seen = [(name, r["v"], len(pages.asked)) for name, r in ctx.each_parent_result()]
    assert seen == [("a", 1, 1), ("b", 2, 1), ("c", 3, 2)]
    assert pages.asked == [None, "c1"]


def test_parent_results_reads_every_page_once_and_keeps_them() -> None:
    pages = _Pages()
    ctx = tasker.StepContext.from_job(_job_by_reference(), pages)
    expected = {"a": {"v": 1}, "b": {"v": 2}, "c": {"v": 3}}
    assert ctx.parent_results == expected
    assert ctx.parent_results == expected
    assert len(pages.asked) == 2


def test_carried_parent_results_need_no_reader_and_by_reference_ones_do() -> None:
    job = {**_job_by_reference(), "parent_results": {"a": 1}, "parent_results_by_reference": False}
    ctx = tasker.StepContext.from_job(job)
    assert ctx.parent_results == {"a": 1}
    assert list(ctx.each_parent_result()) == [("a", 1)]
    with pytest.raises(ValueError, match="by reference"):
        tasker.StepContext.from_job(_job_by_reference())


class _Emits:
    """Takes chunks like the native worker, refusing those of topic ``full``."""

    def __init__(self) -> None:
        self.sent: list[tuple[int, str, str, bool]] = []

    def heartbeat(self, job: int) -> bool:
        return True

    def emit(self, job: int, topic: str, payload: str, text: bool) -> tuple[str, str] | None:
        self.sent.append((job, topic, payload, text))
        if topic == "full":
            return ("stream_too_large", "the step's stream would exceed 10 bytes")
        return None


def test_emit_hands_json_and_text_to_the_core_and_a_refusal_raises_its_kind() -> None:
    native = _Emits()
    job = dict(_job_by_reference(), parent_results_by_reference=False, id=7)
    ctx = tasker.StepContext.from_job(job, native)
    ctx.emit_text("tokens", "Hel")
    ctx.emit("progress", {"pct": 40})
    assert native.sent == [(7, "tokens", "Hel", True), (7, "progress", '{"pct": 40}', False)]
    with pytest.raises(tasker.StreamError) as refused:
        ctx.emit_text("full", "x")
    assert refused.value.kind == "stream_too_large"
    assert isinstance(refused.value, tasker.PermanentError)
    with pytest.raises(tasker.StreamError) as not_json:
        ctx.emit("progress", {"when": object()})
    assert not_json.value.kind == "invalid_stream_chunk"
    assert ctx.emitted == []


def test_without_a_worker_what_a_handler_emits_is_kept_on_its_context() -> None:
    job = dict(_job_by_reference(), parent_results_by_reference=False)
    ctx = tasker.StepContext.from_job(job)
    ctx.emit_text("tokens", "a")
    ctx.emit("progress", [1])
    assert ctx.emitted == [("tokens", "a"), ("progress", [1])]
