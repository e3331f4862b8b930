"""What a step has to tell the outside, written into the outbox in the step's own transaction (a `store.Op`): a
webhook delivery per endpoint that wants the kind, and an email notice per assigned user with an address. Journal
and outbox commit together, so a host killed after the commit still has every delivery to send once another host
takes over (engine/runtime/courier.py), and a step that was not written tells nobody.

The kinds come from the views committed before and after the step and from its journal entries, as the inbox's
records do (engine/runtime/index.py):

    gate.opened     a Gate opened (or opened again after an answer)
    gate.assigned   an opened Gate has an `assign`: its assignees are emailed too
    gate.claimed    a person claimed an open Gate
    gate.answered   a Gate got its answer: who answered, by which door, with which event
    run.ended       the run finished, failed or was cancelled
"""

from __future__ import annotations

import datetime as dt
import json
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from engine.core.journal.entries import Claim, Entry, GateAnswer
from engine.models import Delivery, EmailNotice, GateRecord, Run, WebhookEndpoint
from engine.runtime import webhooks
from engine.runtime.assignment import assignees
from engine.runtime.store import Op, read_once, rows

__all__ = ["Outboxed", "happenings", "put_any", "public_url", "run_url"]


def public_url() -> str:
    return str(getattr(settings, "JR2_PUBLIC_URL", "") or "http://localhost:8000").rstrip("/")


def run_url(run_id: str) -> str:
    return f"{public_url()}/runs/{run_id}/"


def _when(ms: Any) -> str | None:
    if not isinstance(ms, (int, float)):
        return None
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC).isoformat()


def _gate_body(run_id: str, gate: Mapping[str, Any]) -> dict[str, Any]:
    """A Gate as a body shows it: its id, state, events, `meta`, assignment and due time; no context."""
    return {
        "id": gate.get("id"),
        "state": gate.get("path") or gate.get("state"),
        "accepts": list(gate.get("accepts") or ()),
        "meta": gate.get("meta") or {},
        "assign": gate.get("assign"),
        "due": _when(gate.get("due")),
        "url": run_url(run_id) + "#run-gates",
    }


def happenings(
    workflow: str,
    run_id: str,
    before: Mapping[str, Any],
    after: Mapping[str, Any],
    entries: list[Entry],
    status: str,
    was_live: bool,
) -> list[dict[str, Any]]:
    """The bodies of what this step made happen, in order (without their delivery ids and times)."""
    was = {g["id"]: g for g in before.get("gates", ())}
    now = {g["id"]: g for g in after.get("gates", ())}
    run = {"id": run_id, "workflow": workflow, "status": status, "url": run_url(run_id)}
    out: list[dict[str, Any]] = []
    answered: set[str] = set()
    for entry in entries:
        if isinstance(entry, GateAnswer) and (entry.gate in was or entry.gate in now):
            answered.add(entry.gate)
            gate = _gate_body(run_id, was.get(entry.gate) or now[entry.gate])
            answer = {"event": entry.event, "by": entry.by, "door": entry.door}
            out.append({"type": "gate.answered", "run": run, "gate": gate, "answer": answer})
        elif isinstance(entry, Claim) and entry.action == "claim" and entry.gate in now:
            claim = {"by": entry.by, "until": _when((entry.until or 0) * 1000)}
            out.append(
                {"type": "gate.claimed", "run": run, "gate": _gate_body(run_id, now[entry.gate]), "claim": claim}
            )
    for gate_id in sorted((set(now) - set(was)) | (answered & set(now))):
        gate = _gate_body(run_id, now[gate_id])
        out.append({"type": "gate.opened", "run": run, "gate": gate})
        if now[gate_id].get("assign"):
            out.append({"type": "gate.assigned", "run": run, "gate": gate})
    if was_live and status not in Run.LIVE:
        out.append({"type": "run.ended", "run": run, "gate": None, "status": status})
    return out


def _endpoints() -> list[tuple[int, list[str], bool]]:
    """(id, the kinds it wants, Slack or not) of each active endpoint that wants some kind."""
    found = rows.select(WebhookEndpoint, ("id", "events", "slack"), {"active": True})
    return [(endpoint, events, slack) for endpoint, events, slack in found if events]


@dataclass
class Outboxed(Op):
    """A step's webhooks and emails, into the outbox. Applied after the step's `Indexed` (the inbox records the
    emails point at are written by then). `seq` is the step's first journal entry: with the kind and the Gate it
    makes the idempotency key, the same however often the delivery is sent."""

    workflow: str
    before: Mapping[str, Any]
    after: Mapping[str, Any]
    status: str
    seq: int
    entries: list[Entry] = field(default_factory=list)
    was_live: bool = True
    #: Whether applying it put anything in the outbox: only then is the courier woken (`put_any`).
    put: bool = field(default=False, init=False)

    def apply(self, run_id: str, now: dt.datetime) -> None:
        bodies = happenings(self.workflow, run_id, self.before, self.after, self.entries, self.status, self.was_live)
        if not bodies:
            return
        endpoints = read_once("webhook endpoints", _endpoints)
        deliveries = []
        for body in bodies:
            gate = (body.get("gate") or {}).get("id") or ""
            key = f"{run_id}:{self.seq}:{body['type']}:{gate}"
            for endpoint, events, slack in endpoints:
                if body["type"] not in events:
                    continue
                delivery_id = str(uuid.uuid4())
                full = {"id": delivery_id, "created": now.isoformat(), **body}
                sent = {"text": webhooks.slack_text(full)} if slack else full
                deliveries.append(
                    Delivery(
                        delivery_id=delivery_id,
                        endpoint_id=endpoint,
                        kind=body["type"],
                        run_id=run_id,
                        gate=gate,
                        key=key,
                        body=json.dumps(sent, sort_keys=True, default=str),
                        next_try=now,
                    )
                )
        if deliveries:
            Delivery.objects.bulk_create(deliveries, ignore_conflicts=True)
            self.put = True
        self._emails(run_id, now, [b for b in bodies if b["type"] == "gate.assigned"])

    def _emails(self, run_id: str, now: dt.datetime, assigned: list[dict[str, Any]]) -> None:
        """A notice per assignee with an email address; with a digest period, due when the person's period ends."""
        if not assigned:
            return
        digest = float(getattr(settings, "JR2_NOTIFY_DIGEST_MINUTES", 0) or 0)
        records = {
            r.gate: r
            for r in GateRecord.objects.filter(
                run_id=run_id, gate__in=[b["gate"]["id"] for b in assigned], closed_at=None
            )
        }
        notices = []
        for body in assigned:
            record = records.get(body["gate"]["id"])
            if record is None:
                continue
            for user in assignees(body["gate"]["assign"]):
                if not user.email or not user.has_perm("engine.answer_gate"):
                    continue  # nobody to write to, or one who could not use the link
                notices.append(
                    EmailNotice(user=user, record=record, kind="gate.assigned", next_try=_due(user, now, digest))
                )
        if notices:
            EmailNotice.objects.bulk_create(notices, ignore_conflicts=True)
            self.put = True


def put_any(ops: Iterable[Any]) -> bool:
    """Whether a committed step's ops put a webhook delivery or an email notice in the outbox."""
    return any(isinstance(op, Outboxed) and op.put for op in ops)


def _due(user: Any, now: dt.datetime, digest: float) -> dt.datetime:
    """When a new notice to `user` goes out: at once; or, with a digest, with the person's notices already waiting
    (the end of their current period), else at the end of a new period."""
    if digest <= 0:
        return now
    waiting = (
        EmailNotice.objects.filter(user=user, status=EmailNotice.Status.PENDING, next_try__gt=now)
        .order_by("next_try")
        .values_list("next_try", flat=True)
        .first()
    )
    return waiting or now + dt.timedelta(minutes=digest)
