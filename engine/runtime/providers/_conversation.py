"""Reading the neutral conversation of base.py, for the providers that convert it to their API's messages.

Recorded conversations are not always tidy: a reply with neither text nor a pick leaves an empty assistant
message, a re-prompt follows an answer as a second user message. APIs refuse both (empty content, and for
Anthropic, roles that do not alternate), so every provider reads the conversation through `turns()`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = ["blocks", "turns", "text_of", "tool_use_count"]


def blocks(content: Any) -> list[dict[str, Any]]:
    """A message's content as a list of blocks (a string is one text block); empty text blocks are dropped."""
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    out: list[dict[str, Any]] = []
    for block in content:
        if isinstance(block, str):
            block = {"type": "text", "text": block}
        if not isinstance(block, Mapping):
            continue
        if block.get("type") == "text" and not block.get("text"):
            continue
        out.append(dict(block))
    return out


def turns(messages: Iterable[Mapping[str, Any]]) -> list[tuple[str, list[dict[str, Any]]]]:
    """(role, blocks) with empty messages dropped and consecutive messages of the same role merged. In a user turn
    the tool_result blocks come first (Anthropic requires it; OpenAI needs the tool messages right after the call),
    each group keeping its order, so the text that ends the conversation stays last."""
    out: list[tuple[str, list[dict[str, Any]]]] = []
    for message in messages:
        role = str(message.get("role", "user"))
        content = blocks(message.get("content"))
        if not content:
            continue
        if out and out[-1][0] == role:
            out[-1][1].extend(content)
        else:
            out.append((role, content))
    for role, content in out:
        if role == "user":
            content.sort(key=lambda b: b.get("type") != "tool_result")
    return out


def text_of(content: Any) -> str:
    """A tool result's content as text (its text blocks joined; anything else as JSON)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        parts = []
        for block in content:
            if isinstance(block, Mapping) and block.get("type") == "text":
                parts.append(str(block.get("text", "")))
            elif isinstance(block, str):
                parts.append(block)
            else:
                parts.append(json.dumps(block, sort_keys=True, default=str))
        return "\n".join(parts)
    return json.dumps(content, sort_keys=True, default=str)


def tool_use_count(messages: Iterable[Mapping[str, Any]]) -> int:
    """How many tool_use blocks the conversation holds (a scripted model numbers its calls with it)."""
    return sum(1 for message in messages for block in blocks(message.get("content")) if block.get("type") == "tool_use")
