"""A run as it was after a step of its journal: the Session restored from the nearest snapshot at or before the
step, then the journal entries up to it applied again (no model, no Effect: their answers are in the journal)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from engine.models import JournalEntry, Run, RunSnapshot
from engine.core.journal.replay import describe
from engine.core.session import HOST_KINDS, Session, SessionError
from engine.core.journal.trace import start_session
from engine.core.workflow import Machine

__all__ = ["Step", "steps_of", "session_at"]


@dataclass(frozen=True)
class Step:
    seq: int
    kind: str
    words: str
    at: Any


def steps_of(run: Run, machine: Machine | None) -> list[Step]:
    """Every journal entry of the run, said in words ("writer picked ask {question: …}")."""
    slots = {}
    rows = list(JournalEntry.objects.filter(run=run).order_by("seq"))
    for row in rows:
        if row.kind == "effect_started" and row.entry.get("slot"):
            slots[str(row.entry.get("effect"))] = str(row.entry["slot"])
    return [Step(row.seq, row.kind, describe(row.entry, slots), row.at) for row in rows]


def session_at(run: Run, machine: Machine, step: int) -> Session:
    """The run's Session right after journal entry `step`. Raises SessionError when the Machine no longer fits."""
    snapshot = RunSnapshot.objects.filter(run=run, seq__lte=step).order_by("-seq").first()
    if snapshot is not None and snapshot.data.get("digest") == machine.digest:
        session = Session.restore(machine, snapshot.data)
        start = snapshot.seq
    else:
        first = JournalEntry.objects.filter(run=run, seq=1).first()
        if first is None:
            raise SessionError(f"run {run.id} has no journal")
        session = start_session(machine, first.entry)
        start = 1
    for row in JournalEntry.objects.filter(run=run, seq__gt=start, seq__lte=step).order_by("seq"):
        if row.kind not in HOST_KINDS:
            session.apply(row.entry, row.seq)
    session.drain()
    return session
