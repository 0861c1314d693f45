"""The webhooks and alert rules calls (``put_webhook``, ``list_webhooks``, ``get_webhook``,
``delete_webhook``; ``put_alert``, ``list_alerts``, ``get_alert``, ``delete_alert``), sync and
async, against the stand-in API (client_stand_in): the requests the contract describes and the
answers read back (tests/fast/templates/webhooks.rs and the alerts suites check what a real
orchestrator does with them)."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta, timezone

import pytest

import tasker
import tasker.client
from client_stand_in import Recorder, recorder  # noqa: F401 (the fixture)

TIMES = {"created_at": "2026-11-30T09:00:00.123456Z", "updated_at": "2026-11-30T09:00:00.123456Z"}
# A generic webhook as a GET shows it: never its secret.
ORDERS = {
    "name": "orders", "namespace": "shop", "format": "generic", "event": None, "key": "/customer",
    "id": None, "tolerance_seconds": 300, "received": 2,
    "last_received_at": "2026-11-30T10:00:00Z", **TIMES,
}
GITHUB = {
    "name": "gh", "namespace": "ci", "format": "github", "event": "github.any", "key": None,
    "id": "/head_commit/id", "tolerance_seconds": 120, "received": 0, "last_received_at": None,
    **TIMES,
}
MADE = "whk_0123456789abcdef0123456789abcdef"
# An alert rule as a GET shows it: what it last did, never its secret; `when` without the
# fields it was saved without.
CHARGES = {
    "name": "charges", "namespace": "shop",
    "when": {"kind": "failures", "template": "charge", "count": 5, "within": "1m"},
    "sink": {"kind": "webhook", "url": "https://ops.example.com/tasker"},
    "suppress_seconds": 900, "state": "firing", "observed": 6,
    "checked_at": "2026-11-30T10:00:01Z", "fired_at": "2026-11-30T10:00:00Z",
    "resolved_at": None, "sent": 1, "failed": 0, "suppressed": 2, "last_error": None, **TIMES,
}
STUCK = {
    **CHARGES, "name": "stuck", "when": {"kind": "steps_waiting", "longer_than": "10m"},
    "sink": {"kind": "slack", "url": "https://hooks.slack.com/services/T/B/X"},
    "suppress_seconds": 0, "state": "ok", "observed": None, "checked_at": None, "fired_at": None,
    "sent": 0, "suppressed": 0,
}
LATE = {
    **STUCK, "name": "late", "when": {"kind": "deadline_passed"},
    "sink": {"kind": "email", "to": ["ops@example.com", "oncall@example.com"]},
    "suppress_seconds": 900, "last_error": "not checked: the token that saved it was revoked",
}


def _error(code: str, message: str, details: object = None) -> dict[str, object]:
    return {"error": {"code": code, "message": message, "details": details}}


def test_the_webhooks_calls_send_the_contracts_requests_and_read_its_answers(
    recorder: tuple[str, type[Recorder]],  # noqa: F811
) -> None:
    url, api = recorder
    api.answers.update({
        # Made (201, with the secret Tasker made, this once), then replaced (200: none).
        ("PUT", "/v1/webhooks/orders"): [(201, {**ORDERS, "secret": MADE}), (200, ORDERS)],
        ("PUT", "/v1/webhooks/gh"): (201, GITHUB),
        ("GET", "/v1/webhooks"): (200, {"webhooks": [GITHUB, ORDERS]}),
        ("GET", "/v1/webhooks/orders"): (200, ORDERS),
        ("DELETE", "/v1/webhooks/orders"): [
            (204, None), (404, _error("webhook_not_found", "no webhook orders")),
        ],
    })
    with tasker.Client(url) as c:
        made = c.put_webhook("orders", {"namespace": "shop", "key": "/customer", "secret": None})
        assert isinstance(made, tasker.client.Webhook)
        assert made.secret == MADE
        assert (made.name, made.namespace, made.format_, made.key, made.event, made.id) == (
            "orders", "shop", "generic", "/customer", None, None
        )
        assert made.created_at == datetime(2026, 11, 30, 9, 0, 0, 123456, tzinfo=timezone.utc)
        # Replaced: the answer shows no secret (left out by the server: UNSET, falsy).
        again = c.put_webhook("orders", {"namespace": "shop", "key": "/customer", "tolerance": 90})
        assert again.secret is tasker.client.UNSET and not again.secret
        gh = c.put_webhook("gh", {
            "namespace": "ci", "format": "github", "secret": "s3cret-s3cret-s3cret",
            "event": "github.any", "id": "/head_commit/id", "tolerance": timedelta(minutes=2),
        })
        assert (gh.format_, gh.tolerance_seconds, gh.last_received_at) == ("github", 120, None)

        listed = c.list_webhooks()
        assert [w.name for w in listed] == ["gh", "orders"]
        shown = c.get_webhook("orders")
        assert shown == again
        assert (shown.received, shown.last_received_at) == (
            2, datetime(2026, 11, 30, 10, tzinfo=timezone.utc)
        )
        assert c.delete_webhook("orders") is None
        with pytest.raises(tasker.NotFound) as gone:
            c.delete_webhook("orders")
        assert (gone.value.status, gone.value.code) == (404, "webhook_not_found")

    async def the_async_twin() -> None:
        async with tasker.AsyncClient(url) as c:
            assert (await c.list_webhooks()) == listed
            assert (await c.get_webhook("orders")) == shown
            assert (await c.put_webhook("gh", {"namespace": "ci", "format": "github"})) == gh
            with pytest.raises(tasker.NotFound):
                await c.delete_webhook("orders")

    asyncio.run(the_async_twin())

    assert api.requests == [
        ("PUT", "/v1/webhooks/orders", {"namespace": "shop", "key": "/customer"}),
        ("PUT", "/v1/webhooks/orders", {"namespace": "shop", "key": "/customer",
                                        "tolerance": "90s"}),
        ("PUT", "/v1/webhooks/gh", {"namespace": "ci", "format": "github",
                                    "secret": "s3cret-s3cret-s3cret", "event": "github.any",
                                    "id": "/head_commit/id", "tolerance": "120s"}),
        ("GET", "/v1/webhooks", None),
        ("GET", "/v1/webhooks/orders", None),
        ("DELETE", "/v1/webhooks/orders", None),
        ("DELETE", "/v1/webhooks/orders", None),
        # The async client's.
        ("GET", "/v1/webhooks", None),
        ("GET", "/v1/webhooks/orders", None),
        ("PUT", "/v1/webhooks/gh", {"namespace": "ci", "format": "github"}),
        ("DELETE", "/v1/webhooks/orders", None),
    ]


def test_the_alerts_calls_send_each_sink_as_the_api_takes_it_and_read_its_answers(
    recorder: tuple[str, type[Recorder]],  # noqa: F811
) -> None:
    url, api = recorder
    invalid = _error("invalid_alert", "within: at most 1d", {"field": "when.within",
                                                             "problem": "at most 1d"})
    api.answers.update({
        ("PUT", "/v1/alerts/charges"): [(201, {**CHARGES, "secret": MADE}), (200, CHARGES),
                                        (400, invalid)],
        ("PUT", "/v1/alerts/stuck"): (201, STUCK),
        ("PUT", "/v1/alerts/late"): (201, LATE),
        ("GET", "/v1/alerts"): (200, {"alerts": [CHARGES, LATE, STUCK]}),
        ("GET", "/v1/alerts/charges"): (200, CHARGES),
        ("GET", "/v1/alerts/gone"): (404, _error("alert_not_found", "no alert rule gone")),
        ("DELETE", "/v1/alerts/charges"): (204, None),
        ("DELETE", "/v1/alerts/gone"): (404, _error("alert_not_found", "no alert rule gone")),
    })
    webhook_sink = {"kind": "webhook", "url": "https://ops.example.com/tasker"}
    with tasker.Client(url) as c:
        made = c.put_alert("charges", {
            "namespace": "shop", "sink": webhook_sink, "suppress": None,
            "when": {"kind": "failures", "template": "charge", "count": 5, "within": 60,
                     "longer_than": None},
        })
        assert isinstance(made, tasker.client.Alert)
        assert made.secret == MADE
        assert isinstance(made.sink, tasker.client.AlertWebhookSink)
        assert (made.sink.kind, made.sink.url) == ("webhook", webhook_sink["url"])
        assert isinstance(made.when, tasker.client.AlertCondition)
        assert (made.when.kind, made.when.template, made.when.count, made.when.within) == (
            "failures", "charge", 5, "1m"
        )
        # Not saved with one: UNSET (falsy), as the server leaves it out.
        assert made.when.longer_than is tasker.client.UNSET
        assert (made.state, made.observed, made.suppress_seconds) == ("firing", 6, 900)
        assert made.checked_at == datetime(2026, 11, 30, 10, 0, 1, tzinfo=timezone.utc)
        # A given secret (a webhook sink's) is sent; the answer shows none.
        replaced = c.put_alert("charges", {
            "namespace": "shop", "when": {"kind": "failures"}, "sink": webhook_sink,
            "secret": "a-secret-of-our-own", "suppress": timedelta(minutes=15),
        })
        assert replaced.secret is tasker.client.UNSET
        stuck = c.put_alert("stuck", {
            "namespace": "shop", "sink": {"kind": "slack", "url": STUCK["sink"]["url"]},
            "when": {"kind": "steps_waiting", "longer_than": timedelta(minutes=10)}, "suppress": 0,
        })
        assert isinstance(stuck.sink, tasker.client.AlertSlackSink)
        assert (stuck.when.longer_than, stuck.checked_at, stuck.observed) == ("10m", None, None)
        late = c.put_alert("late", {
            "namespace": "shop", "when": {"kind": "deadline_passed"},
            "sink": {"kind": "email", "to": ["ops@example.com", "oncall@example.com"]},
        })
        assert isinstance(late.sink, tasker.client.AlertEmailSink)
        assert late.sink.to == ["ops@example.com", "oncall@example.com"]
        assert late.last_error == "not checked: the token that saved it was revoked"

        listed = c.list_alerts()
        assert [a.name for a in listed] == ["charges", "late", "stuck"]
        assert listed == [replaced, late, stuck]
        shown = c.get_alert("charges")
        assert shown == replaced
        # An answer's condition and sink are saved again as they are.
        with pytest.raises(tasker.InvalidRequest) as refused:
            c.put_alert("charges", {"namespace": "shop", "when": shown.when, "sink": shown.sink})
        assert (refused.value.status, refused.value.code) == (400, "invalid_alert")
        assert refused.value.details == {"field": "when.within", "problem": "at most 1d"}
        with pytest.raises(tasker.NotFound) as missing:
            c.get_alert("gone")
        assert (missing.value.status, missing.value.code) == (404, "alert_not_found")
        assert c.delete_alert("charges") is None

    async def the_async_twin() -> None:
        async with tasker.AsyncClient(url) as c:
            assert (await c.list_alerts()) == listed
            assert (await c.get_alert("charges")) == shown
            assert (await c.put_alert("late", {"namespace": "shop", "when": late.when,
                                               "sink": late.sink})) == late
            await c.delete_alert("charges")
            with pytest.raises(tasker.NotFound) as gone:
                await c.delete_alert("gone")
            assert gone.value.code == "alert_not_found"

    asyncio.run(the_async_twin())

    email = {"kind": "email", "to": ["ops@example.com", "oncall@example.com"]}
    assert api.requests == [
        ("PUT", "/v1/alerts/charges", {
            "namespace": "shop", "sink": webhook_sink,
            "when": {"kind": "failures", "template": "charge", "count": 5, "within": "60s"},
        }),
        ("PUT", "/v1/alerts/charges", {
            "namespace": "shop", "when": {"kind": "failures"}, "sink": webhook_sink,
            "secret": "a-secret-of-our-own", "suppress": "900s",
        }),
        ("PUT", "/v1/alerts/stuck", {
            "namespace": "shop", "when": {"kind": "steps_waiting", "longer_than": "600s"},
            "sink": {"kind": "slack", "url": STUCK["sink"]["url"]}, "suppress": "0s",
        }),
        ("PUT", "/v1/alerts/late", {"namespace": "shop", "when": {"kind": "deadline_passed"},
                                    "sink": email}),
        ("GET", "/v1/alerts", None),
        ("GET", "/v1/alerts/charges", None),
        ("PUT", "/v1/alerts/charges", {
            "namespace": "shop", "sink": webhook_sink,
            "when": {"kind": "failures", "template": "charge", "count": 5, "within": "1m"},
        }),
        ("GET", "/v1/alerts/gone", None),
        ("DELETE", "/v1/alerts/charges", None),
        # The async client's.
        ("GET", "/v1/alerts", None),
        ("GET", "/v1/alerts/charges", None),
        ("PUT", "/v1/alerts/late", {"namespace": "shop", "when": {"kind": "deadline_passed"},
                                    "sink": email}),
        ("DELETE", "/v1/alerts/charges", None),
        ("DELETE", "/v1/alerts/gone", None),
    ]


def test_the_formats_and_kinds_are_the_contracts() -> None:
    assert tasker.client.WEBHOOK_FORMATS == ("generic", "github", "stripe")
    assert sorted(tasker.client.ALERT_KINDS) == [
        "dead_letters", "deadline_passed", "failures", "schedule_skipped", "steps_waiting",
    ]
