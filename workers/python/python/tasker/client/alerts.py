"""Alert rules (``/v1/alerts``, docs/events.md "Alerts out"): a condition of one namespace watched
every second, and a sink told once when it fires and once when it clears. Their calls, saving
(an admin token), listing, showing (with what each last did) and removing rules, and the methods
both clients carry; the answer types, :class:`Alert`, :class:`AlertCondition` and the sinks
(:data:`AlertSink`), are generated from the API's document. Semantics follow the Rust client
(tasker-client/src/alerts.rs)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, cast

from ._api.api.events import delete_alert as delete_op
from ._api.api.events import get_alert as show
from ._api.api.events import list_alerts as list_op
from ._api.api.events import put_alert as put
from ._api.models import PutAlert
from ._calls import Call, _AsGiven, _call, _no_answer, duration
from .values import JSON, Alert, AlertList

#: The durations of a rule's condition (``when``), written as :func:`duration` writes them.
_WINDOWS = ("within", "longer_than")


def _fields(value: Any) -> dict[str, Any]:
    """A part of a rule as a dict, ``None`` left out: as given, or an answer's (``alert.when``,
    ``alert.sink``) to save it again."""
    given = value.to_dict() if hasattr(value, "to_dict") else dict(value)
    return {k: v for k, v in given.items() if v is not None}


def _alert_body(rule: Mapping[str, JSON]) -> dict[str, Any]:
    """A rule as the API takes it: ``None`` left out, ``suppress`` and the condition's windows
    as :func:`~tasker.client._calls.duration` writes them."""
    body = {k: v for k, v in rule.items() if v is not None}
    if "suppress" in body:
        body["suppress"] = duration(body["suppress"])
    if "when" in body:
        when = _fields(body["when"])
        body["when"] = {k: duration(v) if k in _WINDOWS else v for k, v in when.items()}
    if "sink" in body:
        body["sink"] = _fields(body["sink"])
    return body


def list_alerts() -> Call[list[Alert]]:
    return _call(list_op._get_kwargs(), lambda data: AlertList.from_dict(data).alerts)


def get_alert(name: str) -> Call[Alert]:
    return _call(show._get_kwargs(name), Alert.from_dict)


def put_alert(name: str, rule: Mapping[str, JSON]) -> Call[Alert]:
    body = cast(PutAlert, _AsGiven(_alert_body(rule)))
    return _call(put._get_kwargs(name, body=body), Alert.from_dict)


def delete_alert(name: str) -> Call[None]:
    return _no_answer(delete_op._get_kwargs(name))


_LIST_ALERTS = """Every alert rule of the namespaces the token covers, by name (``GET
        /v1/alerts``; the API takes no filter), each with what it last did: ``state``
        (``"firing"`` or ``"ok"``), what it ``observed`` at its last check (``checked_at``),
        ``fired_at``, ``resolved_at``, its notices ``sent``, ``failed`` and ``suppressed``, and
        ``last_error`` (why the last delivery failed, or why the rule is not checked). Never a
        secret."""

_GET_ALERT = """The alert rule ``name`` and what it last did, without its secret. None raises
        :class:`~tasker.NotFound` ``alert_not_found``; one of a namespace the token does not
        cover :class:`~tasker.AuthError` ``forbidden``."""

_PUT_ALERT = """Creates the alert rule ``name`` (1-128 ASCII letters, digits, ``_``, ``-`` and
        ``.``), or replaces the whole of it (what it last did stays, and its webhook sink's
        secret unless a new one is given), and returns it as stored; it is checked within a
        second. ``rule`` is a dict of the API's fields (``None`` values left out):

        - ``namespace``: the namespace it watches;
        - ``when``: ``{"kind": ...}`` (one of :data:`~tasker.client.ALERT_KINDS`: ``failures``,
          ``deadline_passed``, ``steps_waiting``, ``schedule_skipped``, ``dead_letters``) and
          optionally ``count`` (1 by default), ``within`` (the window, ``"5m"`` by default, at
          most a day), ``longer_than`` (``steps_waiting``: ``"5m"`` by default), ``template``
          (``failures``, ``deadline_passed``) or ``schedule`` (``schedule_skipped``);
        - ``sink``: ``{"kind": "webhook", "url": ...}`` (the notice as JSON, signed as Tasker's
          generic webhooks are), ``{"kind": "slack", "url": ...}`` or ``{"kind": "email", "to":
          [addresses]}`` (1-20, through the orchestrators' SMTP server);
        - ``secret`` (a webhook sink's, 16-256 characters) and ``suppress`` (how long another
          firing notice is held back, ``"15m"`` by default, ``"0s"`` to a day).

        Durations are strings (``"1m"``), seconds or ``timedelta`` values; an answer's ``when``
        and ``sink`` (``alert.when``) are taken too. Without ``secret``, a new rule with a
        webhook sink gets one Tasker makes: it is the answer's ``secret``, shown this once (no
        call shows it again; ``UNSET`` in every other answer). It takes an admin token covering
        the namespace (:class:`~tasker.AuthError` ``forbidden`` otherwise, also for a name
        another namespace's rule holds); :class:`~tasker.InvalidRequest` ``invalid_alert``
        (``details``: ``field`` and ``problem``; an email sink without an SMTP server is refused
        at ``sink.kind``)."""

_DELETE_ALERT = """Removes the alert rule ``name``: it is checked no more, and its notices not
        sent yet go. It takes an admin token covering its namespace; none raises
        :class:`~tasker.NotFound` ``alert_not_found``."""


class AlertMethods:
    """The alert rules calls of :class:`~tasker.Client`."""

    _run: Callable[[Call[Any]], Any]

    def list_alerts(self) -> list[Alert]:
        found: list[Alert] = self._run(list_alerts())
        return found

    def get_alert(self, name: str) -> Alert:
        found: Alert = self._run(get_alert(name))
        return found

    def put_alert(self, name: str, rule: Mapping[str, JSON]) -> Alert:
        saved: Alert = self._run(put_alert(name, rule))
        return saved

    def delete_alert(self, name: str) -> None:
        self._run(delete_alert(name))

    list_alerts.__doc__ = _LIST_ALERTS
    get_alert.__doc__ = _GET_ALERT
    put_alert.__doc__ = _PUT_ALERT
    delete_alert.__doc__ = _DELETE_ALERT


class AsyncAlertMethods:
    """The alert rules calls of :class:`~tasker.AsyncClient`."""

    _run: Callable[[Call[Any]], Awaitable[Any]]

    async def list_alerts(self) -> list[Alert]:
        found: list[Alert] = await self._run(list_alerts())
        return found

    async def get_alert(self, name: str) -> Alert:
        found: Alert = await self._run(get_alert(name))
        return found

    async def put_alert(self, name: str, rule: Mapping[str, JSON]) -> Alert:
        saved: Alert = await self._run(put_alert(name, rule))
        return saved

    async def delete_alert(self, name: str) -> None:
        await self._run(delete_alert(name))

    list_alerts.__doc__ = _LIST_ALERTS
    get_alert.__doc__ = _GET_ALERT
    put_alert.__doc__ = _PUT_ALERT
    delete_alert.__doc__ = _DELETE_ALERT
