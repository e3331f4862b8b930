"""The courier: a host's task that sends what the outbox holds (engine/runtime/outboxing.py writes it with each
step), at least once, across restarts.

Each round takes the due rows (a webhook delivery, or a person's due email notices) for a while (`taken_until`),
so two hosts never send a row at the same moment and a host killed mid-send leaves it to be taken again; sends
them; and writes how it went. A failure is tried again after `JR2_NOTIFY_RETRY_SECONDS`, doubling each time up to
an hour, until `JR2_NOTIFY_TRIES` tries; then the row is marked failed, and the Console's "send again" puts it
back. A receiver that got a webhook whose answer was lost gets it again with the same idempotency key.

The courier wakes when a step commits (`wake()`), and otherwise looks every `JR2_SCAN_SECONDS`.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from collections import defaultdict
from typing import Any

import httpx
from django.conf import settings
from django.core.mail import get_connection
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from engine.models import Delivery, EmailNotice, WebhookEndpoint
from engine.runtime import links, mailing, webhooks
from engine.runtime.waiting import wait_up_to

__all__ = [
    "Courier",
    "sync_endpoints",
    "backoff",
    "take_deliveries",
    "take_notices",
    "delivered",
    "letter",
    "mailed",
    "TAKE_SECONDS",
]

log = logging.getLogger("engine.runtime.courier")

#: How long a host holds a row it is sending; past it another host may take it again.
TAKE_SECONDS = 60.0
BATCH = 25
TIMEOUT = 10.0


def backoff(tries: int) -> float:
    """The wait after the `tries`-th failed try: the first wait, doubled for each try before, at most an hour."""
    first = float(getattr(settings, "JR2_NOTIFY_RETRY_SECONDS", 5.0) or 5.0)
    return min(3600.0, first * 2 ** max(0, tries - 1))


def sync_endpoints() -> None:
    """Keep the endpoints of `JR2_WEBHOOKS` as rows (source "settings"): new ones added, changed ones updated,
    ones no longer listed made inactive. The admin's endpoints are left alone."""
    listed = webhooks.endpoints_in(getattr(settings, "JR2_WEBHOOKS", None))
    source = WebhookEndpoint.Source.SETTINGS
    for endpoint in listed:
        fields = {"secret": endpoint.secret, "events": list(endpoint.events), "slack": endpoint.slack, "active": True}
        try:
            with transaction.atomic():
                WebhookEndpoint.objects.update_or_create(source=source, url=endpoint.url, defaults=fields)
        except IntegrityError:  # another host of the fleet made it at the same moment: it is there now
            WebhookEndpoint.objects.filter(source=source, url=endpoint.url).update(**fields)
    WebhookEndpoint.objects.filter(source=source).exclude(url__in=[e.url for e in listed]).update(active=False)


def _free(now: dt.datetime) -> Q:
    return Q(taken_until=None) | Q(taken_until__lt=now)


def take_deliveries(limit: int = BATCH) -> list[Delivery]:
    """Due webhook deliveries, each taken by a compare-and-set (of two hosts, one gets it)."""
    now = timezone.now()
    due = Delivery.objects.filter(_free(now), status=Delivery.Status.PENDING, next_try__lte=now, endpoint__active=True)
    taken = [
        pk
        for pk in due.order_by("next_try", "id").values_list("id", flat=True)[:limit]
        if Delivery.objects.filter(_free(now), pk=pk, status=Delivery.Status.PENDING).update(
            taken_until=now + dt.timedelta(seconds=TAKE_SECONDS)
        )
    ]
    return list(Delivery.objects.filter(pk__in=taken).select_related("endpoint").order_by("id"))


def delivered(pk: int, code: int | None, error: str) -> None:
    """How one send went: delivered on a 2xx, else tried again later (or marked failed after the last try)."""
    row = Delivery.objects.get(pk=pk)
    now = timezone.now()
    row.tries += 1
    row.last_code = code
    row.last_error = error[:2000]
    row.taken_until = None
    if code is not None and 200 <= code < 300:
        row.status, row.delivered_at, row.last_error = Delivery.Status.DELIVERED, now, ""
    elif row.tries >= int(getattr(settings, "JR2_NOTIFY_TRIES", 12)):
        row.status = Delivery.Status.FAILED
    else:
        row.next_try = now + dt.timedelta(seconds=backoff(row.tries))
    row.save(update_fields=["tries", "last_code", "last_error", "taken_until", "status", "delivered_at", "next_try"])


def take_notices(limit: int = BATCH) -> list[list[EmailNotice]]:
    """Due email notices, each taken by a compare-and-set, as the messages they make: one per notice, or with
    `JR2_NOTIFY_DIGEST_MINUTES` one per person (all their notices due by now: one message per period)."""
    now = timezone.now()
    due = EmailNotice.objects.filter(_free(now), status=EmailNotice.Status.PENDING, next_try__lte=now)
    taken = [
        pk
        for pk in due.order_by("next_try", "id").values_list("id", flat=True)[:limit]
        if EmailNotice.objects.filter(_free(now), pk=pk, status=EmailNotice.Status.PENDING).update(
            taken_until=now + dt.timedelta(seconds=TAKE_SECONDS)
        )
    ]
    rows = list(EmailNotice.objects.filter(pk__in=taken).select_related("user", "record").order_by("id"))
    if not float(getattr(settings, "JR2_NOTIFY_DIGEST_MINUTES", 0) or 0) > 0:
        return [[row] for row in rows]
    by_user: dict[int, list[EmailNotice]] = defaultdict(list)
    for row in rows:
        by_user[row.user_id].append(row)
    return list(by_user.values())


def letter(notices: list[EmailNotice]) -> Any:
    """The message for one person's notices, with a fresh one-tap link per Gate still open; None when every Gate
    closed before its notice went out (those notices are marked so)."""
    open_ones = [n for n in notices if n.record.closed_at is None]
    closed = [n.pk for n in notices if n.record.closed_at is not None]
    if closed:
        EmailNotice.objects.filter(pk__in=closed).update(
            status=EmailNotice.Status.SKIPPED, taken_until=None, last_error="the Gate closed before it was sent"
        )
    if not open_ones:
        return None
    user = open_ones[0].user
    gates = [(n.record, links.link_url(n.record, links.issue(user, n.record))) for n in open_ones]
    return mailing.compose(user, gates)


def mailed(pks: list[int], error: str) -> None:
    now = timezone.now()
    for row in EmailNotice.objects.filter(pk__in=pks):
        row.tries += 1
        row.taken_until = None
        row.last_error = error[:2000]
        if not error:
            row.status, row.sent_at = EmailNotice.Status.DELIVERED, now
        elif row.tries >= int(getattr(settings, "JR2_NOTIFY_TRIES", 12)):
            row.status = EmailNotice.Status.FAILED
        else:
            row.next_try = now + dt.timedelta(seconds=backoff(row.tries))
        row.save(update_fields=["tries", "taken_until", "last_error", "status", "sent_at", "next_try"])


class Courier:
    """One host's sender of the outbox (see the module docstring)."""

    def __init__(self, host: Any) -> None:
        self.host = host
        self._wake = asyncio.Event()
        self.scan_seconds = min(1.0, float(getattr(host, "scan_seconds", 1.0)))

    def wake(self) -> None:
        self._wake.set()

    async def prepare(self) -> None:
        """Before the host writes any step: the endpoints of `JR2_WEBHOOKS` are rows, so a step's outbox finds
        them (a web host writes runs' first steps too)."""
        try:
            await self.host.db(sync_endpoints)
        except ValueError as err:
            log.error("JR2_WEBHOOKS: %s; no endpoint of the setting is used", err)

    async def run(self) -> None:
        async with httpx.AsyncClient(timeout=TIMEOUT, follow_redirects=False) as client:
            while True:
                try:
                    busy = await self.round(client)
                except asyncio.CancelledError:
                    raise
                except Exception:
                    log.exception("the courier's round failed; trying again")
                    busy = False
                if busy:
                    continue
                await wait_up_to(self._wake, self.scan_seconds)
                self._wake.clear()

    async def round(self, client: httpx.AsyncClient) -> bool:
        """Send what is due now; whether there was anything."""
        rows = await self.host.db(take_deliveries)
        if rows:
            await asyncio.gather(*(self._post(client, row) for row in rows))
        notices = await self.host.db(take_notices)
        for batch in notices:
            await self._mail(batch)
        return bool(rows or notices)

    async def _post(self, client: httpx.AsyncClient, row: Delivery) -> None:
        body = row.body.encode()
        head = webhooks.headers(row.endpoint.secret, body, row.delivery_id, row.key, row.kind)
        code: int | None = None
        error = ""
        try:
            response = await client.post(row.endpoint.url, content=body, headers=head)
            code = response.status_code
            if not 200 <= code < 300:
                error = f"the endpoint answered {code}"
        except httpx.HTTPError as err:
            error = f"{type(err).__name__}: {err}" or type(err).__name__
        await self.host.db(delivered, row.pk, code, error)

    async def _mail(self, notices: list[EmailNotice]) -> None:
        pks = [n.pk for n in notices]
        try:
            message = await self.host.db(letter, notices)
        except Exception as err:
            log.exception("an email could not be made")
            await self.host.db(mailed, pks, f"it could not be made: {err}")
            return
        if message is None:
            return
        error = ""
        try:
            await asyncio.to_thread(_send, message)
        except Exception as err:
            error = f"{type(err).__name__}: {err}"
        still = [n.pk for n in notices if n.record.closed_at is None]
        await self.host.db(mailed, still, error)


def _send(message: Any) -> None:
    with get_connection(timeout=TIMEOUT) as connection:
        message.connection = connection
        message.send(fail_silently=False)
