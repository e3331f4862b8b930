"""Gate emails: one message to a person for the Gates waiting for them, through Django's email backend (SMTP as
`EMAIL_HOST`, `EMAIL_PORT`, ... say). Each Gate in it gives its workflow, its run, its `meta`, its due time and a
one-tap link (engine/runtime/links.py); nothing else of the run's context, and no secret.

    message = compose(user, [(record, url), ...])   # an EmailMessage, not yet sent
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from typing import Any

from django.conf import settings
from django.core.mail import EmailMessage

from engine.models import GateRecord
from engine.runtime.outboxing import run_url

__all__ = ["compose", "subject_of"]


def subject_of(records: Sequence[GateRecord]) -> str:
    if len(records) == 1:
        record = records[0]
        return f"[jr2] Gate {record.gate} waits for you ({record.workflow}, run {record.run_id})"
    return f"[jr2] {len(records)} Gates wait for you"


def _value(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text.replace("\r", " ")


def _gate_text(record: GateRecord, url: str) -> str:
    lines = [
        f"Gate {record.gate} in {record.state}",
        f"  workflow: {record.workflow}",
        f"  run: {record.run_id}  {run_url(record.run_id)}",
        f"  opened: {record.opened_at.astimezone(dt.UTC):%Y-%m-%d %H:%M} UTC",
    ]
    if record.due_at is not None:
        lines.append(f"  due: {record.due_at.astimezone(dt.UTC):%Y-%m-%d %H:%M} UTC (then the workflow moves on)")
    for key, value in (record.meta or {}).items():
        lines.append(f"  {key}: {_value(value)}")
    lines.append(f"  answer it: {url}")
    return "\n".join(lines)


def compose(user: Any, gates: Sequence[tuple[GateRecord, str]]) -> EmailMessage:
    """The message to `user` for these Gates (each with its one-tap link)."""
    name = user.get_full_name() or user.get_username()
    intro = "A Gate waits for your answer." if len(gates) == 1 else f"{len(gates)} Gates wait for your answer."
    body = "\n\n".join(
        [
            f"Hello {name},",
            intro,
            *(_gate_text(record, url) for record, url in gates),
            "Each link opens its Gate for you alone, without a password, until the Gate closes or the link "
            f"expires ({float(getattr(settings, 'JR2_LINK_HOURS', 72)):g} hours). Do not forward this message.",
        ]
    )
    return EmailMessage(
        subject=subject_of([record for record, _ in gates]),
        body=body + "\n",
        from_email=getattr(settings, "DEFAULT_FROM_EMAIL", None),
        to=[user.email],
        headers={"Auto-Submitted": "auto-generated"},
    )
