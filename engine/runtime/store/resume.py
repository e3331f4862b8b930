"""What a host reads to take a run up again (after a restart, a lost lease or a failed step)."""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import reduce
from typing import Any

from django.contrib.auth import get_user_model
from django.db.models import Count, Max, OuterRef, Q, Subquery
from django.utils import timezone

from engine.models import EffectRecord, JournalEntry, ModelCall, Run, RunSnapshot, Seat, TurnMessage, TurnRecord
from engine.runtime.store.inputs import Kept, pending_inputs
from engine.runtime.store.leases import take_lease

__all__ = ["Resume", "TakeUp", "load_resume", "take_up", "take_up_claimed", "expire_in_flight"]


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
    return _load([run if run is not None else Run.objects.get(id=run_id)])[0][0]


def _load(runs: Sequence[Run]) -> list[tuple[Resume, bool]]:
    """The Resume of each of `runs`, and whether some model call of it was in flight when its last host stopped:
    the same seven reads for one run or for a claim's dozens (each read covers them all)."""
    ids = [run.id for run in runs]
    latest_seq = RunSnapshot.objects.filter(run_id=OuterRef("run_id")).order_by("-seq").values("seq")[:1]
    snapshots = {
        run_id: (seq, data)
        for run_id, seq, data in RunSnapshot.objects.filter(run_id__in=ids, seq=Subquery(latest_seq)).values_list(
            "run_id", "seq", "data"
        )
    }
    missing = [run_id for run_id in ids if run_id not in snapshots]
    if missing:
        raise LookupError(f"run {missing[0]} has no snapshot to resume from")
    tails = _tails(runs, {run_id: seq for run_id, (seq, _) in snapshots.items()})
    records: dict[str, list[TurnRecord]] = {run_id: [] for run_id in ids}
    for record in TurnRecord.objects.filter(run_id__in=ids).order_by("started_at", "id"):
        records[record.run_id].append(record)
    turns = {r: {t.turn: t for t in found if t.status == TurnRecord.Status.OPEN} for r, found in records.items()}
    latest = {r: {t.agent: t.conversation for t in found} for r, found in records.items()}
    wanted = {r: {t.conversation for t in turns[r].values()} | set(latest[r].values()) for r in ids}
    conversations, seqs = _conversations(wanted)
    effects: dict[str, dict[str, EffectRecord]] = {run_id: {} for run_id in ids}
    for effect in EffectRecord.objects.filter(run_id__in=ids):
        effects[effect.run_id][effect.effect] = effect
    calls = {
        row["run_id"]: row
        for row in ModelCall.objects.filter(run_id__in=ids)
        .values("run_id")
        .annotate(last=Max("seq"), in_flight=Count("id", filter=Q(status=ModelCall.Status.IN_FLIGHT)))
        .order_by()
    }
    username = f"user__{get_user_model().USERNAME_FIELD}"
    seats: dict[str, dict[str, tuple[int, str]]] = {run_id: {} for run_id in ids}
    for run_id, agent, user_id, name in Seat.objects.filter(run_id__in=ids, given_back_at=None).values_list(
        "run_id", "agent", "user_id", username
    ):
        seats[run_id][agent] = (user_id, str(name))
    out = []
    for run in runs:
        r = run.id
        seq, data = snapshots[r]
        found = calls.get(r, {})
        resume = Resume(
            run, data, seq, tails[r], turns[r], latest[r], conversations[r], seqs[r], effects[r],
            found.get("last") or 0, seats[r],
        )  # fmt: skip
        out.append((resume, bool(found.get("in_flight"))))
    return out


def _tails(runs: Sequence[Run], snapshot_seqs: Mapping[str, int]) -> dict[str, list[dict[str, Any]]]:
    """Each run's journal entries after its snapshot (read only for the runs that have some)."""
    tails: dict[str, list[dict[str, Any]]] = {run.id: [] for run in runs}
    after = [Q(run_id=run.id, seq__gt=snapshot_seqs[run.id]) for run in runs if run.seq > snapshot_seqs[run.id]]
    if after:
        entries = JournalEntry.objects.filter(reduce(operator.or_, after)).order_by("run_id", "seq")
        for run_id, entry in entries.values_list("run_id", "entry"):
            tails[run_id].append(entry)
    return tails


def _conversations(
    wanted: Mapping[str, set[str]],
) -> tuple[dict[str, dict[str, list[dict[str, Any]]]], dict[str, dict[str, int]]]:
    """The messages of the conversations `wanted` of each run, and each one's last seq."""
    conversations: dict[str, dict[str, list[dict[str, Any]]]] = {run_id: {} for run_id in wanted}
    seqs: dict[str, dict[str, int]] = {run_id: {} for run_id in wanted}
    names = set().union(*wanted.values())
    if not names:
        return conversations, seqs
    for run_id, conversation, seq, role, content, kind, turn in (
        TurnMessage.objects.filter(run_id__in=list(wanted), conversation__in=names)
        .order_by("run_id", "conversation", "seq")
        .values_list("run_id", "conversation", "seq", "role", "content", "kind", "turn__turn")
    ):
        if conversation not in wanted[run_id]:  # another run's conversation of the same name
            continue
        seqs[run_id][conversation] = seq
        conversations[run_id].setdefault(conversation, []).append(
            {"role": role, "content": content, "kind": kind, "turn": turn}
        )
    return conversations, seqs


def take_up(run_id: str, owner: str, seconds: float, digest: str, run: Run | None = None) -> TakeUp | None:
    """Everything a host does in the database to take a run up, in one call on its database thread: take the lease
    (`run`: the row a claim just leased, so it is not taken again), read the Resume, and, when the run is still of
    `digest` (it is resumed), mark its model calls that were in flight as interrupted and read the inputs kept for
    it. None: another host holds it."""
    if run is None:
        if not take_lease(run_id, owner, seconds):
            return None
        run = Run.objects.get(id=run_id)
    return take_up_claimed([run], owner, {run.id: digest})[run.id]


def take_up_claimed(runs: Sequence[Run], owner: str, digests: Mapping[str, str]) -> dict[str, TakeUp]:
    """`take_up` of the runs a claim just leased (their rows), all in one call on the database thread and one read
    of each kind for them all: a worker that claims 25 new runs makes eight reads (the kept inputs too), not 200.
    `digests`: each run's workflow as this host has it now."""
    loaded = _load(runs)
    resumed = {resume.run.id for resume, _ in loaded if resume.run.digest == digests[resume.run.id]}
    interrupted = [resume.run.id for resume, in_flight in loaded if in_flight and resume.run.id in resumed]
    if interrupted:
        expire_in_flight(interrupted)
    kept: dict[str, list[Kept]] = {run_id: [] for run_id in resumed}
    if resumed:
        for found in pending_inputs(owner, resumed):
            kept[found[1]].append(found)
    return {resume.run.id: TakeUp(resume, kept.get(resume.run.id, [])) for resume, _ in loaded}


def expire_in_flight(run_ids: Sequence[str]) -> None:
    """Model calls of `run_ids` that were in flight when the last host stopped: they are asked again, so mark these
    (one UPDATE for all the runs a claim took up)."""
    ModelCall.objects.filter(run_id__in=list(run_ids), status=ModelCall.Status.IN_FLIGHT).update(
        status=ModelCall.Status.INTERRUPTED, finished_at=timezone.now(), error="interrupted by a restart"
    )
