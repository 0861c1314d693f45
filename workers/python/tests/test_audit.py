"""The audit log's call (``audit``), sync and async, against the stand-in API of
``test_client``: the filters it sends in the query and the page it reads back (the security
suite, tests/slow/security/audit.rs, checks the rows a real orchestrator writes)."""

from __future__ import annotations

import asyncio
import uuid
from datetime import datetime, timedelta, timezone

import pytest

import tasker
import tasker.client
from client_stand_in import Recorder, recorder  # noqa: F401 (the fixture)

TASK_ID = "019a0000-0000-7000-8000-0000000000a1"
ENTRY = {
    "id": 42, "at": "2026-11-27T10:02:03.123456Z", "token_id": 7, "token_name": "ci",
    "method": "POST", "route": "/v1/tasks/{id}/cancel", "status": 200, "peer": "10.0.0.5",
    "namespaces": ["shop"], "task_id": TASK_ID, "target": {},
}
# A refusal without a token: the optional fields absent.
REFUSED = {
    "id": 41, "at": "2026-11-27T10:02:02Z", "method": "DELETE", "route": "/v1/tokens/{name}",
    "status": 401, "namespaces": [], "target": {"token": "ci"},
}


def test_the_audit_call_sends_its_filters_and_reads_a_page(
    recorder: tuple[str, type[Recorder]],  # noqa: F811
) -> None:
    url, api = recorder
    api.answers[("GET", "/v1/audit")] = [
        (200, {"entries": [ENTRY, REFUSED], "next_before": 41}),
        (200, {"entries": [], "next_before": None}),
        (403, {"error": {"code": "forbidden", "message": "this needs admin"}}),
    ]
    berlin = timezone(timedelta(hours=1))
    with tasker.Client(url) as c:
        page = c.audit(namespace="shop", token="ci", route="/v1/tasks/{id}/cancel",
                       method="POST", since=datetime(2026, 11, 27, 11, tzinfo=berlin),
                       until="2026-11-28T00:00:00Z", limit=2)
        assert page.next_before == 41
        first = page.entries[0]
        assert (first.id, first.at, first.token_id, first.token_name, first.method) == (
            42, datetime(2026, 11, 27, 10, 2, 3, 123456, tzinfo=timezone.utc), 7, "ci", "POST"
        )
        assert (first.route, first.status, first.peer, first.namespaces, first.task_id) == (
            "/v1/tasks/{id}/cancel", 200, "10.0.0.5", ["shop"], uuid.UUID(TASK_ID)
        )
        # A field the server left out is UNSET (falsy), as the generated classes have it.
        assert first.forwarded_for is tasker.client.UNSET and first.target.to_dict() == {}
        refused = page.entries[1]
        assert (refused.token_id, refused.token_name, refused.peer, refused.task_id) == (
            (tasker.client.UNSET,) * 4
        )
        assert (refused.status, refused.target.to_dict()) == (401, {"token": "ci"})
        assert c.audit(before=page.next_before).entries == []

    async def the_async_twin() -> None:
        async with tasker.AsyncClient(url) as c:
            with pytest.raises(tasker.AuthError) as refused:
                await c.audit()
            assert (refused.value.status, refused.value.code) == (403, "forbidden")

    asyncio.run(the_async_twin())
    assert [(m, p) for m, p, _ in api.requests] == [
        ("GET", "/v1/audit?namespace=shop&token=ci&route=%2Fv1%2Ftasks%2F%7Bid%7D%2Fcancel"
                "&method=POST&since=2026-11-27T10%3A00%3A00Z&until=2026-11-28T00%3A00%3A00Z"
                "&limit=2"),
        ("GET", "/v1/audit?before=41"),
        ("GET", "/v1/audit"),
    ]
