"""The events calls (``send_event``, ``send_events``, ``events``, ``event``), sync and async,
against the stand-in API (client_stand_in): the requests the contract describes and the answers
read back (tests/fast/templates/events.rs checks what a real orchestrator starts)."""

from __future__ import annotations

import asyncio
import uuid
from datetime import datetime, timezone

import pytest

import tasker
import tasker.client
from client_stand_in import Recorder, recorder  # noqa: F401 (the fixture)

EVENT_ID = "019a0000-0000-7000-8000-0000000000e1"
TASK_ID = "019a0000-0000-7000-8000-0000000000e2"
EVENT = {
    "id": EVENT_ID, "namespace": "shop", "name": "order.created", "key": "customer-7",
    "sender_id": "order-42-created", "data": {"id": 42, "total": 180},
    "received_at": "2026-11-30T09:00:00.123456Z",
    "started": [
        {"template": "shop/fulfil@2", "task_id": TASK_ID, "debounced": False,
         "deduplicated": False, "refused": None},
        {"template": "shop/audit@1", "task_id": None, "debounced": False, "deduplicated": False,
         "refused": {"code": "forbidden", "message": "not your namespace", "details": None}},
    ],
}
# An event that matched nothing, sent without key or id.
BARE = {
    "id": "019a0000-0000-7000-8000-0000000000e0", "namespace": "shop", "name": "order.viewed",
    "key": None, "sender_id": None, "data": {}, "received_at": "2026-11-30T08:59:00Z",
    "started": [],
}
SENT = {
    "created": 1, "existing": 1, "refused": 1,
    "results": [
        {"index": 0, "status": "created", "event_id": EVENT_ID, "task_ids": [TASK_ID]},
        {"index": 1, "status": "existing", "event_id": EVENT_ID, "task_ids": [TASK_ID]},
        {"index": 2, "status": "refused",
         "error": {"code": "invalid_event_name", "message": "not a name", "details": None}},
    ],
}


def test_the_events_calls_send_the_contracts_requests_and_read_its_answers(
    recorder: tuple[str, type[Recorder]],  # noqa: F811
) -> None:
    url, api = recorder
    api.answers.update({
        # A new event (201), then the same id again (200: the one stored first).
        ("POST", "/v1/events"): [(201, EVENT), (200, EVENT), (201, BARE)],
        ("POST", "/v1/events:batch"): (200, SENT),
        ("GET", "/v1/events/log"): [
            (200, {"events": [EVENT], "next_before": EVENT_ID}),
            (200, {"events": [BARE], "next_before": None}),
        ],
        ("GET", f"/v1/events/{EVENT_ID}"): (200, EVENT),
    })
    data = {"id": 42, "total": 180}
    with tasker.Client(url) as c:
        sent = c.send_event("shop", "order.created", data, key="customer-7", id="order-42-created")
        assert isinstance(sent, tasker.Event)
        assert (sent.id, sent.namespace, sent.name, sent.key, sent.sender_id, sent.data) == (
            uuid.UUID(EVENT_ID), "shop", "order.created", "customer-7", "order-42-created", data
        )
        assert sent.received_at == datetime(2026, 11, 30, 9, 0, 0, 123456, tzinfo=timezone.utc)
        started, refused = sent.started
        assert isinstance(started, tasker.EventStart)
        assert (started.template, started.task_id, started.refused) == (
            "shop/fulfil@2", uuid.UUID(TASK_ID), None
        )
        assert refused.task_id is None and refused.refused.code == "forbidden"
        # A repeat answers the event stored the first time.
        assert c.send_event("shop", "order.created", data, id="order-42-created") == sent
        bare = c.send_event("shop", "order.viewed")
        assert (bare.key, bare.sender_id, bare.data, bare.started) == (None, None, {}, [])

        batch = c.send_events([
            {"namespace": "shop", "name": "order.created", "data": data, "id": "order-42-created"},
            {"namespace": "shop", "name": "order.created", "id": "order-42-created", "key": None},
            {"namespace": "shop", "name": "not a name"},
        ])
        assert isinstance(batch, tasker.EventsSent)
        assert (batch.created, batch.existing, batch.refused) == (1, 1, 1)
        assert [(r.index, r.status) for r in batch.results] == [
            (0, "created"), (1, "existing"), (2, "refused"),
        ]
        assert batch.results[1].task_ids == [uuid.UUID(TASK_ID)]
        # Left out by the server: UNSET (falsy), as the generated classes have it.
        assert batch.results[2].event_id is tasker.client.UNSET
        assert batch.results[2].error.code == "invalid_event_name"

        page = c.events("shop", "order.created", limit=1)
        assert isinstance(page, tasker.EventPage)
        assert page.events == [sent] and page.next_before == uuid.UUID(EVENT_ID)
        last = c.events(before=page.next_before)
        assert last.events == [bare] and last.next_before is None

        assert c.event(EVENT_ID) == sent
        with pytest.raises(tasker.NotFound) as missing:
            c.event(TASK_ID)
        assert missing.value.status == 404

    async def the_async_twin() -> None:
        async with tasker.AsyncClient(url) as c:
            assert (await c.event(uuid.UUID(EVENT_ID))) == sent
            assert (await c.events(namespace="shop")).events == [bare]
            assert (await c.send_events([{"namespace": "shop", "name": "x"}])) == batch
            assert (await c.send_event("shop", "order.viewed", {"a": 1})) == bare

    asyncio.run(the_async_twin())

    assert api.requests == [
        ("POST", "/v1/events", {"namespace": "shop", "name": "order.created", "data": data,
                                "key": "customer-7", "id": "order-42-created"}),
        ("POST", "/v1/events", {"namespace": "shop", "name": "order.created", "data": data,
                                "id": "order-42-created"}),
        ("POST", "/v1/events", {"namespace": "shop", "name": "order.viewed"}),
        ("POST", "/v1/events:batch", {"events": [
            {"namespace": "shop", "name": "order.created", "data": data,
             "id": "order-42-created"},
            {"namespace": "shop", "name": "order.created", "id": "order-42-created"},
            {"namespace": "shop", "name": "not a name"},
        ]}),
        ("GET", "/v1/events/log?namespace=shop&name=order.created&limit=1", None),
        ("GET", f"/v1/events/log?before={EVENT_ID}", None),
        ("GET", f"/v1/events/{EVENT_ID}", None),
        ("GET", f"/v1/events/{TASK_ID}", None),
        # The async client's.
        ("GET", f"/v1/events/{EVENT_ID}", None),
        ("GET", "/v1/events/log?namespace=shop", None),
        ("POST", "/v1/events:batch", {"events": [{"namespace": "shop", "name": "x"}]}),
        ("POST", "/v1/events", {"namespace": "shop", "name": "order.viewed", "data": {"a": 1}}),
    ]


def test_a_refused_event_raises_the_apis_error(
    recorder: tuple[str, type[Recorder]],  # noqa: F811
) -> None:
    url, api = recorder
    api.answers[("POST", "/v1/events")] = [
        (403, {"error": {"code": "forbidden", "message": "the token does not cover bank"}}),
        (400, {"error": {"code": "invalid_event_name", "message": "not a name"}}),
    ]
    with tasker.Client(url) as c:
        with pytest.raises(tasker.AuthError) as forbidden:
            c.send_event("bank", "order.created")
        assert (forbidden.value.status, forbidden.value.code) == (403, "forbidden")
        with pytest.raises(tasker.InvalidRequest) as invalid:
            c.send_event("shop", "not a name")
        assert (invalid.value.status, invalid.value.code) == (400, "invalid_event_name")


def test_start_controls_and_a_deadline_are_sent_as_the_api_takes_them_and_a_purged_key_raises(
    recorder: tuple[str, type[Recorder]],  # noqa: F811
) -> None:
    from client_stand_in import NS, SCHEDULED_TASK
    from datetime import timedelta

    url, api = recorder
    purged = {"error": {"code": "deduplicated", "message": f"task {TASK_ID} was purged",
                        "details": {"task_id": TASK_ID, "until": "2026-12-01T09:00:00Z"}}}
    api.answers.update({
        ("POST", "/v1/tasks"): [(201, SCHEDULED_TASK), (200, SCHEDULED_TASK), (409, purged),
                                (201, {**SCHEDULED_TASK, "deadline": {
                                    "within_ms": 90000, "action": "cancel", "at": None,
                                    "passed_at": None}})],
    })
    with tasker.Client(url) as c:
        debounce = {"key": "customer-7", "period": 5, "max": timedelta(minutes=1),
                    "mode": "trailing"}
        assert c.create_task(NS, "linear", {"value": 6}, debounce=debounce).state == "scheduled"
        c.create_task(NS, "linear", {"value": 6}, dedupe={"key": "invoice-1", "ttl": "24h"})
        with pytest.raises(tasker.Conflict) as held:
            c.create_task(NS, "linear", {"value": 6}, dedupe={"key": "invoice-1", "ttl": "24h"})
        assert held.value.code == "deduplicated"
        assert held.value.details == {"task_id": TASK_ID, "until": "2026-12-01T09:00:00Z"}
        deadline = {"within": timedelta(seconds=90), "action": "cancel"}
        limited = c.create_task(NS, "linear", {"value": 6}, deadline=deadline)
        assert limited.deadline is not None
        assert (limited.deadline.within_ms, str(limited.deadline.action)) == (90000, "cancel")
    bodies = [body for method, _, body in api.requests if method == "POST"]
    base = {"namespace": NS, "name": "linear", "context": {"value": 6}}
    assert bodies == [
        {**base, "debounce": {"key": "customer-7", "period": "5s", "max": "60s",
                              "mode": "trailing"}},
        {**base, "dedupe": {"key": "invoice-1", "ttl": "24h"}},
        {**base, "dedupe": {"key": "invoice-1", "ttl": "24h"}},
        {**base, "deadline": {"within": "90s", "action": "cancel"}},
    ]
