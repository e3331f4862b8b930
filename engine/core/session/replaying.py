"""A Session fed a recorded journal again: a whole run (`replay_journal`), or one entry at a time (`apply_entry`,
for a restored run's journal tail and the walkers of engine/core/journal/). Each kind of entry is applied by its
own function, chosen by the entry's type, as Temporal's workflow instance applies each job. An entry that does
not apply the same way, or produces different outputs (its `out` digest), raises SessionError naming it."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from engine.core.journal.entries import (
    Advance,
    Cancel,
    EffectDone,
    EffectFailed,
    Entry,
    Fault,
    GateAnswer,
    JournalError,
    Pick,
    Start,
)
from engine.core.outputs import Delivery, DeliveryOutcome, PickResult
from engine.core.session.errors import SessionError
from engine.core.session.ports import SessionPort
from engine.core.statechart.clock import SimulatedClock
from engine.core.workflow import Machine

__all__ = ["replay_journal", "apply_entry", "feed", "applied_as_recorded"]

S = TypeVar("S", bound=SessionPort)


def replay_journal(cls: Callable[..., S], machine: Machine, journal: Sequence[Mapping[str, Any] | Entry]) -> S:
    """A new Session of `cls` fed the journal's inputs; SessionError names the first entry that does not apply."""
    head = journal[0] if journal else None
    first = head if isinstance(head, Entry) or head is None or head.get("kind") != "start" else _entry(head, 0)
    if not isinstance(first, Start):
        raise SessionError("a journal starts with its 'start' entry")
    session = cls(machine, input=first.input, clock=SimulatedClock(first.at))
    check_outputs(session, 0, first)
    for index, entry in enumerate(journal[1:], start=1):
        apply_entry(session, entry, index)
    return session


def apply_entry(session: SessionPort, data: Mapping[str, Any] | Entry, index: int | None = None) -> None:
    """Feed one recorded entry again. Entries a host writes for itself (an Effect having started) change
    nothing here."""
    where = f"journal entry {index}" if index is not None else "a journal entry"
    entry = data if isinstance(data, Entry) else _entry(data, index)
    if entry.host:
        return
    if type(entry) not in _FEED:
        raise SessionError(f"{where} has unknown kind {entry.kind!r}")
    mark = len(session.journal)
    if not applied_as_recorded(entry, feed(session, entry)):
        text = json.dumps(entry.to_json(), default=str)[:200]
        raise SessionError(
            f"{where} ({entry.kind}: {text}) did not apply the same way on replay: the Machine or the run diverged here"
        )
    check_outputs(session, mark, entry, where)


def check_outputs(session: SessionPort, mark: int, recorded: Entry, where: str | None = None) -> None:
    """The entry the Session journaled at `mark` produced what `recorded` did (when it recorded a digest)."""
    expected = getattr(recorded, "out", None)
    got = getattr(session.journal[mark], "out", None) if mark < len(session.journal) else None
    if expected is not None and got != expected:
        raise SessionError(
            f"{where or f'journal entry {mark}'} ({recorded.kind}) produced different outputs on "
            "replay: the Machine or the run diverged here"
        )


def _entry(data: Mapping[str, Any], index: int | None) -> Entry:
    try:
        return Entry.from_json(data)
    except JournalError as err:
        where = f"journal entry {index}" if index is not None else "a journal entry"
        kind = data.get("kind") if isinstance(data, Mapping) else None
        if "unknown kind" in str(err):
            raise SessionError(f"{where} has unknown kind {kind!r}") from err
        raise SessionError(f"{where}: {err}") from err


def feed(session: SessionPort, entry: Entry) -> PickResult | Delivery | None:
    """Give the Session the input a recorded entry holds, by the function of the entry's type; what it got back
    (a pick's result, a delivery), or None for time passing, a fault or a cancel. KeyError for a kind that is no
    input (a start, a fork, a host's mark)."""
    return _FEED[type(entry)](session, entry)


def applied_as_recorded(entry: Entry, result: PickResult | Delivery | None) -> bool:
    """Whether the input went in as it did when it was recorded: a pick with its outcome, a delivery delivered."""
    if isinstance(result, PickResult):
        return result.outcome == ((entry.outcome if isinstance(entry, Pick) else None) or result.outcome)
    return result is None or result.outcome == DeliveryOutcome.DELIVERED


def _feed_advance(session: SessionPort, entry: Advance) -> None:
    session.advance(float(entry.ms))


def _feed_fault(session: SessionPort, entry: Fault) -> None:
    session.fault(entry.agent, entry.reason)


def _feed_cancel(session: SessionPort, entry: Cancel) -> None:
    session.cancel()


_FEED: dict[type[Entry], Callable[[Any, Any], Any]] = {
    Pick: lambda session, e: session.pick(e.agent, e.event, e.params),
    GateAnswer: lambda session, e: session.send_gate(e.gate, e.event, e.params),
    EffectDone: lambda session, e: session.effect_done(e.effect, e.output),
    EffectFailed: lambda session, e: session.effect_failed(e.effect, e.error),
    Advance: _feed_advance,
    Fault: _feed_fault,
    Cancel: _feed_cancel,
}
