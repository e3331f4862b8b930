"""What a route may say beyond xstate: `answer(fn)` (what the Agent reads back) and the guard `sent_by(id)`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from engine.core.statechart.guards import BuiltinGuard, evaluate_guard

__all__ = ["Answer", "answer", "SentBy", "sent_by", "SeatGuard"]


class Answer:
    """An action whose value answers a pick: `fn` may read `context`, `event` and `chain`.

    It answers the pick of the Agent invoked by the nearest state at or above its transition's source;
    `create_machine` binds that Agent (`agent`) or refuses the Machine when there is none.
    """

    __name__ = "answer"

    def __init__(self, fn: Callable[..., Any], agent: str | None = None) -> None:
        if not callable(fn):
            raise TypeError(f"answer takes a callable of context/event/chain; got {fn!r}")
        self.fn = fn
        self.agent = agent

    def bound(self, agent: str) -> Answer:
        return Answer(self.fn, agent)

    def __call__(self) -> None:
        """Outside a Session (a plain Actor) an answer has nobody to tell."""

    def __repr__(self) -> str:
        return f"answer(agent={self.agent!r})"


def answer(fn: Callable[..., Any]) -> Answer:
    return Answer(fn)


class SentBy:
    """True for an event from the party `id` (an Agent slot or a Gate's invoke id) or with no Sender."""

    __name__ = "sent_by"

    def __init__(self, party_id: str) -> None:
        self.party_id = party_id

    def __call__(self, event: Any) -> bool:
        sender = event.get("sender") if hasattr(event, "get") else None
        return sender is None or sender.get("id") == self.party_id

    def __repr__(self) -> str:
        return f"sent_by({self.party_id!r})"


def sent_by(party_id: str) -> SentBy:
    return SentBy(party_id)


class SeatGuard(BuiltinGuard):
    """The seat rule as a guard, put first on every transition of a listed event: an event a party delivers is
    taken only through an `on` key that party may send (its own, or one `audience` gives it). Events with no
    Sender (the Machine's own, the host's) always pass. A failing seat lets xstate try the next transition."""

    __name__ = "seat"
    type = "jr2.seat"

    def __init__(self, senders: frozenset[tuple[str, str]], guard: Any = None) -> None:
        self.senders = senders
        self.guard = guard

    def check(self, snapshot: Any, context: Any, event: Any) -> bool:
        sender = event.get("sender") if hasattr(event, "get") else None
        if sender is not None and (sender.get("party"), sender.get("id")) not in self.senders:
            return False
        return self.guard is None or evaluate_guard(self.guard, context, event, snapshot)

    def __repr__(self) -> str:
        return f"seat({sorted(self.senders)}, {self.guard!r})"
