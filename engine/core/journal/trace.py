"""Walk a recorded journal through a Session, one step at a time, and see where each step left the run.

    for step in trace(machine, journal):        # database or API rows, or bare Session entries
        step.seq, step.entry, step.outputs      # what the entry produced this time
        step.session                            # the Session right after it (the same object at every step)

One walker for everything that reads a run step by step without a host: a fork (the Session at step N), the compare
view (states, answers and context per step) and the timeline (when Gates opened and closed, timers). A journal starts
with its `start` entry, or with a `fork` entry that carries the Session the fork started from
(engine/core/journal/forking.py). Entries a host writes for itself (`HOST_KINDS`) are yielded with no outputs. An
entry that does not apply as recorded raises `SessionError` (engine/core/journal/replay.py is the walker that explains
divergences).

Pure: no Django, no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from engine.core.journal.entries import ROOT_KINDS, Entry, Fork, JournalError, Start
from engine.core.outputs import Output
from engine.core.session import Session, SessionError
from engine.core.statechart.clock import SimulatedClock
from engine.core.words import validation_text
from engine.core.workflow import Machine

__all__ = ["TraceStep", "trace", "trace_on", "numbered", "start_session", "typed", "ROOT_KINDS"]


@dataclass
class TraceStep:
    seq: int
    entry: Entry
    outputs: list[Output]
    session: Session


def numbered(journal: Iterable[Mapping[str, Any]]) -> list[tuple[int, Mapping[str, Any]]]:
    """(seq, entry) for database or API rows (`{"seq", "entry", ...}`) and for bare Session entries alike."""
    out: list[tuple[int, Mapping[str, Any]]] = []
    for index, item in enumerate(journal, start=1):
        if isinstance(item, Entry):
            out.append((index, item.to_json()))
        elif isinstance(item.get("entry"), (Mapping, Entry)):
            row = item["entry"]
            out.append((int(item.get("seq", index)), row.to_json() if isinstance(row, Entry) else row))
        else:
            out.append((index, item))
    return out


def typed(entry: Mapping[str, Any] | Entry, seq: int | None = None) -> Entry:
    """A recorded entry as its type; SessionError names one that is no journal entry."""
    if isinstance(entry, Entry):
        return entry
    try:
        return Entry.from_json(entry)
    except JournalError as err:
        raise SessionError(f"journal entry {seq}: {err}" if seq is not None else str(err)) from err


def start_session(machine: Machine, first: Mapping[str, Any] | Entry) -> Session:
    """The Session a journal's first entry starts: a new run from its door input, or a fork from the Session its
    entry carries. SessionError says why it cannot start on this Machine."""
    kind = first.kind if isinstance(first, Entry) else first.get("kind")
    if kind not in ROOT_KINDS:
        raise SessionError(f"a run's journal starts with a 'start' or 'fork' entry; this one starts with {kind!r}")
    if kind == "fork" and not isinstance(first, Entry) and not isinstance(first.get("session"), Mapping):
        raise SessionError("the fork entry carries no Session to start from")
    root = typed(first, 1)
    if isinstance(root, Fork):
        return Session.restore(machine, root.session)
    assert isinstance(root, Start)
    try:
        return Session(machine, input=root.input, clock=SimulatedClock(root.at))
    except ValidationError as err:
        raise SessionError(f"the door refuses the run's input now: {validation_text(err)}") from err


def trace(machine: Machine, journal: Iterable[Mapping[str, Any]], until: int | None = None) -> Iterator[TraceStep]:
    """Each entry of the journal (up to and including seq `until`) applied to one Session, in order."""
    entries = numbered(journal)
    if not entries:
        raise SessionError("the journal is empty")
    seq, first = entries[0]
    session = start_session(machine, first)
    yield TraceStep(seq, typed(first, seq), session.drain(), session)
    yield from trace_on(session, entries[1:], until)


def trace_on(
    session: Session, entries: Iterable[tuple[int, Mapping[str, Any]]], until: int | None = None
) -> Iterator[TraceStep]:
    """Go on from `session`, where an earlier walk stopped, through the entries that came after it (a live run's
    new ones), as (seq, entry) pairs (`numbered`), each applied in order."""
    for seq, data in entries:
        if until is not None and seq > until:
            return
        entry = typed(data, seq)
        if entry.host:
            yield TraceStep(seq, entry, [], session)
            continue
        session.apply(entry, seq)
        yield TraceStep(seq, entry, session.drain(), session)
