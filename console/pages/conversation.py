"""A Turn's conversation as a person reads it: its messages and model calls as lines (prompts, replies, picks,
their answers or refusals, workspace calls), for the run page, its feeds and the replay page."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from engine.core.workspace import TOOL_NAMES
from engine.models import ModelCall, TurnMessage, TurnRecord

__all__ = ["Line", "TurnView", "conversation_lines"]


@dataclass
class Line:
    """One line of a conversation, as a person reads it."""

    kind: str  # prompt, reply, pick, answer, refusal, note, workspace, workspace_answer,
    # workspace_refused
    text: str = ""
    name: str = ""
    input: str = ""
    call: dict[str, Any] | None = None


@dataclass
class TurnView:
    record: TurnRecord
    lines: list[Line]
    calls: int
    latency_ms: float


def conversation_lines(messages: list[TurnMessage], calls: list[ModelCall]) -> list[Line]:
    """The conversation as lines. A call of a workspace tool (answered by a "workspace" message, or not answered
    yet and named like one) is a line of its own kind, never shown as a pick."""
    lines: list[Line] = []
    replies = iter(calls)
    answered = {block.get("tool_use_id") for m in messages for block in m.content if block.get("type") == "tool_result"}
    in_workspace = {
        block.get("tool_use_id")
        for m in messages
        if m.kind == "workspace"
        for block in m.content
        if block.get("type") == "tool_result"
    }
    for message in messages:
        if message.kind == "reply":
            call = next(replies, None)
            info = (
                None
                if call is None
                else {
                    "model": call.model,
                    "scripted": call.scripted,
                    "latency_ms": call.latency_ms,
                    "input": call.input_tokens,
                    "output": call.output_tokens,
                    "cache_read": call.cache_read_tokens,
                    "stop": call.stop_reason,
                }
            )
            for block in message.content:
                if block.get("type") == "text" and block.get("text"):
                    lines.append(Line("reply", text=block["text"], call=info))
                elif block.get("type") == "tool_use":
                    name = str(block.get("name", ""))
                    workspace = block.get("id") in in_workspace or (
                        name in TOOL_NAMES and block.get("id") not in answered
                    )
                    lines.append(
                        Line(
                            "workspace" if workspace else "pick",
                            name=name,
                            call=info,
                            input=block.get("raw") or json.dumps(block.get("input"), indent=1, ensure_ascii=False),
                        )
                    )
                info = None
            continue
        for block in message.content:
            if block.get("type") == "tool_result":
                if message.kind == "workspace":
                    kind = "workspace_refused" if block.get("is_error") else "workspace_answer"
                else:
                    kind = "refusal" if block.get("is_error") else "answer"
                lines.append(Line(kind, text=str(block.get("content", ""))))
            elif block.get("type") == "text":
                kind = {"prompt": "prompt", "allowed_changed": "note", "reprompt": "note"}.get(message.kind, "note")
                lines.append(Line(kind, text=block["text"]))
    return lines
