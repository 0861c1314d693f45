"""The schedules' calls (``/v1/schedules``), written once for the sync and the async client as
:mod:`._calls` writes the others (a call is a generator of the requests it needs)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from ._api.api.schedules import (
    backfill_schedule as backfill_op,
    delete_schedule as delete_schedule_op,
    get_schedule as get_schedule_op,
    list_schedules as list_schedules_op,
    pause_schedule as pause_schedule_op,
    put_schedule,
    resume_schedule as resume_schedule_op,
    trigger_schedule as trigger_schedule_op,
    update_schedule as update_schedule_op,
)
from ._api.models import Backfill, PauseSchedule, ScheduleChanges, ScheduleSpec
from ._api.types import Unset
from ._calls import Call, Send, Time, _AsGiven, _call, _error, _every_page, _given, timestamp
from .values import JSON, Backfilled, Schedule, ScheduleList, Task


def list_schedules(namespace: str | None) -> Call[list[Schedule]]:
    def page(data: Any) -> tuple[list[Schedule], str | None | Unset]:
        answer = ScheduleList.from_dict(data)
        return answer.schedules, answer.next_

    return _every_page(
        lambda after: list_schedules_op._get_kwargs(namespace=_given(namespace), after=after),
        page,
    )


def get_schedule(namespace: str, name: str) -> Call[Schedule]:
    return _call(get_schedule_op._get_kwargs(namespace, name), Schedule.from_dict)


def apply_schedule(definition: Mapping[str, JSON]) -> Call[Schedule]:
    body = cast(ScheduleSpec, _AsGiven(definition))
    return _call(put_schedule._get_kwargs(body=body), Schedule.from_dict)


def update_schedule(namespace: str, name: str, changes: Mapping[str, JSON]) -> Call[Schedule]:
    body = cast(ScheduleChanges, _AsGiven(changes))
    return _call(update_schedule_op._get_kwargs(namespace, name, body=body), Schedule.from_dict)


def delete_schedule(namespace: str, name: str) -> Call[None]:
    # 204: no body to decode.
    response = yield Send(delete_schedule_op._get_kwargs(namespace, name))
    if not response.is_success:
        raise _error(response)


def pause_schedule(namespace: str, name: str, note: str | None) -> Call[Schedule]:
    body = PauseSchedule(note=_given(note))
    return _call(pause_schedule_op._get_kwargs(namespace, name, body=body), Schedule.from_dict)


def resume_schedule(namespace: str, name: str) -> Call[Schedule]:
    return _call(resume_schedule_op._get_kwargs(namespace, name), Schedule.from_dict)


def trigger_schedule(namespace: str, name: str) -> Call[Task]:
    return _call(trigger_schedule_op._get_kwargs(namespace, name), Task.from_dict)


def backfill_schedule(namespace: str, name: str, from_: Time, to: Time) -> Call[Backfilled]:
    body = Backfill(from_=timestamp(from_), to=timestamp(to))
    return _call(backfill_op._get_kwargs(namespace, name, body=body), Backfilled.from_dict)
