"""What a host taking a run up again needs to rebuild its open spans: every recorded step, walked through the
Session (engine/core/journal/trace.py) for the states and Gates each one left, and the open Turns' records. Read
on the host's database thread, and only when tracing is on."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.core.journal.entries import Entry
from engine.core.journal.trace import trace
from engine.core.workflow import Machine
from engine.models import JournalEntry, TurnRecord

__all__ = ["resumed_steps"]


def resumed_steps(machine: Machine, run_id: str) -> tuple[list[tuple[int, Entry, Mapping[str, Any]]], list[TurnRecord]]:
    rows = [
        {"seq": seq, "entry": entry}
        for seq, entry in JournalEntry.objects.filter(run_id=run_id).order_by("seq").values_list("seq", "entry")
    ]
    steps: list[tuple[int, Entry, Mapping[str, Any]]] = []
    for step in trace(machine, rows):
        session = step.session
        view = {"active": list(session.active_paths), "gates": [gate.to_json() for gate in session.gates]}
        steps.append((step.seq, step.entry, view))
    turns = list(TurnRecord.objects.filter(run_id=run_id, status=TurnRecord.Status.OPEN).order_by("started_at"))
    return steps, turns
