"""Walk a recorded journal through a Session, one step at a time, and see where each step left the run.

    for step in trace(machine, journal):        # database or API rows, or bare Session entries
        step.seq, step.entry, step.outputs      # what the entry produced this time
        step.session                            # the Session right after it (the same object at every step)

One walker for everything that reads a run step by step without a host: a fork (the Session at step N), the
compare view (states, answers and context per step) and the timeline (when Gates opened and closed, timers). A
journal starts with its `start` entry, or with a `fork` entry that carries the Session the fork started from
(engine/core/journal/forking.py). Entries a host writes for itself (`HOST_KINDS`) are yielded with no outputs. An entry that
does not apply as recorded raises `SessionError` (engine/core/journal/replay.py is the walker that explains divergences).

Pure: no Django, no I/O.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Mapping

from pydantic import ValidationError

from engine.core.statechart.clock import SimulatedClock

from engine.core.outputs import Output
from engine.core.session import HOST_KINDS, Session, SessionError
from engine.core.words import validation_text
from engine.core.workflow import Machine

__all__ = ["TraceStep", "trace", "trace_on", "numbered", "start_session", "ROOT_KINDS"]

#: The kinds a journal may start with.
ROOT_KINDS = ("start", "fork")


@dataclass
class TraceStep:
    seq: int
    entry: Mapping[str, Any]
    outputs: list[Output]
    session: Session


def numbered(journal: Iterable[Mapping[str, Any]]) -> list[tuple[int, Mapping[str, Any]]]:
    """(seq, entry) for database or API rows (`{"seq", "entry", ...}`) and for bare Session entries alike."""
    out: list[tuple[int, Mapping[str, Any]]] = []
    for index, item in enumerate(journal, start=1):
        if isinstance(item.get("entry"), Mapping):
            out.append((int(item.get("seq", index)), item["entry"]))
        else:
            out.append((index, item))
    return out


def start_session(machine: Machine, first: Mapping[str, Any]) -> Session:
    """The Session a journal's first entry starts: a new run from its door input, or a fork from the Session its
    entry carries. SessionError says why it cannot start on this Machine."""
    kind = first.get("kind")
    if kind == "fork":
        if not isinstance(first.get("session"), Mapping):
            raise SessionError("the fork entry carries no Session to start from")
        return Session.restore(machine, first["session"])
    if kind != "start":
        raise SessionError(f"a run's journal starts with a 'start' or 'fork' entry; this one starts with {kind!r}")
    try:
        return Session(machine, input=first.get("input"), clock=SimulatedClock(first.get("at", 0)))
    except ValidationError as err:
        raise SessionError(f"the door refuses the run's input now: {validation_text(err)}") from err


def trace(machine: Machine, journal: Iterable[Mapping[str, Any]], until: int | None = None) -> Iterator[TraceStep]:
    """Each entry of the journal (up to and including seq `until`) applied to one Session, in order."""
    entries = numbered(journal)
    if not entries:
        raise SessionError("the journal is empty")
    seq, first = entries[0]
    session = start_session(machine, first)
    yield TraceStep(seq, first, session.drain(), session)
    yield from trace_on(session, entries[1:], until)


def trace_on(session: Session, entries: Iterable[tuple[int, Mapping[str, Any]]],
             until: int | None = None) -> Iterator[TraceStep]:
    """Go on from `session`, where an earlier walk stopped, through the entries that came after it (a live run's
    new ones), as (seq, entry) pairs (`numbered`), each applied in order."""
    for seq, entry in entries:
        if until is not None and seq > until:
            return
        if entry.get("kind") in HOST_KINDS:
            yield TraceStep(seq, entry, [], session)
            continue
        session.apply(entry, seq)
        yield TraceStep(seq, entry, session.drain(), session)
