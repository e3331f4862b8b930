"""The journal's entries, one type per kind: what came into a run, in order, each with the time it came at.

    entry = Entry.from_json({"kind": "gate", "gate": "writing.asking", "event": "reply", ...})   # GateAnswer
    entry.to_json()             # the same JSON, key for key and in the same order: databases and exports load
    entry.describe()            # "the Gate writing.asking got reply {text: "Ops"}"
    KINDS["pick"] is Pick; Pick.kind == "pick"

A Session journals the inputs it accepts (a pick, a Gate's answer, an Effect's result, time passing, a fault, a
cancel) after its first entry (a run's `Start`, or a `Fork` that carries the Session it starts from). A host
also journals marks of its own that a Session skips on replay (`EffectStarted`). Every entry records `at`, the
Session's clock when it came, and `out`, a digest of what it produced, so a replay names the first entry whose
outputs differ. Entries are data: frozen, compared by value, JSON in and out. The tables the rest of the engine
needs (`KINDS`, `ROOT_KINDS`, `HOST_KINDS`, `INPUT_KINDS`) are derived from the types, so adding a kind is one
class here. Pure: no Django, no I/O.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from engine.core.words import brief, clock_text, door_words, duration_text, error_text

__all__ = [
    "Entry",
    "Start",
    "Fork",
    "Pick",
    "GateAnswer",
    "EffectStarted",
    "EffectDone",
    "EffectFailed",
    "Advance",
    "Fault",
    "Cancel",
    "Claim",
    "JournalError",
    "KINDS",
    "ROOT_KINDS",
    "HOST_KINDS",
    "INPUT_KINDS",
]


class JournalError(ValueError):
    """JSON that is not a journal entry: no kind, an unknown kind, or a missing field, in words."""


@dataclass(frozen=True, kw_only=True)
class Entry:
    """One journal entry. Subclasses list their fields in the order their JSON has them; `None` means absent."""

    kind: ClassVar[str] = ""
    #: The kinds a journal may start with.
    root: ClassVar[bool] = False
    #: Written by a host for itself; a Session skips it on replay.
    host: ClassVar[bool] = False
    #: Keys the JSON must have (beyond `kind`), so a truncated or hand-written entry is refused naming them.
    required: ClassVar[tuple[str, ...]] = ()

    #: Keys of the JSON this version does not know, kept so an entry written elsewhere goes out as it came in.
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def to_json(self) -> dict[str, Any]:
        """The entry as the journal stores it: `kind` first, then each field present, then unknown keys."""
        data: dict[str, Any] = {"kind": self.kind}
        for f in dataclasses.fields(self):
            if f.name == "extra":
                continue
            value = getattr(self, f.name)
            if value is not None or f.metadata.get("kept"):
                data[f.name] = value
        data.update(self.extra)
        return data

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> Entry:
        """The entry of its `kind`; JournalError names what is wrong with JSON that is not one."""
        if not isinstance(data, Mapping):
            raise JournalError(f"a journal entry is a JSON object; got {type(data).__name__}")
        kind = data.get("kind")
        cls = KINDS.get(kind) if isinstance(kind, str) else None
        if cls is None:
            raise JournalError(f"unknown kind {kind!r} (kinds: {', '.join(KINDS)})")
        missing = [key for key in cls.required if key not in data]
        if missing:
            article = "an" if cls.kind[0] in "aeiou" else "a"
            raise JournalError(f"{article} {cls.kind} entry has no {', '.join(missing)}")
        names = {f.name for f in dataclasses.fields(cls)} - {"extra"}
        known = {key: value for key, value in data.items() if key in names}
        extra = {key: value for key, value in data.items() if key not in names and key != "kind"}
        return cls(**known, extra=extra)

    def with_out(self, out: str) -> Entry:
        """The same entry with the digest of what it produced."""
        return dataclasses.replace(self, out=out)  # type: ignore[call-arg]

    def describe(self, slots: Mapping[str, str] | None = None) -> str:
        """The entry as a person reads it. `slots` names Effects by their slot when known."""
        return f"a {self.kind} entry"


def _kept() -> Any:
    """A field written even when it is null (a fork's unedited `context` is `null` in its JSON)."""
    return field(default=None, metadata={"kept": True})


@dataclass(frozen=True, kw_only=True)
class Start(Entry):
    """A run started with its door input."""

    kind: ClassVar[str] = "start"
    root: ClassVar[bool] = True
    input: Any = _kept()
    at: float = 0.0
    out: str | None = None

    def describe(self, slots: Mapping[str, str] | None = None) -> str:
        return f"the run started with {brief(self.input)}"


@dataclass(frozen=True, kw_only=True)
class Fork(Entry):
    """A run started from the Session another run had after one of its steps (engine/core/journal/forking.py)."""

    kind: ClassVar[str] = "fork"
    root: ClassVar[bool] = True
    required: ClassVar[tuple[str, ...]] = ("session",)
    parent: str = ""
    step: int = 0
    context: Any = _kept()
    session: Mapping[str, Any] = field(default_factory=dict)
    #: The Agents whose open Turn was restarted from the fork's context (their prompt rebuilt); None when none.
    restarted: Any = None
    at: float = 0.0
    out: str | None = None

    def describe(self, slots: Mapping[str, str] | None = None) -> str:
        edited = " with its context edited" if self.context is not None else ""
        restarted = (
            f", restarting the Turn of {', '.join(map(str, self.restarted))}"
            if isinstance(self.restarted, list)
            else ""
        )
        return f"forked from run {self.parent} at step {self.step}{edited}{restarted}"


@dataclass(frozen=True, kw_only=True)
class Pick(Entry):
    """An Agent's pick that the Session took in (its outcome: unmoved, answered, outstanding or ended); the host
    adds which tool call of which Turn made it, and who played the seat."""

    kind: ClassVar[str] = "pick"
    required: ClassVar[tuple[str, ...]] = ("agent", "event")
    agent: str
    event: str
    params: Any = _kept()
    outcome: str | None = None
    at: float = 0.0
    out: str | None = None
    call: str | None = None
    turn: str | None = None
    player: str | None = None

    def describe(self, slots: Mapping[str, str] | None = None) -> str:
        return f"{self.agent} picked {self.event} {brief(self.params or {})}"


@dataclass(frozen=True, kw_only=True)
class GateAnswer(Entry):
    """An event a Gate's caller sent, and (written by the host) the person who sent it."""

    kind: ClassVar[str] = "gate"
    required: ClassVar[tuple[str, ...]] = ("gate", "event")
    gate: str
    event: str
    params: Any = _kept()
    at: float = 0.0
    out: str | None = None
    by: str | None = None
    door: str | None = None

    def describe(self, slots: Mapping[str, str] | None = None) -> str:
        by = f" from {self.by}" if self.by else ""
        door = f" ({door_words(self.door)})" if self.door else ""
        return f"the Gate {self.gate} got {self.event} {brief(self.params or {})}{by}{door}"


def _effect_name(effect: str, slots: Mapping[str, str] | None) -> str:
    return f"{effect} ({slots[effect]})" if slots and effect in slots else effect


@dataclass(frozen=True, kw_only=True)
class EffectStarted(Entry):
    """The host started an Effect (its attempt): a mark of the host's, so a restart knows a non-idempotent Effect
    may have run."""

    kind: ClassVar[str] = "effect_started"
    host: ClassVar[bool] = True
    required: ClassVar[tuple[str, ...]] = ("effect",)
    effect: str
    slot: str = ""
    at: float = 0.0
    attempt: int = 1

    def describe(self, slots: Mapping[str, str] | None = None) -> str:
        attempt = int(self.attempt or 1)
        return f"{_effect_name(self.effect, slots)} started" + (f" (attempt {attempt})" if attempt > 1 else "")


@dataclass(frozen=True, kw_only=True)
class EffectDone(Entry):
    """An Effect finished with its output."""

    kind: ClassVar[str] = "effect_done"
    required: ClassVar[tuple[str, ...]] = ("effect",)
    effect: str
    output: Any = _kept()
    at: float = 0.0
    out: str | None = None

    def describe(self, slots: Mapping[str, str] | None = None) -> str:
        return f"{_effect_name(self.effect, slots)} finished"


@dataclass(frozen=True, kw_only=True)
class EffectFailed(Entry):
    """An Effect failed with its error."""

    kind: ClassVar[str] = "effect_failed"
    required: ClassVar[tuple[str, ...]] = ("effect",)
    effect: str
    error: Any = _kept()
    at: float = 0.0
    out: str | None = None

    def describe(self, slots: Mapping[str, str] | None = None) -> str:
        return f"{_effect_name(self.effect, slots)} failed: {error_text(self.error)}"


@dataclass(frozen=True, kw_only=True)
class Advance(Entry):
    """Time passed (`ms`): every timer that came due by then fired, in order."""

    kind: ClassVar[str] = "advance"
    required: ClassVar[tuple[str, ...]] = ("ms",)
    ms: float
    at: float = 0.0
    out: str | None = None

    def describe(self, slots: Mapping[str, str] | None = None) -> str:
        return f"{duration_text(float(self.ms or 0))} passed"


@dataclass(frozen=True, kw_only=True)
class Fault(Entry):
    """An Agent's Turn could not go on: `agent.fault` went into the Machine with the reason."""

    kind: ClassVar[str] = "fault"
    required: ClassVar[tuple[str, ...]] = ("agent", "reason")
    agent: str
    reason: str
    at: float = 0.0
    out: str | None = None

    def describe(self, slots: Mapping[str, str] | None = None) -> str:
        return f"{self.agent}'s Turn faulted: {self.reason}"


@dataclass(frozen=True, kw_only=True)
class Cancel(Entry):
    """The run was cancelled (and, written by the host, by whom, through which door, and why)."""

    kind: ClassVar[str] = "cancel"
    at: float = 0.0
    out: str | None = None
    by: str | None = None
    door: str | None = None
    reason: str | None = None

    def describe(self, slots: Mapping[str, str] | None = None) -> str:
        by = f" by {self.by}" if self.by else ""
        door = f" ({door_words(self.door)})" if self.door else ""
        why = f": {self.reason}" if self.reason else ""
        return f"the run was cancelled{by}{door}{why}"


@dataclass(frozen=True, kw_only=True)
class Claim(Entry):
    """A person claimed an open Gate until `until` (seconds since the epoch), released their claim, or an operator
    broke someone's (`holder`). A host's mark: claims say who may answer, and change nothing in the Session."""

    kind: ClassVar[str] = "claim"
    host: ClassVar[bool] = True
    required: ClassVar[tuple[str, ...]] = ("gate", "action", "by")
    gate: str
    #: "claim", "release" or "break".
    action: str
    by: str
    until: float | None = None
    holder: str | None = None
    door: str | None = None
    at: float = 0.0

    def describe(self, slots: Mapping[str, str] | None = None) -> str:
        door = f" ({door_words(self.door)})" if self.door else ""
        if self.action == "release":
            return f"{self.by} released the Gate {self.gate}{door}"
        if self.action == "break":
            return f"{self.by} broke {self.holder or 'a'}'s claim on the Gate {self.gate}{door}"
        until = f" until {clock_text(self.until)}" if self.until is not None else ""
        return f"{self.by} claimed the Gate {self.gate}{until}{door}"


#: Every kind of entry, by its JSON `kind`.
KINDS: dict[str, type[Entry]] = {
    cls.kind: cls
    for cls in (Start, Fork, Pick, GateAnswer, EffectStarted, EffectDone, EffectFailed, Advance, Fault, Cancel, Claim)
}
#: The kinds a journal starts with.
ROOT_KINDS: frozenset[str] = frozenset(kind for kind, cls in KINDS.items() if cls.root)
#: The kinds a host writes for itself, which a Session skips on replay.
HOST_KINDS: frozenset[str] = frozenset(kind for kind, cls in KINDS.items() if cls.host)
#: The kinds a Session takes as inputs after its first entry.
INPUT_KINDS: frozenset[str] = frozenset(KINDS) - ROOT_KINDS - HOST_KINDS
