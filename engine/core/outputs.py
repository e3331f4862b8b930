"""What a Session asks of its host and tells the world, as data (`session.drain()`)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any

from engine.core.prompts import allowed_line, answer_message, ended_message
from engine.core.words import brief

__all__ = [
    "Output",
    "TurnStarted",
    "TurnEnded",
    "PickAnswered",
    "PickStopped",
    "NoticeKept",
    "GateOpened",
    "GateClosed",
    "EffectRequested",
    "EffectCancelled",
    "RunEnded",
    "PickResult",
    "Delivery",
    "AllowedChanged",
]


@dataclass(frozen=True)
class Output:
    @property
    def kind(self) -> str:
        return type(self).__name__

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, **asdict(self)}

    def words(self) -> str:
        """What this output says happens, as a person reads it (a replay's "now ...", a comparison's answers);
        empty for outputs a person need not read."""
        return ""


@dataclass(frozen=True)
class TurnStarted(Output):
    """A Turn begins: `system` and `message` are what the model reads first (engine/core/prompts.py)."""

    turn: str
    agent: str
    state: str
    prompt: str
    continues: bool
    dials: dict[str, Any]
    notices: tuple[str, ...]
    allowed: tuple[str, ...]
    system: str = ""
    message: str = ""

    def words(self) -> str:
        return f"{self.agent}'s Turn starts in {self.state} (allowed: {', '.join(self.allowed) or 'nothing'})"


@dataclass(frozen=True)
class TurnEnded(Output):
    turn: str
    agent: str
    state: str

    def words(self) -> str:
        return f"{self.agent}'s Turn ends"


@dataclass(frozen=True)
class PickAnswered(Output):
    """An outstanding pick's answer; `message` is the answer then the Allowed picks read after its route."""

    turn: str
    pick: str
    event: str
    answer: Any
    allowed: tuple[str, ...]
    message: str = ""

    def words(self) -> str:
        return f"the pick {self.event} is answered {brief(self.answer)} (allowed then: {_names(self.allowed)})"


@dataclass(frozen=True)
class AllowedChanged(Output):
    """The Allowed picks of a Turn changed while its Agent worked; it reads them before its next step."""

    turn: str
    agent: str
    allowed: tuple[str, ...]
    message: str

    def words(self) -> str:
        return f"{self.agent}'s Allowed picks become [{', '.join(self.allowed)}]"


@dataclass(frozen=True)
class PickStopped(Output):
    """The pick's work stopped because something else left the Agent's state: it did not finish."""

    turn: str
    pick: str
    event: str
    answer: str

    def words(self) -> str:
        return f"the pick {self.event} stops unfinished"


@dataclass(frozen=True)
class NoticeKept(Output):
    """An answer kept for the next Turn of `agent` that continues the conversation."""

    agent: str
    turn: str
    notice: Any

    def words(self) -> str:
        return f"a notice is kept for {self.agent}: {brief(self.notice)}"


@dataclass(frozen=True)
class GateOpened(Output):
    gate: str
    state: str
    accepts: tuple[str, ...]
    meta: dict[str, Any]

    def words(self) -> str:
        return f"the Gate {self.gate} opens (accepts {', '.join(self.accepts) or 'nothing'})"


@dataclass(frozen=True)
class GateClosed(Output):
    gate: str
    state: str

    def words(self) -> str:
        return f"the Gate {self.gate} closes"


@dataclass(frozen=True)
class EffectRequested(Output):
    effect: str
    slot: str
    effect_kind: str
    spec: dict[str, Any]
    input: Any
    idempotent: bool
    state: str

    def words(self) -> str:
        return f"{self.effect} ({self.slot}) is asked for"


@dataclass(frozen=True)
class EffectCancelled(Output):
    effect: str
    slot: str

    def words(self) -> str:
        return f"{self.effect} ({self.slot}) is cancelled"


@dataclass(frozen=True)
class RunEnded(Output):
    status: str
    output: Any = None
    reason: str | None = None

    def words(self) -> str:
        if self.status == "failed":
            return f"the run fails: {self.reason}"
        return (
            f"the run ends {self.status}"
            + (f" with {brief(self.output)}" if self.output is not None else "")
            + (f": {self.reason}" if self.reason else "")
        )


class PickOutcome(StrEnum):
    """What became of a pick: refused (nothing changed), unmoved (on the Menu, not taken now), answered (its
    work done at once), outstanding (its work runs), ended (it left the Agent's state: the Turn is over)."""

    REFUSED = "refused"
    UNMOVED = "unmoved"
    ANSWERED = "answered"
    OUTSTANDING = "outstanding"
    ENDED = "ended"


class DeliveryOutcome(StrEnum):
    """What became of a Gate's event or an Effect's result: delivered, unmoved (no transition takes it now) or
    refused."""

    DELIVERED = "delivered"
    UNMOVED = "unmoved"
    REFUSED = "refused"


class RunState(StrEnum):
    """A Session's status: active until it ends done, failed or cancelled."""

    ACTIVE = "active"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"


@dataclass(frozen=True)
class PickResult:
    """What a pick got back at once."""

    outcome: PickOutcome
    answer: Any = None
    allowed: tuple[str, ...] = ()
    error: str | None = None
    pick: str | None = None

    def text(self) -> str:
        """What the Agent reads back: the answer (or why nothing moved), then the Allowed picks."""
        if self.outcome == "answered":
            return answer_message(self.answer, self.allowed)
        if self.outcome == "ended":
            return ended_message(self.answer)
        if self.outcome == "outstanding":
            return f"The pick is working; its answer comes when its work is done.\n\n{allowed_line(())}"
        return f"{self.error}\n\n{allowed_line(self.allowed)}"


@dataclass(frozen=True)
class Delivery:
    """What a Gate event or an Effect result got back at once: delivered, unmoved or refused. A refusal's `code`
    says why, for a host to map: "ended" (the run ended), "no-gate" (no such open Gate), "not-accepted" (the Gate
    does not take that event), "invalid" (the input failed), "no-effect" (no such running Effect)."""

    outcome: DeliveryOutcome
    error: str | None = None
    accepts: tuple[str, ...] = field(default_factory=tuple)
    code: str = ""


def _names(allowed: Iterable[str]) -> str:
    return ", ".join(allowed) or "nothing"
