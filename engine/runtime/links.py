"""One-tap links: a link in a Gate email that opens that Gate's answer page without a password.

A link is signed (Django's signing, with the secret key), names one opening of one Gate (its inbox record) and one
user, and is kept only as a hash. It holds until the Gate closes, or `JR2_LINK_HOURS` after it was made, whichever
comes first; its user must still be active and still be one the Gate is assigned to. Every use is logged.

    token = issue(user, record)              # the token in the link (the only place it is ever written)
    url = link_url(record, token)            # <JR2_PUBLIC_URL>/gates/<record id>/link/<token>/
    found = redeem(token, record_id)         # Redeemed(link, why, gone): why is "" when it may be used now
"""

from __future__ import annotations

import datetime as dt
import secrets
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core import signing
from django.utils import timezone

from engine.models import GateLink, GateLinkUse, GateRecord, Run
from engine.outbox import digest
from engine.runtime.assignment import assigned_to
from engine.runtime.outboxing import public_url

__all__ = ["issue", "link_url", "redeem", "Redeemed", "log_use", "ANSWER_PERMISSION", "SALT"]

SALT = "jr2.gate-link"
ANSWER_PERMISSION = "engine.answer_gate"


def issue(user: Any, record: GateRecord, now: dt.datetime | None = None) -> str:
    """A new link's token for `user` and this opening of a Gate; only its hash is stored."""
    now = now or timezone.now()
    hours = float(getattr(settings, "JR2_LINK_HOURS", 72) or 72)
    token = signing.dumps([record.pk, user.pk, secrets.token_urlsafe(24)], salt=SALT)
    GateLink.objects.create(
        user=user, record=record, key_hash=digest(token), expires_at=now + dt.timedelta(hours=hours)
    )
    return token


def link_url(record: GateRecord, token: str) -> str:
    return f"{public_url()}/gates/{record.pk}/link/{token}/"


@dataclass(frozen=True)
class Redeemed:
    """What a link is good for now: its GateLink (None when it is not one of ours), and why it is refused, in
    words a person reads ("" when it may be used); `gone` when it ended (the Gate closed, the run ended, it
    expired) rather than never being good here."""

    link: GateLink | None
    why: str = ""
    gone: bool = False


def redeem(token: str, record_id: int) -> Redeemed:
    """The link of `token` for the Gate record `record_id`, and whether it may be used now. The words never say
    whether a token exists for some other Gate."""
    try:
        named, user_id, _ = signing.loads(token, salt=SALT)
    except (signing.BadSignature, ValueError, TypeError):
        return Redeemed(None, "This link is not valid.")
    link = GateLink.objects.select_related("user", "record").filter(key_hash=digest(token)).first()
    if link is None or link.user_id != user_id or link.record_id != named:
        return Redeemed(None, "This link is not valid.")
    if named != record_id:
        return Redeemed(link, "This link is for another Gate.")
    if link.expires_at <= timezone.now():
        return Redeemed(link, "This link has expired. Open the Gate from the Console's inbox instead.", gone=True)
    record = link.record
    if record.closed_at is not None:
        how = f" by {record.answered_by}" if record.answered_by else ""
        return Redeemed(link, f"This Gate has closed{how}: there is nothing left to answer.", gone=True)
    if not Run.objects.filter(pk=record.run_id, status__in=Run.LIVE).exists():
        return Redeemed(link, "This run has ended: there is nothing left to answer.", gone=True)
    user = link.user
    if not user.is_active or not user.has_perm(ANSWER_PERMISSION):
        return Redeemed(link, "Your account may no longer answer Gates.")
    if record.assign is not None and not user.is_superuser and not assigned_to(user, record.assign):
        return Redeemed(link, "This Gate is no longer assigned to you.")
    return Redeemed(link)


def log_use(link: GateLink | None, action: str, detail: str = "", address: str = "") -> None:
    """Log one use of a link (a refused one too, then maybe with no link)."""
    GateLinkUse.objects.create(link=link, action=action, detail=detail[:300], address=address[:64])
