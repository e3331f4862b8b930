"""How a host's Turn loop treats a model that stops without a pick or runs away (SPEC.md 4, the Turn protocol).

- A reply that ends without a pick while the state still waits is re-prompted on the same conversation, at most
  `max_reprompts` times; then the Turn faults.
- A runaway Turn (more than `max_tool_calls` calls, or the same call `max_repeats` times in a row while it moves
  nothing) is ended and rerolled once (a fresh conversation, same prompt); the second time it faults.
- A fault is the host's `session.fault(agent, reason)`: `agent.fault` goes into the Machine with the reason.

This is conversation bookkeeping, so it lives beside the Session, not in it: a refused pick still changes nothing
in the run. It is pure: the host feeds it what the model did and follows its verdicts.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from engine.core.outputs import PickResult
from engine.core.prompts import reprompt_message

__all__ = ["TurnPolicy", "TurnWatch", "Verdict"]


@dataclass(frozen=True)
class Verdict:
    """What the host does next: `reprompt` (send `message`), `reroll` (start the Turn's conversation again) or
    `fault` (call `session.fault(agent, reason)`)."""

    action: Literal["reprompt", "reroll", "fault"]
    reason: str
    message: str = ""


@dataclass(frozen=True)
class TurnPolicy:
    max_reprompts: int = 2
    max_tool_calls: int = 40
    max_repeats: int = 3

    def watch(self) -> TurnWatch:
        """A fresh watch for one Turn."""
        return TurnWatch(self)


class TurnWatch:
    """Counts one Turn's re-prompts and tool calls."""

    def __init__(self, policy: TurnPolicy) -> None:
        self.policy = policy
        self.reprompts = 0
        self.calls = 0
        self.repeats = 0
        self.rerolled = False
        self._last_call: str | None = None

    def reply_without_pick(self, allowed: Iterable[str]) -> Verdict:
        """The model's reply ended without a pick while the Turn's state still waits."""
        self.reprompts += 1
        if self.reprompts <= self.policy.max_reprompts:
            return Verdict(
                "reprompt", f"re-prompt {self.reprompts} of {self.policy.max_reprompts}", reprompt_message(allowed)
            )
        return Verdict(
            "fault", f"the Agent ended its reply without a pick {self.reprompts} times while its state waited"
        )

    def call(self, event: str, params: Any) -> Verdict | None:
        """A tool call, before it goes to the Session: None to send it, or a reroll/fault verdict (then do not)."""
        self.calls += 1
        key = json.dumps([event, params], sort_keys=True, default=str)
        self.repeats = self.repeats + 1 if key == self._last_call else 1
        self._last_call = key
        reason = None
        if self.calls > self.policy.max_tool_calls:
            reason = f"more than {self.policy.max_tool_calls} tool calls in one Turn"
        elif self.repeats >= self.policy.max_repeats:
            reason = f'the same call ("{event}" with the same input) {self.repeats} times in a row'
        if reason is None:
            return None
        if self.rerolled:
            return Verdict("fault", f"runaway Turn after a reroll: {reason}")
        self.rerolled = True
        self.calls, self.repeats, self.reprompts, self._last_call = 0, 0, 0, None
        return Verdict("reroll", f"runaway Turn: {reason}")

    def result(self, result: PickResult) -> None:
        """What the Session answered: a call that moved the Machine is not a repeat of a stuck one."""
        if result.outcome in ("answered", "outstanding", "ended"):
            self.repeats, self._last_call = 0, None
