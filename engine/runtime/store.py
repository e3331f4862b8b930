"""The database side of the runtime: every write of a run's step in one transaction, and what a resume reads.

These are plain synchronous functions over the Django ORM. The host calls them on its one database thread
(`Host.db`), so a run's writes are committed in the order its task made them, and no database connection is held
while a model is called.

Journal first, then tell: `commit(step)` writes the step's journal entries, the Run's new state and every record
that follows from them (Turns, messages, Effects, a snapshot) in one `transaction.atomic()`; only after it returns
does the host tell anyone.
"""
from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass, field
from typing import Any, Iterable

from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from engine.runtime.errors import InputWithdrawn, LeaseLost
from engine.models import (
    EffectRecord, JournalEntry, ModelCall, Run, RunInput, RunSnapshot, Seat, TurnMessage, TurnRecord,
)

__all__ = ["Step", "Op", "TurnOpened", "TurnClosed", "TurnChanged", "SeatChanged", "Message", "CallStarted",
           "CallFinished",
           "EffectOpened", "EffectChanged", "commit", "write", "Resume", "load_resume", "take_lease",
           "renew_leases", "release_leases", "live_run_ids", "mark_drifted", "expire_in_flight", "LeaseLost",
           "InputWithdrawn", "InputAnswered", "claim_runs", "pending_inputs", "post_input", "read_input",
           "withdraw_input", "answer_input"]




# The TurnRecord row id of each open Turn by (run, Turn): every message and model call of a Turn points at that
# row, and looking it up cost a query per message (two per pick). An id is remembered only once the transaction
# that wrote or read it has committed (a rolled-back row's id can be given out again) and forgotten when its Turn
# closes; rows are never deleted while their run is driven, so a remembered id stays right.
_turn_rows: dict[tuple[str, str], int] = {}
_TURN_ROWS_MAX = 10_000  # a bound for Turns that never close here (their host stopped): past it, start afresh


def _turn_row(run_id: str, turn: str) -> int:
    key = (run_id, turn)
    row = _turn_rows.get(key)
    if row is None:
        row = TurnRecord.objects.only("id").get(run_id=run_id, turn=turn).id
        _remember_turn_row(key, row)
    return row


def _remember_turn_row(key: tuple[str, str], row: int) -> None:
    def remember() -> None:
        if len(_turn_rows) >= _TURN_ROWS_MAX:
            _turn_rows.clear()
        _turn_rows[key] = row
    transaction.on_commit(remember)


class Op:
    """One record a step writes beside its journal entries."""

    def apply(self, run_id: str, now: dt.datetime) -> None:
        raise NotImplementedError(f"{type(self).__name__}.apply")


@dataclass
class TurnOpened(Op):
    turn: str
    agent: str
    state: str
    model: str
    declared_model: str
    scripted: bool
    dials: dict[str, Any]
    conversation: str
    prompt: str
    system: str

    def apply(self, run_id: str, now: dt.datetime) -> None:
        record = TurnRecord.objects.create(run_id=run_id, turn=self.turn, agent=self.agent, state=self.state,
                                           model=self.model, declared_model=self.declared_model,
                                           scripted=self.scripted, dials=self.dials, conversation=self.conversation,
                                           prompt=self.prompt, system=self.system, started_at=now)
        _remember_turn_row((run_id, self.turn), record.id)


@dataclass
class TurnClosed(Op):
    turn: str
    status: str = "ended"
    reason: str = ""

    def apply(self, run_id: str, now: dt.datetime) -> None:
        TurnRecord.objects.filter(run_id=run_id, turn=self.turn, status=TurnRecord.Status.OPEN).update(
            status=self.status, reason=self.reason, ended_at=now, pending_call="")
        transaction.on_commit(lambda: _turn_rows.pop((run_id, self.turn), None))


@dataclass
class TurnChanged(Op):
    """A Turn's waiting tool call, its conversation after a reroll, or who plays it after its seat changed hands."""

    turn: str
    pending_call: str | None = None
    conversation: str | None = None
    model: str | None = None

    def apply(self, run_id: str, now: dt.datetime) -> None:
        changes: dict[str, Any] = {}
        if self.model is not None:
            changes["model"] = self.model
        if self.pending_call is not None:
            changes["pending_call"] = self.pending_call
        if self.conversation is not None:
            changes["conversation"] = self.conversation
        if changes:
            TurnRecord.objects.filter(run_id=run_id, turn=self.turn).update(**changes)


@dataclass
class SeatChanged(Op):
    """A person takes an Agent's seat (`user_id`), or gives it back (None)."""

    agent: str
    user_id: int | None

    def apply(self, run_id: str, now: dt.datetime) -> None:
        Seat.objects.filter(run_id=run_id, agent=self.agent, given_back_at=None).update(given_back_at=now)
        if self.user_id is not None:
            Seat.objects.create(run_id=run_id, agent=self.agent, user_id=self.user_id)


@dataclass
class Message(Op):
    turn: str
    conversation: str
    seq: int
    role: str
    kind: str
    content: list[dict[str, Any]]

    def apply(self, run_id: str, now: dt.datetime) -> None:
        TurnMessage.objects.create(run_id=run_id, turn_id=_turn_row(run_id, self.turn), conversation=self.conversation,
                                   seq=self.seq, role=self.role, kind=self.kind, content=self.content)


@dataclass
class CallStarted(Op):
    seq: int
    turn: str
    model: str
    scripted: bool
    request: dict[str, Any]
    messages: int

    def apply(self, run_id: str, now: dt.datetime) -> None:
        ModelCall.objects.create(run_id=run_id, turn_id=_turn_row(run_id, self.turn), seq=self.seq, model=self.model,
                                 scripted=self.scripted, request=self.request, messages=self.messages, started_at=now)


@dataclass
class CallFinished(Op):
    seq: int
    turn: str
    status: str
    response: dict[str, Any] | None = None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    stop_reason: str = ""
    error: str = ""
    usage: dict[str, int] = field(default_factory=dict)
    latency_ms: float | None = None

    def apply(self, run_id: str, now: dt.datetime) -> None:
        tokens = {"input_tokens": self.usage.get("input", 0), "output_tokens": self.usage.get("output", 0),
                  "cache_read_tokens": self.usage.get("cache_read", 0),
                  "cache_write_tokens": self.usage.get("cache_write", 0)}
        ModelCall.objects.filter(run_id=run_id, seq=self.seq).update(
            status=self.status, response=self.response, tool_calls=self.tool_calls, stop_reason=self.stop_reason,
            error=self.error, latency_ms=self.latency_ms, finished_at=now, **tokens)
        if any(tokens.values()):
            TurnRecord.objects.filter(run_id=run_id, turn=self.turn).update(
                **{name: F(name) + value for name, value in tokens.items()})


@dataclass
class EffectOpened(Op):
    effect: str
    slot: str
    kind: str
    state: str
    spec: dict[str, Any]
    input: Any
    idempotent: bool

    def apply(self, run_id: str, now: dt.datetime) -> None:
        EffectRecord.objects.create(run_id=run_id, effect=self.effect, slot=self.slot, kind=self.kind,
                                    state=self.state, spec=self.spec, input=self.input, idempotent=self.idempotent,
                                    requested_at=now)


@dataclass
class EffectChanged(Op):
    effect: str
    status: str
    result: Any = None
    duration_ms: float | None = None

    def apply(self, run_id: str, now: dt.datetime) -> None:
        changes: dict[str, Any] = {"status": self.status}
        if self.status == EffectRecord.Status.STARTED:
            changes.update(started_at=now, attempts=F("attempts") + 1)
        else:
            changes.update(finished_at=now, result=self.result, duration_ms=self.duration_ms)
        EffectRecord.objects.filter(run_id=run_id, effect=self.effect).update(**changes)


@dataclass
class InputAnswered(Op):
    """A relayed input (engine.models.RunInput) answered, in the transaction of the step it caused."""

    input_id: int
    outcome: Any
    owner: str

    def apply(self, run_id: str, now: dt.datetime) -> None:
        if not _answer(self.input_id, self.outcome, self.owner, now):
            raise InputWithdrawn(f"input {self.input_id} of run {run_id} was withdrawn by its sender")


def _answer(input_id: int, outcome: Any, owner: str, now: dt.datetime) -> bool:
    return RunInput.objects.filter(id=input_id, status=RunInput.Status.PENDING).update(
        status=RunInput.Status.ANSWERED, outcome=outcome, answered_by=owner, answered_at=now) == 1


@dataclass
class Step:
    """What one step of a run writes. `create` holds the Run's first fields when the step starts the run;
    otherwise `owner` is the host that must still hold the run's lease for the step to be written (fencing)."""

    run_id: str
    first_seq: int
    entries: list[dict[str, Any]] = field(default_factory=list)
    run: dict[str, Any] = field(default_factory=dict)
    snapshot: dict[str, Any] | None = None
    ops: list[Op] = field(default_factory=list)
    create: dict[str, Any] | None = None
    lease: tuple[str, float] | None = None
    owner: str | None = None

    @property
    def last_seq(self) -> int:
        return self.first_seq + len(self.entries) - 1


def commit(step: Step) -> dt.datetime:
    """Write a step: journal entries, the Run's new state, its records and maybe a snapshot, all or nothing. Returns
    the commit's time, which is the Run row's `updated_at` after it (what a live page keys its view on)."""
    now = timezone.now()
    with transaction.atomic():
        if step.create is not None:
            owner, seconds = step.lease or ("", 0.0)
            Run.objects.create(id=step.run_id, seq=step.last_seq, lease_owner=owner,
                               lease_expires=now + dt.timedelta(seconds=seconds) if owner else None,
                               **step.create, **step.run)
            Run.objects.filter(id=step.run_id).update(updated_at=now)
        elif step.run or step.entries:
            fields = dict(step.run)
            if step.entries:
                fields["seq"] = step.last_seq
            if not _held(step.run_id, step.owner).update(updated_at=now, **fields):
                _lost(step.run_id, step.owner)
        if step.entries:
            JournalEntry.objects.bulk_create(
                JournalEntry(run_id=step.run_id, seq=step.first_seq + i, kind=str(entry.get("kind")), entry=entry,
                             out=str(entry.get("out") or ""), at=now)
                for i, entry in enumerate(step.entries))
        for op in step.ops:
            op.apply(step.run_id, now)
        if step.snapshot is not None:
            RunSnapshot.objects.create(run_id=step.run_id, seq=step.last_seq, data=step.snapshot)
    return now


def write(run_id: str, ops: Iterable[Op], owner: str | None = None) -> dt.datetime:
    """Records that change nothing in the run's Session (a model call, a refusal of a malformed tool call). The Run
    row's `updated_at` moves too, so a live page knows its view is older."""
    now = timezone.now()
    with transaction.atomic():
        if not _held(run_id, owner).update(updated_at=now):
            _lost(run_id, owner)
        for op in ops:
            op.apply(run_id, now)
    return now


def _held(run_id: str, owner: str | None) -> Any:
    """The Run row, as long as `owner` (when given) still holds its lease."""
    rows = Run.objects.filter(id=run_id)
    return rows if owner is None else rows.filter(lease_owner=owner)


def _lost(run_id: str, owner: str | None) -> None:
    raise LeaseLost(f"run {run_id}: host {owner} no longer holds its lease; nothing of this step was written")


@dataclass
class Resume:
    """What a host needs to take a run up again: its row, its latest snapshot, the journal after it, its open
    Turns, each Agent's latest conversation (a Turn that continues reads it), those conversations, its Effects,
    and its counters."""

    run: Run
    snapshot: dict[str, Any]
    snapshot_seq: int
    tail: list[dict[str, Any]]
    turns: dict[str, TurnRecord]
    latest: dict[str, str]
    conversations: dict[str, list[dict[str, Any]]]
    message_seqs: dict[str, int]
    effects: dict[str, EffectRecord]
    model_calls: int
    seats: dict[str, tuple[int, str]]


def load_resume(run_id: str) -> Resume:
    run = Run.objects.get(id=run_id)
    snapshot = RunSnapshot.objects.filter(run_id=run_id).order_by("-seq").first()
    if snapshot is None:
        raise LookupError(f"run {run_id} has no snapshot to resume from")
    tail = [e.entry for e in JournalEntry.objects.filter(run_id=run_id, seq__gt=snapshot.seq).order_by("seq")]
    turns = {t.turn: t for t in TurnRecord.objects.filter(run_id=run_id, status=TurnRecord.Status.OPEN)}
    latest = {agent: conversation for agent, conversation in TurnRecord.objects.filter(run_id=run_id).order_by(
        "started_at", "id").values_list("agent", "conversation")}
    wanted = {t.conversation for t in turns.values()} | set(latest.values())
    conversations: dict[str, list[dict[str, Any]]] = {}
    seqs: dict[str, int] = {}
    for message in TurnMessage.objects.filter(run_id=run_id, conversation__in=wanted).select_related(
            "turn").order_by("conversation", "seq"):
        seqs[message.conversation] = message.seq
        conversations.setdefault(message.conversation, []).append(
            {"role": message.role, "content": message.content, "kind": message.kind, "turn": message.turn.turn})
    effects = {e.effect: e for e in EffectRecord.objects.filter(run_id=run_id)}
    calls = ModelCall.objects.filter(run_id=run_id).order_by("-seq").values_list("seq", flat=True).first() or 0
    seats = {seat.agent: (seat.user_id, seat.user.get_username())
             for seat in Seat.objects.filter(run_id=run_id, given_back_at=None).select_related("user")}
    return Resume(run, snapshot.data, snapshot.seq, tail, turns, latest, conversations, seqs, effects, calls, seats)


def expire_in_flight(run_id: str) -> None:
    """Model calls that were in flight when the last host stopped: they are asked again, so mark these."""
    ModelCall.objects.filter(run_id=run_id, status=ModelCall.Status.IN_FLIGHT).update(
        status=ModelCall.Status.INTERRUPTED, finished_at=timezone.now(), error="interrupted by a restart")


def live_run_ids() -> list[tuple[str, str]]:
    """(id, workflow) of every run that is running or waiting, oldest first (an imported run is never hosted)."""
    return list(Run.objects.filter(status__in=Run.LIVE, imported_from="").order_by("created_at").values_list(
        "id", "workflow"))


def take_lease(run_id: str, owner: str, seconds: float) -> bool:
    """Compare-and-set: the run becomes `owner`'s if nobody holds it, its lease expired, or `owner` holds it."""
    now = timezone.now()
    free = Q(lease_owner="") | Q(lease_expires__lt=now) | Q(lease_owner=owner)
    return Run.objects.filter(free, id=run_id).update(
        lease_owner=owner, lease_expires=now + dt.timedelta(seconds=seconds)) == 1


def renew_leases(owner: str, run_ids: Iterable[str], seconds: float) -> set[str]:
    """Extend `owner`'s leases; returns the ids it still holds (a lost lease means another host took the run)."""
    ids = list(run_ids)
    if not ids:
        return set()
    Run.objects.filter(id__in=ids, lease_owner=owner).update(
        lease_expires=timezone.now() + dt.timedelta(seconds=seconds))
    return set(Run.objects.filter(id__in=ids, lease_owner=owner).values_list("id", flat=True))


def release_leases(owner: str, run_ids: Iterable[str]) -> None:
    Run.objects.filter(id__in=list(run_ids), lease_owner=owner).update(lease_owner="", lease_expires=None)


def claim_runs(owner: str, seconds: float, limit: int, mine: bool = False) -> list[tuple[str, str]]:
    """Take up to `limit` live runs nobody holds (new, handed back, or whose holder's lease expired), oldest first;
    with `mine`, also those `owner` held (a host restarted under the same id takes its own runs up at once). An
    imported run is never claimed.
    On PostgreSQL the candidates are locked with SKIP LOCKED, so workers claiming at once split the runs instead of
    queueing on the same rows; each is then taken with the lease compare-and-set, which alone is enough on SQLite
    (whose writers are serialised anyway)."""
    now = timezone.now()
    free = Q(lease_owner="") | Q(lease_expires__lt=now)
    if mine:
        free |= Q(lease_owner=owner)
    claimed: list[tuple[str, str]] = []
    with transaction.atomic():
        candidates = list(Run.objects.filter(free, status__in=Run.LIVE, imported_from="").order_by("created_at")
                          .select_for_update(skip_locked=True).values_list("id", "workflow")[:limit])
        expires = now + dt.timedelta(seconds=seconds)
        for run_id, workflow in candidates:
            if Run.objects.filter(free, id=run_id).update(lease_owner=owner, lease_expires=expires) == 1:
                claimed.append((run_id, workflow))
    return claimed


def pending_inputs(owner: str, run_ids: Iterable[str] | None = None) -> list[tuple[int, str, str, dict[str, Any]]]:
    """(id, run, kind, args) of the inputs waiting for runs `owner` holds, in the order they were sent."""
    rows = RunInput.objects.filter(status=RunInput.Status.PENDING, run__lease_owner=owner)
    if run_ids is not None:
        rows = rows.filter(run_id__in=list(run_ids))
    return [(input_id, run_id, kind, json.loads(args))
            for input_id, run_id, kind, args in rows.order_by("id").values_list("id", "run_id", "kind", "args")]


def post_input(run_id: str, kind: str, args: dict[str, Any]) -> int:
    return RunInput.objects.create(run_id=run_id, kind=kind, args=json.dumps(args)).id


def read_input(input_id: int) -> tuple[str, Any]:
    """(status, outcome) of a relayed input."""
    status, outcome = RunInput.objects.filter(id=input_id).values_list("status", "outcome").get()
    return status, outcome


def withdraw_input(input_id: int) -> bool:
    """The sender stops waiting: true if no worker had answered it (then none ever will)."""
    return RunInput.objects.filter(id=input_id, status=RunInput.Status.PENDING).update(
        status=RunInput.Status.WITHDRAWN, answered_at=timezone.now()) == 1


def answer_input(input_id: int, outcome: Any, owner: str) -> bool:
    """Answer a relayed input that caused no step (a seat's pick handed to its Turn, a run that had ended)."""
    return _answer(input_id, outcome, owner, timezone.now())


def mark_drifted(run_id: str, reason: str) -> None:
    Run.objects.filter(id=run_id).update(status=Run.Status.DRIFTED, reason=reason, lease_owner="",
                                         lease_expires=None, updated_at=timezone.now())
