"""What a host reads to take a run up again (after a restart, a lost lease or a failed step)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.utils import timezone

from engine.models import EffectRecord, JournalEntry, ModelCall, Run, RunSnapshot, Seat, TurnMessage, TurnRecord

__all__ = ["Resume", "load_resume", "expire_in_flight"]


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
    latest = {
        agent: conversation
        for agent, conversation in TurnRecord.objects.filter(run_id=run_id)
        .order_by("started_at", "id")
        .values_list("agent", "conversation")
    }
    wanted = {t.conversation for t in turns.values()} | set(latest.values())
    conversations: dict[str, list[dict[str, Any]]] = {}
    seqs: dict[str, int] = {}
    for message in (
        TurnMessage.objects.filter(run_id=run_id, conversation__in=wanted)
        .select_related("turn")
        .order_by("conversation", "seq")
    ):
        seqs[message.conversation] = message.seq
        conversations.setdefault(message.conversation, []).append(
            {"role": message.role, "content": message.content, "kind": message.kind, "turn": message.turn.turn}
        )
    effects = {e.effect: e for e in EffectRecord.objects.filter(run_id=run_id)}
    calls = ModelCall.objects.filter(run_id=run_id).order_by("-seq").values_list("seq", flat=True).first() or 0
    seats = {
        seat.agent: (seat.user_id, seat.user.get_username())
        for seat in Seat.objects.filter(run_id=run_id, given_back_at=None).select_related("user")
    }
    return Resume(run, snapshot.data, snapshot.seq, tail, turns, latest, conversations, seqs, effects, calls, seats)


def expire_in_flight(run_id: str) -> None:
    """Model calls that were in flight when the last host stopped: they are asked again, so mark these."""
    ModelCall.objects.filter(run_id=run_id, status=ModelCall.Status.IN_FLIGHT).update(
        status=ModelCall.Status.INTERRUPTED, finished_at=timezone.now(), error="interrupted by a restart"
    )
