"""Webhooks (``/v1/webhooks``, docs/events.md "Webhooks in"): URLs another service (GitHub,
Stripe, your own) posts to with no token, each request it signed with the webhook's secret an
event of the webhook's namespace. Their calls, saving, listing, showing and removing webhooks,
and the methods both clients carry; the answer type, :class:`Webhook`, is generated from the
API's document. The inbound ``POST /v1/webhooks/{name}`` is the sender's, not the client's.
Semantics follow the Rust client (tasker-client/src/webhooks.rs)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, cast

from ._api.api.events import delete_webhook as delete_op
from ._api.api.events import get_webhook as show
from ._api.api.events import list_webhooks as list_op
from ._api.api.events import put_webhook as put
from ._api.models import PutWebhook
from ._calls import Call, _AsGiven, _call, _no_answer, duration
from .values import JSON, Webhook, WebhookList


def _webhook_body(definition: Mapping[str, JSON]) -> dict[str, Any]:
    """A webhook's definition as the API takes it: ``None`` left out, ``tolerance`` as
    :func:`~tasker.client._calls.duration` writes it."""
    body = {k: v for k, v in definition.items() if v is not None}
    if "tolerance" in body:
        body["tolerance"] = duration(body["tolerance"])
    return body


def list_webhooks() -> Call[list[Webhook]]:
    return _call(list_op._get_kwargs(), lambda data: WebhookList.from_dict(data).webhooks)


def get_webhook(name: str) -> Call[Webhook]:
    return _call(show._get_kwargs(name), Webhook.from_dict)


def put_webhook(name: str, definition: Mapping[str, JSON]) -> Call[Webhook]:
    body = cast(PutWebhook, _AsGiven(_webhook_body(definition)))
    return _call(put._get_kwargs(name, body=body), Webhook.from_dict)


def delete_webhook(name: str) -> Call[None]:
    return _no_answer(delete_op._get_kwargs(name))


_LIST_WEBHOOKS = """Every webhook of the namespaces the token covers, by name (``GET
        /v1/webhooks``; the API takes no filter): each one's ``namespace``, ``format_``,
        ``event``, ``key`` and ``id`` (``None`` when the format's default is used),
        ``tolerance_seconds``, and the requests it turned into events (``received``,
        ``last_received_at``). Never a secret."""

_GET_WEBHOOK = """The webhook ``name``, without its secret. None raises
        :class:`~tasker.NotFound` ``webhook_not_found``; one of a namespace the token does not
        cover :class:`~tasker.AuthError` ``forbidden``."""

_PUT_WEBHOOK = """Creates the webhook ``name`` (1-128 ASCII letters, digits, ``_``, ``-`` and
        ``.``: the last part of its URL, ``POST /v1/webhooks/{name}``), or replaces the whole of
        it (its counts stay, and its secret unless a new one is given), and returns it as
        stored. ``definition`` is a dict of the API's fields (``None`` values left out):
        ``namespace`` (its events go there) and optionally ``format`` (``"generic"``, the
        default, ``"github"`` or ``"stripe"``: how requests are signed and which event each
        makes), ``secret`` (16-256 characters; Stripe's ``whsec_...`` as Stripe shows it),
        ``event`` (a fixed event name), ``key`` and ``id`` (JSON pointers into the body) and
        ``tolerance`` (the replay window, 1s to 1h: ``"5m"`` by default, or seconds or a
        ``timedelta``).

        Without ``secret``, a new webhook gets one Tasker makes: it is the answer's ``secret``,
        shown this once (no call shows it again; ``UNSET`` in every other answer). Each request
        is judged with the token that saved it. Raises :class:`~tasker.InvalidRequest`
        ``invalid_webhook`` (``details``: ``field`` and ``problem``), and
        :class:`~tasker.AuthError` ``forbidden`` for a namespace the token does not cover (or a
        name another namespace's webhook holds)."""

_DELETE_WEBHOOK = """Removes the webhook ``name``: its URL answers ``404 webhook_not_found`` from
        now on. None raises :class:`~tasker.NotFound` ``webhook_not_found``."""


class WebhookMethods:
    """The webhooks calls of :class:`~tasker.Client`."""

    _run: Callable[[Call[Any]], Any]

    def list_webhooks(self) -> list[Webhook]:
        found: list[Webhook] = self._run(list_webhooks())
        return found

    def get_webhook(self, name: str) -> Webhook:
        found: Webhook = self._run(get_webhook(name))
        return found

    def put_webhook(self, name: str, definition: Mapping[str, JSON]) -> Webhook:
        saved: Webhook = self._run(put_webhook(name, definition))
        return saved

    def delete_webhook(self, name: str) -> None:
        self._run(delete_webhook(name))

    list_webhooks.__doc__ = _LIST_WEBHOOKS
    get_webhook.__doc__ = _GET_WEBHOOK
    put_webhook.__doc__ = _PUT_WEBHOOK
    delete_webhook.__doc__ = _DELETE_WEBHOOK


class AsyncWebhookMethods:
    """The webhooks calls of :class:`~tasker.AsyncClient`."""

    _run: Callable[[Call[Any]], Awaitable[Any]]

    async def list_webhooks(self) -> list[Webhook]:
        found: list[Webhook] = await self._run(list_webhooks())
        return found

    async def get_webhook(self, name: str) -> Webhook:
        found: Webhook = await self._run(get_webhook(name))
        return found

    async def put_webhook(self, name: str, definition: Mapping[str, JSON]) -> Webhook:
        saved: Webhook = await self._run(put_webhook(name, definition))
        return saved

    async def delete_webhook(self, name: str) -> None:
        await self._run(delete_webhook(name))

    list_webhooks.__doc__ = _LIST_WEBHOOKS
    get_webhook.__doc__ = _GET_WEBHOOK
    put_webhook.__doc__ = _PUT_WEBHOOK
    delete_webhook.__doc__ = _DELETE_WEBHOOK
