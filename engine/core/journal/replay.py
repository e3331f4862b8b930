"""Replay a recorded run against a Machine, and say in words where it diverges.

    from engine.core.journal.replay import replay
    report = replay(machine, journal)     # journal: the run's entries, oldest first
    report.same                           # True when every entry applied the same way and produced the same outputs
    report.message                        # "same (7 steps)" or "step 7: writer picked done {notes: "…"}: now unmoved:
                                          # not allowed in notes.writing.drafting (allowed now: ask)"

A fresh `Session` of the Machine (for a fork, the Session its `fork` entry carries) is fed the recorded inputs in
order: the start (the door input), picks, Gate answers, Effect results, time passing, faults, a cancel. Nothing is
called: no model, no Effect; what they answered is in the journal. Entries a host writes for itself (`HOST_KINDS`: an
Effect having started) are skipped. Each entry must apply as it did (a pick's outcome, a Gate answer or an Effect
result delivered) and produce the same outputs (the digest in its `out`); the first one that does not is described:
the step number is the entry's `seq`, then the entry as a person reads it, then what happens now, at the state the
Session is in when the entry comes.

The journal may hold the rows of the database or the API (`{"seq", "kind", "entry", "out", ...}`) or the Session's
own entries (`{"kind", ..., "out"}`, numbered from 1). Pure: no Django, no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from pydantic import ValidationError

from engine.core.journal.entries import (
    HOST_KINDS,
    INPUT_KINDS,
    KINDS,
    Entry,
    GateAnswer,
    JournalError,
    Pick,
)
from engine.core.journal.trace import numbered, start_session
from engine.core.outputs import Delivery, DeliveryOutcome, Output, PickOutcome, PickResult
from engine.core.session import Session, SessionError
from engine.core.session.replaying import applied_as_recorded, feed
from engine.core.statechart.clock import SimulatedClock
from engine.core.words import brief, validation_text
from engine.core.workflow import Machine

__all__ = ["ReplayReport", "replay", "apply_said", "where_now", "describe", "brief", "state_paths", "numbered"]


@dataclass(frozen=True)
class ReplayReport:
    """What a replay found.

    same: every entry applied the same way; steps: how many entries were replayed (host-only marks not counted),
    up to and including the one that diverged; step: the `seq` of that entry (None when same); message: the
    verdict in one line; state: where the Machine was when that entry came ("" when same); entry: that entry.

    When the first divergence is only in the outputs (the entry applied, but what it produced differs: another
    answer, other Allowed picks, a Gate that no longer opens), the replay goes on to the first entry that no
    longer applies at all, and `later` describes it (the message then reads "...; later, step 9: ...")."""

    same: bool
    steps: int
    step: int | None = None
    message: str = ""
    state: str = ""
    entry: Mapping[str, Any] | None = None
    later: str = ""

    def __str__(self) -> str:
        return self.message


def replay(machine: Machine, journal: Iterable[Mapping[str, Any]]) -> ReplayReport:
    """Feed the recorded journal to a fresh Session of `machine`; the first entry that does not apply the same way
    or produces different outputs is described (see the module docstring). Raises ValueError for a journal that
    is not a run's journal (empty, no start entry first, an unknown kind)."""
    entries = numbered(journal)
    if not entries or entries[0][1].get("kind") not in ("start", "fork"):
        raise ValueError(
            "a run's journal starts with its 'start' entry; this one "
            + ("is empty" if not entries else f"starts with {entries[0][1].get('kind')!r}")
        )
    seq, start = entries[0]
    root = machine.id
    try:
        if start.get("kind") == "fork":
            session = start_session(machine, start)
        else:
            session = Session(machine, input=start.get("input"), clock=SimulatedClock(start.get("at", 0)))
    except SessionError as err:
        return _diverged(1, seq, start, f"now cannot start from there: {err}", root)
    except ValidationError as err:
        return _diverged(1, seq, start, f"now refused: the door says {validation_text(err)}", root)
    except Exception as err:
        return _diverged(1, seq, start, f"now raises {type(err).__name__}: {err}", root)
    outputs = session.drain()
    first: ReplayReport | None = None
    if session.journal and _differs(start, getattr(session.journal[0], "out", None)):
        first = _diverged(1, seq, start, _different_outputs(outputs, session), root)
    steps = 1
    for seq, entry in entries[1:]:
        kind = entry.get("kind")
        if kind in HOST_KINDS:
            continue
        steps += 1
        where = where_now(session)
        if kind not in INPUT_KINDS:
            raise ValueError(f"journal entry {seq} has an unknown kind {kind!r}")
        missing = [key for key in KINDS[kind].required if key not in entry]
        if missing:
            raise ValueError(f"journal entry {seq} ({kind}) has no {', '.join(missing)}")
        if session.status != "active":
            now: str | None = f"now the run has already ended ({session.status}) before this step"
        else:
            mark = len(session.journal)
            try:
                now = apply_said(session, Entry.from_json(entry), where)
            except Exception as err:
                now = f"now raises {type(err).__name__}: {err}"
            outputs = session.drain()
            got = getattr(session.journal[mark], "out", None) if mark < len(session.journal) else None
            if now is None and _differs(entry, got):
                if first is None:
                    first = _diverged(steps, seq, entry, _different_outputs(outputs, session), where)
                continue
        if now is not None:
            report = _diverged(steps, seq, entry, now, where)
            if first is None:
                return report
            return replace(first, message=f"{first.message}; later, {report.message}", later=report.message)
    if first is not None:
        return replace(first, message=f"{first.message}; every later entry still applies")
    return ReplayReport(True, steps, message=f"same ({steps} step{'s' if steps != 1 else ''})")


def apply_said(session: Session, entry: Entry, where: str, *, moved: bool = False) -> str | None:
    """Apply one entry (the Session's own feed, by the entry's type); what differs now in words, or None when it
    applied as recorded (outputs not yet compared). With `moved`, a pick that records no outcome must still move
    the Machine (a scenario's pick): unmoved or refused is a divergence, said in the same words."""
    before = session.allowed_picks(entry.agent) if isinstance(entry, Pick) else []
    result = feed(session, entry)
    unmoved = (
        moved
        and isinstance(entry, Pick)
        and entry.outcome is None
        and isinstance(result, PickResult)
        and result.outcome in (PickOutcome.UNMOVED, PickOutcome.REFUSED)
    )
    if applied_as_recorded(entry, result) and not unmoved:
        return None
    if isinstance(result, PickResult) and isinstance(entry, Pick):
        if result.outcome == PickOutcome.REFUSED:
            return f"now refused in {where}: {result.error}"
        if result.outcome == PickOutcome.UNMOVED:
            if entry.event not in before:
                allowed = ", ".join(before) or "nothing"
                return f"now unmoved: not allowed in {where} (allowed now: {allowed})"
            return f"now unmoved: the Machine did not take it with this input in {where} (a guard said no)"
        return f"now {result.outcome} where it was {entry.outcome}"
    assert isinstance(result, Delivery)
    if result.outcome == DeliveryOutcome.UNMOVED and isinstance(entry, GateAnswer):
        return f'now unmoved: the Machine takes no "{entry.event}" in {where}'
    return f"now refused in {where}: {result.error}"


def _differs(entry: Mapping[str, Any], got: Any) -> bool:
    expected = entry.get("out")
    return bool(expected) and got != expected


def _diverged(steps: int, seq: int, entry: Mapping[str, Any], now: str, where: str) -> ReplayReport:
    return ReplayReport(False, steps, seq, f"step {seq}: {describe(entry)}: {now}", where, entry)


def where_now(session: Session) -> str:
    """Where the Session is, as replay names it: its active states as dotted paths."""
    return ", ".join(state_paths(session.machine.id, session.value)) or session.machine.id


def _different_outputs(outputs: list[Output], session: Session) -> str:
    said = [o.words() for o in outputs]
    said = [s for s in said if s]
    if len(said) > 6:
        said = said[:6] + [f"and {len(said) - 6} more"]
    what = "; ".join(said) if said else "nothing"
    return f"now produces different outputs (now: {what}; then in {where_now(session)})"


# -- words for journal entries ----------------------------------------------------------------------------------


def describe(entry: Mapping[str, Any] | Entry, slots: Mapping[str, str] | None = None) -> str:
    """A journal entry as a person reads it: "writer picked done {notes: "…"}", "the Gate writing.asking got reply
    {text: "Ops"}", "effect-2 finished", "300 ms passed" (each kind says its own words: entries.py). `slots`
    names Effects by their slot when known."""
    if isinstance(entry, Entry):
        return entry.describe(slots)
    try:
        return Entry.from_json(entry).describe(slots)
    except JournalError:
        return f"a {entry.get('kind')} entry"


def state_paths(root: str, value: Any) -> list[str]:
    """A statechart value as dotted paths from the root: {"writing": "asking"} -> ["notes.writing.asking"]; one
    path per active region."""
    if isinstance(value, str):
        return [f"{root}.{value}"]
    if isinstance(value, Mapping) and value:
        paths: list[str] = []
        for key, child in value.items():
            paths.extend(state_paths(f"{root}.{key}", child) if child else [f"{root}.{key}"])
        return paths
    return [root]
