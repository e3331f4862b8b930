"""Configuration mistakes of the engine's settings, as Django system checks with stable ids."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.core.checks import CheckMessage, Error, register

from engine.runtime.webhooks import endpoints_in
from engine.runtime.workspace.sandbox import Limits

__all__ = ["workspace_settings", "notify_settings"]


@register()
def workspace_settings(app_configs: Any = None, **kwargs: Any) -> list[Error]:
    """engine.E001: JR2_WORKSPACE_LIMITS must be a dict of positive integers with known keys; engine.E002:
    JR2_WORKSPACE_ROOT must be set (Agents with a workspace keep their folders under it)."""
    errors = []
    limits = getattr(settings, "JR2_WORKSPACE_LIMITS", None) or {}
    try:
        if not isinstance(limits, dict):
            raise ValueError(f"JR2_WORKSPACE_LIMITS must be a dict; got {type(limits).__name__}")
        Limits.from_mapping(limits)
    except ValueError as err:
        errors.append(
            Error(str(err), hint="Agents with a workspace fault their Turns until it is fixed.", id="engine.E001")
        )
    if not getattr(settings, "JR2_WORKSPACE_ROOT", None):
        errors.append(
            Error(
                "JR2_WORKSPACE_ROOT is empty", hint="Name the folder that holds the runs' workspaces.", id="engine.E002"
            )
        )
    return errors


@register()
def notify_settings(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """engine.E010: JR2_WEBHOOKS must be a list of endpoints, each with an http(s) `url`, a `secret` and known
    `events`; engine.E011: JR2_PUBLIC_URL must be an http(s) address (links start with it); engine.E012: the
    digest period, link lifetime and retry settings must be positive (the digest may be 0)."""
    errors: list[CheckMessage] = []
    try:
        endpoints_in(getattr(settings, "JR2_WEBHOOKS", None))
    except ValueError as err:
        errors.append(
            Error(
                str(err),
                hint='Write it as [{"url": "https://...", "secret": "...", "events": ["gate.opened"]}].',
                id="engine.E010",
            )
        )
    public = urlsplit(str(getattr(settings, "JR2_PUBLIC_URL", "") or ""))
    if public.scheme not in ("http", "https") or not public.netloc:
        errors.append(
            Error(
                f"JR2_PUBLIC_URL must be an http or https address, not {getattr(settings, 'JR2_PUBLIC_URL', '')!r}",
                hint="One-tap links and the links in webhooks start with it, e.g. https://jr2.example.com.",
                id="engine.E011",
            )
        )
    for name, least in (
        ("JR2_NOTIFY_DIGEST_MINUTES", 0.0),
        ("JR2_LINK_HOURS", None),
        ("JR2_NOTIFY_RETRY_SECONDS", None),
        ("JR2_NOTIFY_TRIES", None),
    ):
        value = getattr(settings, name, None)
        if value is None:
            continue
        if (least is None and value <= 0) or (least is not None and value < least):
            words = "0 or more" if least is not None else "more than 0"
            errors.append(Error(f"{name} must be {words}, not {value}", id="engine.E012"))
    return errors
