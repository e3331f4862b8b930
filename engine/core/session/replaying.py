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
from engine.core.session.errors import SessionError
from engine.core.session.ports import SessionPort
from engine.core.statechart.clock import SimulatedClock
from engine.core.workflow import Machine

__all__ = ["replay_journal", "apply_entry"]

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
    apply = _APPLY.get(type(entry))
    if apply is None:
        raise SessionError(f"{where} has unknown kind {entry.kind!r}")
    mark = len(session.journal)
    if not apply(session, entry):
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


def _apply_pick(session: SessionPort, entry: Pick) -> bool:
    result = session.pick(entry.agent, entry.event, entry.params)
    return result.outcome == (entry.outcome or result.outcome)


def _apply_gate(session: SessionPort, entry: GateAnswer) -> bool:
    return session.send_gate(entry.gate, entry.event, entry.params).outcome == "delivered"


def _apply_effect_done(session: SessionPort, entry: EffectDone) -> bool:
    return session.effect_done(entry.effect, entry.output).outcome == "delivered"


def _apply_effect_failed(session: SessionPort, entry: EffectFailed) -> bool:
    return session.effect_failed(entry.effect, entry.error).outcome == "delivered"


def _apply_advance(session: SessionPort, entry: Advance) -> bool:
    session.advance(entry.ms)
    return True


def _apply_fault(session: SessionPort, entry: Fault) -> bool:
    session.fault(entry.agent, entry.reason)
    return True


def _apply_cancel(session: SessionPort, entry: Cancel) -> bool:
    session.cancel()
    return True


_APPLY: dict[type[Entry], Callable[[Any, Any], bool]] = {
    Pick: _apply_pick,
    GateAnswer: _apply_gate,
    EffectDone: _apply_effect_done,
    EffectFailed: _apply_effect_failed,
    Advance: _apply_advance,
    Fault: _apply_fault,
    Cancel: _apply_cancel,
}
