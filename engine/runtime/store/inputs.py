"""Inputs people send to runs, kept durably until delivered (engine/runtime/relay.py): a web process posts one and
reads its outcome; the host holding the run settles it, delivered or refused with the reason in words, in the
transaction of the step it caused (`InputAnswered`), or on its own when it caused none. Nothing ever withdraws one:
an input for a run that ended before any host took it is refused, saying so."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from django.utils import timezone

from engine.core.text import without_nul
from engine.models import GateRecord, JournalEntry, Run, RunInput
from engine.runtime.errors import InputSettled
from engine.runtime.store import rows
from engine.runtime.store.ops import Op

__all__ = [
    "InputAnswered",
    "PendingRefused",
    "InputReport",
    "pending_inputs",
    "post_input",
    "read_input",
    "report",
    "reports",
    "answer_input",
    "verdict",
    "pending_gate_inputs",
    "KEPT",
    "Kept",
]

#: What a sender is told of an input kept but not delivered yet.
KEPT = "no worker holds the run yet; it is delivered, in order, when one does"

#: What each kind of input is called in a sentence to the person who sent it.
WHAT = {"gate": "answer", "cancel": "cancel", "seat": "seat change", "offer": "pick", "claim": "claim"}

#: What a claim input did, as a line says it.
CLAIMED = {"claim": "claimed", "release": "released the claim on", "break": "broke the claim on"}


@dataclass(frozen=True)
class InputReport:
    """What became of one input a person sent: the shape the API answers, and what the Console, the inbox and the
    audit read (`status`: pending, delivered or refused; `reason` in words when refused)."""

    input: int
    run: str
    kind: str
    status: str
    reason: str
    sent_by: str
    sent_at: dt.datetime
    settled_at: dt.datetime | None
    gate: str
    agent: str
    event: str
    #: A claim's action: claim, release or break ("" for other kinds).
    action: str = ""

    @property
    def words(self) -> str:
        """What was sent, as a line says it: "answered writing.asking with reply"."""
        if self.kind == "gate":
            return f"answered {self.gate} with {self.event}"
        if self.kind == "cancel":
            return "cancelled the run"
        if self.kind == "seat":
            return f"changed hands of the seat of {self.agent}"
        if self.kind == "offer":
            return f"picked {self.event} in the seat of {self.agent}"
        if self.kind == "claim":
            return f"{CLAIMED.get(self.action, 'claimed')} {self.gate}"
        return f"sent {self.kind}"

    @property
    def pending(self) -> bool:
        return self.status == RunInput.Status.PENDING

    def as_json(self) -> dict[str, Any]:
        return {
            "input": self.input,
            "run": self.run,
            "kind": self.kind,
            "status": self.status,
            "reason": self.reason,
            "sent_by": self.sent_by,
            "sent_at": self.sent_at.isoformat(),
            "settled_at": self.settled_at.isoformat() if self.settled_at else None,
            "gate": self.gate,
            "agent": self.agent,
            "event": self.event,
            "url": f"/api/runs/{self.run}/inputs/{self.input}",
        }


@dataclass
class InputAnswered(Op):
    """A relayed input (engine.models.RunInput) settled, in the transaction of the step it caused."""

    input_id: int
    outcome: Any
    owner: str
    kind: str = ""
    gate: str = ""

    def apply(self, run_id: str, now: dt.datetime) -> None:
        settled = _settled(self.input_id, run_id)
        _settle(self.input_id, self.kind, self.gate, self.outcome, self.owner, now, run_id, settled)


@dataclass
class PendingRefused(Op):
    """The run ended in this step: the inputs still waiting for it can never be delivered, so they are refused now,
    in the same transaction, and their senders are told why."""

    status: str
    owner: str

    def apply(self, run_id: str, now: dt.datetime) -> None:
        reason = rows.Case("kind", {kind: _ended(kind, self.status) for kind in WHAT}, _ended("", self.status))
        changes = {"status": RunInput.Status.REFUSED, "reason": reason, "answered_by": self.owner, "answered_at": now}
        rows.update(RunInput, changes, {"run_id": run_id, "status": RunInput.Status.PENDING}, later=True)


def verdict(kind: str, outcome: Any) -> tuple[str, str, bool]:
    """(status, reason, whether to say what closed the Gate) of what a run answered to an input (`relay.encode`'s
    JSON)."""
    what = WHAT.get(kind, "input")
    if not isinstance(outcome, dict):
        return RunInput.Status.DELIVERED, "", False
    if "error" in outcome:
        return RunInput.Status.REFUSED, str(outcome["error"]), False
    found = outcome.get("delivery")
    if not found or found.get("outcome") == "delivered":
        return RunInput.Status.DELIVERED, "", False
    code, error = found.get("code", ""), found.get("error") or ""
    if code == "no-gate":
        return RunInput.Status.REFUSED, f"the Gate closed before your {what} was delivered", True
    if code == "ended":
        return RunInput.Status.REFUSED, f"the run had ended before your {what} was delivered", kind == "gate"
    if found.get("outcome") == "unmoved":
        return RunInput.Status.REFUSED, f"{error}: the Machine did not take it now", False
    accepts = found.get("accepts") or ()
    if code != "not-accepted" and accepts:
        error = f"{error} (the Gate accepts: {', '.join(accepts)})"
    return RunInput.Status.REFUSED, error or "refused", False


def why_closed(run_id: str, gate: str) -> str:
    """What closed a Gate, in words, read from the step that closed it (its GateRecord's `closed_at` is that step's
    commit time, as is each of its journal entries')."""
    record = GateRecord.objects.filter(run_id=run_id, gate=gate).exclude(closed_at=None).order_by("-closed_at").first()
    if record is None:
        return "the run moved on first"
    if record.event:
        return f"{record.answered_by or 'another answer'} answered it with {record.event} first"
    for kind, entry in JournalEntry.objects.filter(run_id=run_id, at=record.closed_at).values_list("kind", "entry"):
        entry = entry or {}
        if kind == "advance":
            return f"the timer in {record.state} fired first"
        if kind == "pick":
            return f"{entry.get('agent', 'an Agent')} picked {entry.get('event', 'an event')} first"
        if kind == "cancel":
            return "the run was cancelled first" + (f" by {entry['by']}" if entry.get("by") else "")
        if kind in ("effect_done", "effect_failed"):
            return f"the Effect {entry.get('effect', '')} {'finished' if kind == 'effect_done' else 'failed'} first"
        if kind == "fault":
            return f"{entry.get('agent', 'an Agent')}'s Turn faulted first"
    return "the run moved on first"


def _settle(
    input_id: int,
    kind: str,
    gate: str,
    outcome: Any,
    owner: str,
    now: dt.datetime,
    run_id: str = "",
    must: Callable[[], Exception] | None = None,
) -> bool:
    """Settle a pending input; whether it was still pending. With `must` (a step settling it), it must be: else
    that error, and the UPDATE may wait for the group's others (`rows.update`'s `later`)."""
    status, reason, closed = verdict(kind, outcome)
    if closed and gate:
        reason = f"{reason}: {why_closed(run_id, gate)}"
    changes = {
        "status": status,
        "reason": without_nul(reason),
        "outcome": without_nul(outcome),
        "answered_by": owner,
        "answered_at": now,
    }
    where: dict[str, Any] = {"id": input_id, "status": RunInput.Status.PENDING}
    if run_id:
        where["run_id"] = run_id
    return rows.update(RunInput, changes, where, later=must is not None, must=must) == 1


def _settled(input_id: int, run_id: str) -> Callable[[], InputSettled]:
    """The error of a step that would answer an input no longer pending."""
    return lambda: InputSettled(f"input {input_id} of run {run_id} was already delivered or refused")


def _refuse(input_id: int, reason: str, owner: str, now: dt.datetime) -> bool:
    return (
        RunInput.objects.filter(id=input_id, status=RunInput.Status.PENDING).update(
            status=RunInput.Status.REFUSED, reason=without_nul(reason), answered_by=owner, answered_at=now
        )
        == 1
    )


def _ended(kind: str, status: str) -> str:
    return f"the run ended ({status}) before your {WHAT.get(kind, 'input')} was delivered"


#: A kept input as a host takes it: (id, run, kind, args, when it was sent in wall-clock ms).
Kept = tuple[int, str, str, dict[str, Any], float]


def pending_inputs(owner: str, run_ids: Iterable[str] | None = None) -> list[Kept]:
    """(id, run, kind, args, when it was sent in wall-clock ms) of the inputs waiting for runs `owner` holds, in
    the order they were sent."""
    rows = RunInput.objects.filter(status=RunInput.Status.PENDING, run__lease_owner=owner)
    if run_ids is not None:
        rows = rows.filter(run_id__in=list(run_ids))
    return [
        (input_id, run_id, kind, json.loads(args), sent.timestamp() * 1000)
        for input_id, run_id, kind, args, sent in rows.order_by("id").values_list(
            "id", "run_id", "kind", "args", "created_at"
        )
    ]


def post_input(run_id: str, kind: str, args: dict[str, Any], sent_by: str = "") -> int:
    return RunInput.objects.create(run_id=run_id, kind=kind, args=json.dumps(args, default=str), sent_by=sent_by).id


def read_input(input_id: int) -> tuple[str, Any]:
    """(status, outcome) of an input; one still pending for a run that has ended is refused first (no host will
    ever take it), so its sender is told."""
    status, outcome, run_status, kind = (
        RunInput.objects.filter(id=input_id).values_list("status", "outcome", "run__status", "kind").get()
    )
    if status == RunInput.Status.PENDING and run_status not in Run.LIVE:
        _refuse(input_id, _ended(kind, run_status), "", timezone.now())
        status, outcome = RunInput.objects.filter(id=input_id).values_list("status", "outcome").get()
    return status, outcome


def report(run_id: str, input_id: int) -> InputReport | None:
    """What became of input `input_id` of run `run_id` (None: the run has no such input)."""
    if not RunInput.objects.filter(id=input_id, run_id=run_id).exists():
        return None
    read_input(input_id)
    return _report(RunInput.objects.get(id=input_id))


def reports(run_id: str, limit: int = 50) -> list[InputReport]:
    """The newest inputs people sent to a run, newest first."""
    return [_report(row) for row in RunInput.objects.filter(run_id=run_id).order_by("-id")[:limit]]


def pending_gate_inputs(run_ids: Iterable[str]) -> list[InputReport]:
    """The Gate answers kept for these runs and not delivered yet, oldest first."""
    rows = RunInput.objects.filter(run_id__in=list(run_ids), kind="gate", status=RunInput.Status.PENDING)
    return [_report(row) for row in rows.order_by("id")]


def _report(row: RunInput) -> InputReport:
    try:
        args = json.loads(row.args)
    except ValueError:
        args = {}
    args = args if isinstance(args, dict) else {}
    return InputReport(
        input=row.id,
        run=row.run_id,
        kind=row.kind,
        status=row.status,
        reason=row.reason,
        sent_by=row.sent_by,
        sent_at=row.created_at,
        settled_at=row.answered_at,
        gate=str(args.get("gate") or ""),
        agent=str(args.get("agent") or ""),
        event=str(args.get("event") or ""),
        action=str(args.get("action") or "") if row.kind == "claim" else "",
    )


def answer_input(input_id: int, outcome: Any, owner: str, kind: str = "", run_id: str = "", gate: str = "") -> bool:
    """Settle a relayed input that caused no step (a seat's pick handed to its Turn, a run that had ended)."""
    return _settle(input_id, kind, gate, outcome, owner, timezone.now(), run_id)
