"""What a host reads to take a run up again (after a restart, a lost lease or a failed step)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.contrib.auth import get_user_model
from django.db.models import Count, Max, Q
from django.utils import timezone

from engine.models import EffectRecord, JournalEntry, ModelCall, Run, RunSnapshot, Seat, TurnMessage, TurnRecord
from engine.runtime.store.inputs import Kept, pending_inputs
from engine.runtime.store.leases import take_lease

__all__ = ["Resume", "TakeUp", "load_resume", "take_up", "expire_in_flight"]


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


@dataclass
class TakeUp:
    """What `take_up` read: the Resume, and the inputs kept for the run in the order they were sent."""

    resume: Resume
    kept: list[Kept]


def load_resume(run_id: str, run: Run | None = None) -> Resume:
    """What taking `run_id` up reads; `run`: its row, when the caller has just read it (a claim). The journal after
    the snapshot is read only when there is one (a run just started, or snapshotted at its last step, has none)."""
    return _load(run if run is not None else Run.objects.get(id=run_id))[0]


def _load(run: Run) -> tuple[Resume, bool]:
    """The Resume of `run`, and whether some model call of it was in flight when its last host stopped."""
    run_id = run.id
    snapshot = RunSnapshot.objects.filter(run_id=run_id).order_by("-seq").only("seq", "data").first()
    if snapshot is None:
        raise LookupError(f"run {run_id} has no snapshot to resume from")
    tail = []
    if run.seq > snapshot.seq:
        tail = [e.entry for e in JournalEntry.objects.filter(run_id=run_id, seq__gt=snapshot.seq).order_by("seq")]
    records = list(TurnRecord.objects.filter(run_id=run_id).order_by("started_at", "id"))
    turns = {t.turn: t for t in records if t.status == TurnRecord.Status.OPEN}
    latest = {t.agent: t.conversation for t in records}
    wanted = {t.conversation for t in turns.values()} | set(latest.values())
    conversations: dict[str, list[dict[str, Any]]] = {}
    seqs: dict[str, int] = {}
    if wanted:
        for conversation, seq, role, content, kind, turn in (
            TurnMessage.objects.filter(run_id=run_id, conversation__in=wanted)
            .order_by("conversation", "seq")
            .values_list("conversation", "seq", "role", "content", "kind", "turn__turn")
        ):
            seqs[conversation] = seq
            conversations.setdefault(conversation, []).append(
                {"role": role, "content": content, "kind": kind, "turn": turn}
            )
    effects = {e.effect: e for e in EffectRecord.objects.filter(run_id=run_id)}
    found = ModelCall.objects.filter(run_id=run_id).aggregate(
        last=Max("seq"), in_flight=Count("id", filter=Q(status=ModelCall.Status.IN_FLIGHT))
    )
    username = f"user__{get_user_model().USERNAME_FIELD}"
    seats = {
        agent: (user_id, str(name))
        for agent, user_id, name in Seat.objects.filter(run_id=run_id, given_back_at=None).values_list(
            "agent", "user_id", username
        )
    }
    resume = Resume(
        run, snapshot.data, snapshot.seq, tail, turns, latest, conversations, seqs, effects, found["last"] or 0, seats
    )
    return resume, bool(found["in_flight"])


def take_up(run_id: str, owner: str, seconds: float, digest: str, run: Run | None = None) -> TakeUp | None:
    """Everything a host does in the database to take a run up, in one call on its database thread: take the lease
    (`run`: the row a claim just leased, so it is not taken again), read the Resume, and, when the run is still of
    `digest` (it is resumed), mark its model calls that were in flight as interrupted and read the inputs kept for
    it. None: another host holds it."""
    if run is None:
        if not take_lease(run_id, owner, seconds):
            return None
        run = Run.objects.get(id=run_id)
    resume, in_flight = _load(run)
    if run.digest != digest:
        return TakeUp(resume, [])
    if in_flight:
        expire_in_flight(run_id)
    return TakeUp(resume, pending_inputs(owner, [run_id]))


def expire_in_flight(run_id: str) -> None:
    """Model calls that were in flight when the last host stopped: they are asked again, so mark these."""
    ModelCall.objects.filter(run_id=run_id, status=ModelCall.Status.IN_FLIGHT).update(
        status=ModelCall.Status.INTERRUPTED, finished_at=timezone.now(), error="interrupted by a restart"
    )
