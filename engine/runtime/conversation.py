"""One conversation of an Agent in a run, as the runtime keeps it in memory: the messages sent to its model and
said by it, each with the record that writes it.

Turns that continue (`"continue": True`) share an Agent's conversation; a reroll starts a fresh one. The driver
owns the conversations of a run (a resume rebuilds them from their recorded messages); the Turn loop and the step
plan (engine/runtime/plan.py) append to them, and every append returns the `store.Message` that records it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from engine.core.text import without_nul
from engine.runtime import store

__all__ = ["Conversation"]


@dataclass
class Conversation:
    """One conversation of an Agent in a run: its messages (the neutral form, plus `kind` and `turn` for the
    record) and the sequence number of the last one written."""

    id: str
    messages: list[dict[str, Any]] = field(default_factory=list)
    seq: int = 0

    def add(self, turn: str, role: str, kind: str, content: list[dict[str, Any]]) -> store.Message:
        """Append a message and return the record that writes it (with its sequence number). A tool's result (a
        workspace file, say) may hold the NUL character: replaced (engine/core/text.py), as the model's reply is."""
        content = without_nul(content)
        self.seq += 1
        self.messages.append({"role": role, "content": content, "kind": kind, "turn": turn})
        return store.Message(turn, self.id, self.seq, role, kind, content)

    def sent(self) -> list[dict[str, Any]]:
        return [{"role": m["role"], "content": m["content"]} for m in self.messages]

    def unanswered_calls(self) -> list[dict[str, Any]]:
        """The tool calls of the last reply that have no tool result yet (a host stopped between them)."""
        last_reply = max((i for i, m in enumerate(self.messages) if m["role"] == "assistant"), default=None)
        if last_reply is None:
            return []
        answered = {
            block.get("tool_use_id")
            for m in self.messages[last_reply + 1 :]
            for block in m["content"]
            if block.get("type") == "tool_result"
        }
        return [
            block
            for block in self.messages[last_reply]["content"]
            if block.get("type") == "tool_use" and block.get("id") not in answered
        ]

    def waits_for_model(self) -> bool:
        """True when the last message is not the model's: the next step is to ask it."""
        return bool(self.messages) and self.messages[-1]["role"] != "assistant"
