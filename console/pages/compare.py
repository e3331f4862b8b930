"""Two runs side by side, step by step: what came in (picks, Gate answers, Effect results), the states each was in
after it, the answers it gave and its context, aligned by step, with the first difference marked.

    history = history_of(steps)            # pure: a run's steps from its journal walked on its Machine
    rows = align(history_a, history_b)     # pure: the aligned rows and the first difference
    comparison = compare_runs(run_a, run_b)   # reads the database

A step is an input that can move a run: time that passed and fired nothing, and marks a host writes for itself, are
left out, so two runs whose clocks ticked differently still line up. A fork's history is its parent's up to the step
it was forked from (inherited rows, muted), whose state afterwards is the fork's own (an edited context differs right
there), then its own steps; so a fork lines up with its parent and with its siblings. This is the re-run view's walk
(engine/core/journal/replay.py's words, engine/core/journal/trace.py's walker) done for two recorded runs.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from engine.core.journal.entries import Advance, Entry
from engine.core.journal.replay import describe, state_paths
from engine.core.journal.trace import TraceStep, trace
from engine.core.outputs import NoticeKept, Output, PickAnswered, PickStopped, RunEnded
from engine.core.session import SessionError
from engine.core.workflow import Machine

__all__ = ["Step", "Row", "Comparison", "history_of", "forked_history", "align", "compare_runs"]

PARTS = ("input", "states", "answers", "context")


@dataclass(frozen=True)
class Step:
    """One step of a run as the compare view shows it."""

    run: str  # the run whose journal holds it (a parent's, for inherited steps)
    seq: int
    words: str
    key: str  # what came in, without times and host bookkeeping
    states: tuple[str, ...]
    answers: tuple[str, ...]
    context: str  # pretty JSON
    inherited: bool = False
    forked: str = ""  # "forked here" words on the step a fork started after


@dataclass(frozen=True)
class Row:
    step: int  # the row's place in the alignment (1, 2, ...): never shown, the journal's numbers are
    a: Step | None
    b: Step | None
    differs: tuple[str, ...]  # the parts that differ (PARTS), or ("missing",)
    first: bool = False

    @property
    def label(self) -> str:
        """The row's step as the run page and replay number it, the journal entry's seq: `step 3`, or `A's step
        3, B's step 4` when the two runs' journals number it apart (time that fired nothing, a fork's start)."""
        sides = [(side, s) for side, s in (("A", self.a), ("B", self.b)) if s is not None]
        if len(sides) == 2 and sides[0][1].seq == sides[1][1].seq:
            return f"step {sides[0][1].seq}"
        return ", ".join(f"{side}'s step {s.seq}" for side, s in sides)


@dataclass(frozen=True)
class Comparison:
    rows: tuple[Row, ...]
    first: int | None  # the row (Row.step) of the first difference; its words name the journal's step
    verdict: str
    notes: tuple[str, ...] = ()


def history_of(run_id: str, machine: Machine, journal: Iterable[Mapping[str, Any]]) -> list[Step]:
    """The steps of one journal (database rows `{"seq", "entry"}`), walked on `machine`. A fork entry gives one
    step: the state it started in."""
    steps: list[Step] = []
    for found in trace(machine, journal):
        if _skipped(found):
            continue
        steps.append(_step(run_id, machine, found))
    return steps


def _skipped(found: TraceStep) -> bool:
    entry = found.entry
    return entry.host or (isinstance(entry, Advance) and not found.outputs and found.seq > 1)


def _step(run_id: str, machine: Machine, found: TraceStep) -> Step:
    session, entry = found.session, found.entry
    context = json.dumps(session.context, indent=1, ensure_ascii=False, sort_keys=True, default=str)
    answers = tuple(text for text in (_answer(o) for o in found.outputs) if text)
    return Step(
        run_id, found.seq, describe(entry), _key(entry), tuple(state_paths(machine.id, session.value)), answers, context
    )


def _key(entry: Entry) -> str:
    """What came in, comparable across runs: its kind and inputs, not its time, digest or the host's marks."""
    kept = {k: v for k, v in entry.to_json().items() if k not in ("at", "out", "call", "turn", "player", "session")}
    return json.dumps(kept, sort_keys=True, default=str)


def _answer(output: Output) -> str:
    """What a step's answers column shows: answers, unfinished picks, notices and the run's end, each in the
    output's own words (the same a replay says)."""
    return output.words() if isinstance(output, _ANSWERS) else ""


_ANSWERS = (PickAnswered, PickStopped, NoticeKept, RunEnded)


def forked_history(parent: str, history: list[Step], step: int, own: list[Step]) -> list[Step]:
    """A fork's history: its parent's history up to the parent's journal entry `step` (inherited; the parent's own
    ancestors' steps come first in it), the last one ending in the fork's own first state, then the fork's own
    steps after its fork entry."""
    kept = [replace(s, inherited=True) for s in history if s.run != parent or s.seq <= step]
    if not own:
        return kept
    start, rest = own[0], own[1:]
    if kept:
        kept[-1] = replace(kept[-1], states=start.states, context=start.context, inherited=False, forked=start.words)
    else:
        kept = [start]
    return kept + rest


def align(a: list[Step], b: list[Step]) -> Comparison:
    """Row by row, the parts that differ, and the first row that differs."""
    rows: list[Row] = []
    first: int | None = None
    for index in range(max(len(a), len(b))):
        left = a[index] if index < len(a) else None
        right = b[index] if index < len(b) else None
        if left is None or right is None:
            differs: tuple[str, ...] = ("missing",)
        else:
            differs = tuple(
                part
                for part, same in (
                    ("input", left.key == right.key or bool(left.forked or right.forked)),
                    ("states", left.states == right.states),
                    ("answers", left.answers == right.answers),
                    ("context", left.context == right.context),
                )
                if not same
            )
        mark = bool(differs) and first is None
        if mark:
            first = index + 1
        rows.append(Row(index + 1, left, right, differs, mark))
    if first is None:
        verdict = f"same ({len(rows)} step{'s' if len(rows) != 1 else ''})"
    else:
        row = rows[first - 1]
        verdict = f"first difference at {row.label}: " + _difference_words(row)
    return Comparison(tuple(rows), first, verdict)


def _difference_words(row: Row) -> str:
    if row.a is None or row.b is None:
        longer = "A" if row.b is None else "B"
        return f"only run {longer} goes on from here"
    parts = {
        "input": "what came in",
        "states": "the states after it",
        "answers": "the answers",
        "context": "the context after it",
    }
    return ", ".join(parts[p] for p in row.differs)


# -- from the database --------------------------------------------------------------------------------------------


def compare_runs(run_a: Any, run_b: Any) -> Comparison:
    """Both runs' histories (forks with their ancestors' steps) aligned; notes say what could not be walked."""
    notes: list[str] = []
    histories = []
    for name, run in (("A", run_a), ("B", run_b)):
        try:
            histories.append(_full_history(run, set()))
        except _Unwalkable as err:
            notes.append(f"run {name} ({run.id}): {err}")
            histories.append([])
    found = align(*histories)
    return replace(found, notes=tuple(notes))


class _Unwalkable(Exception):
    pass


def _full_history(run: Any, seen: set[str]) -> list[Step]:
    from console.pages.runview import machine_of
    from engine.models import JournalEntry

    machine = machine_of(run.workflow)
    if machine is None:
        raise _Unwalkable(f'its workflow "{run.workflow}" does not load here')
    if machine.digest != run.digest:
        raise _Unwalkable(f'its workflow "{run.workflow}" changed shape since it was written')
    journal = list(JournalEntry.objects.filter(run=run).order_by("seq").values("seq", "entry"))
    try:
        own = history_of(run.id, machine, journal)
    except SessionError as err:
        raise _Unwalkable(f"its journal does not replay on the workflow: {err}") from err
    parent = run.parent
    if (
        parent is None
        or run.parent_step is None
        or parent.id in seen
        or not journal
        or journal[0]["entry"].get("kind") != "fork"
    ):
        return own
    try:
        inherited = _full_history(parent, seen | {run.id})
    except _Unwalkable:
        return own
    return forked_history(parent.id, inherited, run.parent_step, own)
