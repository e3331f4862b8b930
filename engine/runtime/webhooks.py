"""Webhooks, in the style of GitHub's and Stripe's: the endpoints (the admin's and `JR2_WEBHOOKS`), the body of each
kind, and its signature.

    endpoints_in(value)              # JR2_WEBHOOKS checked: a list of Endpoint, or ValueError naming what is wrong
    sign(secret, body)               # "sha256=<hex HMAC-SHA256 of the body>", the X-Jr2-Signature header
    verify(secret, body, header)     # what a receiver does, in constant time
    headers(delivery)                # the headers of one POST

A body names its kind in `"type"`, its run and its Gate; an answer's says who answered. It carries no secret, no
token, and of the run's context only the Gate's `meta`: what the Machine chose to show the people answering it.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from engine.outbox import KINDS

__all__ = ["Endpoint", "endpoints_in", "sign", "verify", "headers", "slack_text", "SIGNATURE", "DELIVERY", "KEY"]

SIGNATURE = "X-Jr2-Signature"
DELIVERY = "X-Jr2-Delivery"
KEY = "Idempotency-Key"
EVENT = "X-Jr2-Event"


@dataclass(frozen=True)
class Endpoint:
    """One endpoint of `JR2_WEBHOOKS`."""

    url: str
    secret: str
    events: tuple[str, ...]
    slack: bool = False


def endpoints_in(value: Any) -> list[Endpoint]:
    """The endpoints `JR2_WEBHOOKS` lists, each checked; the first thing wrong is a ValueError that names the
    endpoint (by its place in the list) and the key."""
    if value in (None, ""):
        return []
    if not isinstance(value, list):
        raise ValueError(
            f'JR2_WEBHOOKS must be a JSON list of {{"url", "secret", "events"}}, not {type(value).__name__}'
        )
    found = []
    for i, item in enumerate(value):
        where = f"JR2_WEBHOOKS[{i}]"
        if not isinstance(item, Mapping):
            raise ValueError(f'{where} must be an object with "url", "secret" and "events"')
        unknown = sorted(set(item) - {"url", "secret", "events", "slack"})
        if unknown:
            raise ValueError(f"{where} has unknown keys {unknown} (it takes url, secret, events, slack)")
        url = item.get("url")
        parts = urlsplit(url) if isinstance(url, str) else None
        if not isinstance(url, str) or parts is None or parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f'{where}: "url" must be an http or https address, not {url!r}')
        secret = item.get("secret")
        if not isinstance(secret, str) or len(secret) < 8:
            raise ValueError(f'{where}: "secret" must be a text of at least 8 characters (it signs each body)')
        events = item.get("events")
        if not isinstance(events, list) or not events or not all(isinstance(e, str) for e in events):
            raise ValueError(f'{where}: "events" must be a non-empty list of kinds ({", ".join(KINDS)})')
        wrong = [e for e in events if e not in KINDS]
        if wrong:
            raise ValueError(f'{where}: "events" names unknown kinds {wrong} (kinds: {", ".join(KINDS)})')
        slack = item.get("slack", False)
        if not isinstance(slack, bool):
            raise ValueError(f'{where}: "slack" must be true or false')
        found.append(Endpoint(url, secret, tuple(dict.fromkeys(events)), slack))
    urls = [e.url for e in found]
    twice = sorted({u for u in urls if urls.count(u) > 1})
    if twice:
        raise ValueError(f"JR2_WEBHOOKS lists {twice[0]} more than once")
    return found


def sign(secret: str, body: bytes) -> str:
    """The X-Jr2-Signature of a body: `sha256=` and the hex HMAC-SHA256 of the body's bytes, keyed by the secret."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def verify(secret: str, body: bytes, header: str) -> bool:
    """Whether `header` is the signature of `body` under `secret` (compared in constant time)."""
    return hmac.compare_digest(sign(secret, body), header or "")


def headers(secret: str, body: bytes, delivery_id: str, key: str, kind: str) -> dict[str, str]:
    return {
        "Content-Type": "application/json",
        "User-Agent": "jr2-webhooks",
        SIGNATURE: sign(secret, body),
        DELIVERY: delivery_id,
        KEY: key,
        EVENT: kind,
    }


def _slack_escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


_SAY = {
    "gate.opened": "opened",
    "gate.assigned": "is assigned",
    "gate.claimed": "was claimed",
    "gate.answered": "was answered",
}


def slack_text(body: Mapping[str, Any]) -> str:
    """A Slack-compatible text for a body: what happened, in words, with the link to answer it."""
    run = body.get("run") or {}
    gate = body.get("gate") or {}
    kind = str(body.get("type", ""))
    where = f"run {_slack_escape(str(run.get('id', '')))} of {_slack_escape(str(run.get('workflow', '')))}"
    if kind == "run.ended":
        return f"<{run.get('url', '')}|{where.capitalize()}> ended: {_slack_escape(str(body.get('status', '')))}"
    words = f"Gate {_slack_escape(str(gate.get('id', '')))} {_SAY.get(kind, kind)} in {where}"
    if kind == "gate.answered" and body.get("answer"):
        answer = body["answer"]
        words += f": {_slack_escape(str(answer.get('event', '')))} by {_slack_escape(str(answer.get('by') or '?'))}"
    if kind == "gate.claimed" and body.get("claim"):
        words += f" by {_slack_escape(str(body['claim'].get('by', '')))}"
    meta = gate.get("meta") or {}
    lines = [f"<{gate.get('url') or run.get('url', '')}|{words}>"]
    lines += [f"*{_slack_escape(str(k))}*: {_slack_escape(_short(v))}" for k, v in list(meta.items())[:10]]
    return "\n".join(lines)


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= 300 else text[:299] + "…"
