"""The records that reach people when a Gate opens: webhook endpoints, the outbox of deliveries and emails (written
in the same transaction as the step that caused them, engine/runtime/outbox.py), and one-tap links.

An outbox row is sent by a host's courier (engine/runtime/courier.py) at least once, with retries and exponential
backoff; a row is taken for a while (`taken_until`) by the host sending it, so two hosts of a fleet do not send it
at the same moment, and a host killed while sending leaves it to be taken again. A one-tap link is stored only as a
hash, and every use of it is logged (`GateLinkUse`).

These models are Django's (app `engine`); engine/models.py imports them.
"""

from __future__ import annotations

import hashlib
import uuid

from django.conf import settings
from django.db import models

__all__ = ["WebhookEndpoint", "Delivery", "EmailNotice", "GateLink", "GateLinkUse", "KINDS", "digest"]

#: The kinds of happening an endpoint may ask for.
KINDS = ("gate.opened", "gate.assigned", "gate.claimed", "gate.answered", "run.ended")


def digest(key: str) -> str:
    """How a one-tap link's key is kept: its SHA-256 (the key itself is only in the message that carried it)."""
    return hashlib.sha256(key.encode()).hexdigest()


def _delivery_id() -> str:
    return str(uuid.uuid4())


class Sending(models.TextChoices):
    PENDING = "pending"
    DELIVERED = "delivered"
    FAILED = "failed"  # every try failed; "send again" in the Console puts it back
    SKIPPED = "skipped"  # an email whose Gate closed before it went out


class WebhookEndpoint(models.Model):
    """Where webhooks go: listed in the admin, or in `JR2_WEBHOOKS` (kept here with `source` "settings", updated
    from the setting when a host starts)."""

    class Source(models.TextChoices):
        ADMIN = "admin"
        SETTINGS = "settings"

    name = models.CharField(max_length=100, blank=True, default="")
    url = models.URLField(max_length=500)
    secret = models.CharField(max_length=200, help_text="the HMAC key of X-Jr2-Signature; never sent")
    events = models.JSONField(default=list, help_text=f"the kinds it wants: {', '.join(KINDS)}")
    slack = models.BooleanField(default=False, help_text="send a Slack-compatible body: a text with the link")
    active = models.BooleanField(default=True)
    source = models.CharField(max_length=10, choices=Source.choices, default=Source.ADMIN)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [models.UniqueConstraint(fields=["source", "url"], name="one_webhook_endpoint")]

    def __str__(self) -> str:
        return self.name or self.url


class Delivery(models.Model):
    """One webhook to send: its exact body (what is signed), its kind, and how sending it went."""

    Status = Sending

    delivery_id = models.CharField(max_length=36, unique=True, default=_delivery_id)
    endpoint = models.ForeignKey(WebhookEndpoint, on_delete=models.CASCADE, related_name="deliveries")
    kind = models.CharField(max_length=20)
    run_id = models.CharField(max_length=64)
    gate = models.CharField(max_length=300, blank=True, default="")
    key = models.CharField(max_length=400, help_text="the idempotency key: the same for every send of it")
    body = models.TextField()
    status = models.CharField(max_length=10, choices=Sending.choices, default=Sending.PENDING)
    tries = models.PositiveIntegerField(default=0)
    next_try = models.DateTimeField()
    taken_until = models.DateTimeField(null=True, blank=True)
    last_code = models.PositiveIntegerField(null=True, blank=True)
    last_error = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-id"]
        indexes = [models.Index(fields=["status", "next_try"], name="delivery_due")]
        constraints = [models.UniqueConstraint(fields=["endpoint", "key"], name="one_delivery_per_key")]

    def __str__(self) -> str:
        return f"{self.kind} {self.run_id} {self.gate} -> {self.endpoint}"


class EmailNotice(models.Model):
    """One person to tell by email that a Gate opened or was assigned to them; with `JR2_NOTIFY_DIGEST_MINUTES`,
    a person's notices due together go out as one message."""

    Status = Sending

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="gate_notices")
    record = models.ForeignKey("engine.GateRecord", on_delete=models.CASCADE, related_name="notices")
    kind = models.CharField(max_length=20)
    status = models.CharField(max_length=10, choices=Sending.choices, default=Sending.PENDING)
    tries = models.PositiveIntegerField(default=0)
    next_try = models.DateTimeField()
    taken_until = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["status", "next_try"], name="notice_due")]
        constraints = [models.UniqueConstraint(fields=["user", "record"], name="one_notice_per_gate")]

    def __str__(self) -> str:
        return f"{self.kind} {self.record_id} to {self.user}"


class GateLink(models.Model):
    """A one-tap link: opens one opening of one Gate for one user, until the Gate closes or `expires_at`."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="gate_links")
    record = models.ForeignKey("engine.GateRecord", on_delete=models.CASCADE, related_name="links")
    key_hash = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()

    class Meta:
        ordering = ["-id"]

    def __str__(self) -> str:
        return f"one-tap link to {self.record_id} for {self.user}"


class GateLinkUse(models.Model):
    """Each use of a one-tap link, refused ones too (then `link` may be unknown)."""

    class Action(models.TextChoices):
        OPENED = "opened"
        ANSWERED = "answered"
        REFUSED = "refused"

    link = models.ForeignKey(GateLink, on_delete=models.CASCADE, null=True, blank=True, related_name="uses")
    action = models.CharField(max_length=10, choices=Action.choices)
    detail = models.CharField(max_length=300, blank=True, default="")
    address = models.CharField(max_length=64, blank=True, default="")
    at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-id"]

    def __str__(self) -> str:
        return f"{self.action} {self.link_id} at {self.at:%Y-%m-%d %H:%M}"
