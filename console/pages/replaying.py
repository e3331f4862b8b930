"""A run as it was after a step of its journal: the Session restored from the nearest snapshot at or before the
step, then the journal entries up to it applied again (no model, no Effect: their answers are in the journal).
The replay page steps through them, and replays the whole run against the current Machine on request."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from console.pages.conversation import conversation_lines
from console.pages.runview import machine_of
from engine.core.journal.replay import describe, replay
from engine.core.journal.trace import start_session
from engine.core.session import HOST_KINDS, Session, SessionError
from engine.core.workflow import Machine
from engine.models import JournalEntry, Run, RunSnapshot, TurnMessage
from engine.runtime import graph

__all__ = ["Step", "steps_of", "session_at", "replay_page"]

SPEEDS = (0.5, 1, 2, 4)


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


def replay_page(run: Run, step_text: str | None, rerun: bool) -> dict[str, Any] | None:
    """The replay page after step `step_text` (by default the last; out of range is the nearest step): the graph,
    context, seats, Allowed picks and Turns as they were then, and with `rerun` the whole run replayed against the
    current Machine. None when the run has no journal."""
    machine = machine_of(run.workflow)
    steps = steps_of(run, machine)
    if not steps:
        return None
    try:
        step = min(max(int(step_text if step_text is not None else len(steps)), 1), len(steps))
    except ValueError:
        step = len(steps)
    page: dict[str, Any] = {
        "run": run,
        "steps": steps,
        "step": step,
        "current": steps[step - 1],
        "machine": machine,
        "speeds": SPEEDS,
    }
    if machine is None:
        page["error"] = f'workflow "{run.workflow}" does not load now, so its states cannot be shown'
    else:
        try:
            session = session_at(run, machine, step)
        except SessionError as err:
            page["error"] = f"this step cannot be shown on the current Machine: {err}"
        else:
            page.update(_session_then(machine, session))
        page["conversation"] = _conversation_until(run, steps[step].at if step < len(steps) else None)
    if rerun:
        page.update(_rerun(run, machine))
    return page


def _session_then(machine: Machine, session: Session) -> dict[str, Any]:
    active = session.active_paths
    seat_paths = {f"{machine.id}.{p}" for p in active}
    return {
        "svg": graph.lit_svg(graph.machine_svg(machine), active, ()),
        "active": active,
        "context_json": json.dumps(session.context, indent=2, ensure_ascii=False, sort_keys=True, default=str),
        "seats": [seat.line() for seat in machine.seats() if seat.path in seat_paths],
        "turns": [
            {"agent": t.agent, "path": t.path, "outstanding": t.outstanding, "allowed": session.allowed_picks(t.agent)}
            for t in session.turns
        ],
        "gates": session.gates,
        "status": session.status,
    }


def _conversation_until(run: Run, until: Any) -> list[tuple[str, Any]]:
    """Each Turn's lines written before the next step (all of them at the last step)."""
    messages = TurnMessage.objects.filter(run=run).select_related("turn").order_by("conversation", "seq")
    if until is not None:
        messages = messages.filter(created_at__lt=until)
    by_turn: dict[str, list[TurnMessage]] = {}
    for message in messages:
        by_turn.setdefault(message.turn.turn, []).append(message)
    return [(turn, conversation_lines(items, [])) for turn, items in by_turn.items()]


def _rerun(run: Run, machine: Machine | None) -> dict[str, Any]:
    """The whole journal replayed against the current Machine: "same", or the first step where it diverges."""
    if machine is None:
        return {"rerun": "the workflow does not load now"}
    journal = [
        {"seq": e.seq, "kind": e.kind, "entry": e.entry, "out": e.out}
        for e in JournalEntry.objects.filter(run=run).order_by("seq")
    ]
    report = replay(machine, journal)
    return {"rerun": report.message, "rerun_same": report.same, "rerun_step": getattr(report, "step", None)}
