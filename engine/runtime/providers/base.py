"""The one seam between a Turn loop and a model: `await provider.complete(request) -> ModelReply`.

A Turn loop (engine/runtime) builds a `ModelRequest` from the Session's outputs and the recorded conversation; a
provider turns it into its SDK's call and the SDK's answer back into a `ModelReply`. Providers own their SDK's errors:
whatever goes wrong leaves as a `ProviderError` whose message a person can act on. Nothing here imports an SDK;
`engine.runtime.providers.anthropic` alone imports `anthropic`, `engine.runtime.providers.local` alone imports
`openai`.

The conversation is kept in one neutral, JSON-ready form (shaped like Anthropic's Messages API, the richest of the
three), so it can be recorded, resumed after a crash and sent to any provider:

    {"role": "user", "content": [{"type": "text", "text": "..."},
                                 {"type": "tool_result", "tool_use_id": "...", "content": "...", "is_error": False}]}
    {"role": "assistant", "content": [{"type": "text", "text": "..."},
                                      {"type": "tool_use", "id": "...", "name": "...", "input": {...}}]}
"""

from __future__ import annotations

import abc
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from engine.core.text import nul_at, without_nul

__all__ = [
    "ToolCall",
    "Usage",
    "ModelRequest",
    "ModelReply",
    "TurnView",
    "ProviderError",
    "Provider",
    "parse_arguments",
]


@dataclass(frozen=True)
class TurnView:
    """What a scripted model sees of its Turn (real models read the same things as text in `messages`).
    `workspace` names the workspace tools the Agent has beside its Menu (none without a workspace); their answers
    are among `answers`."""

    agent: str
    turn: str
    prompt: str
    menu: tuple[dict[str, Any], ...]
    allowed_picks: tuple[str, ...]
    answers: tuple[str, ...] = ()
    notices: tuple[Any, ...] = ()
    workflow: str = ""
    run: str = ""
    workspace: tuple[str, ...] = ()


@dataclass(frozen=True)
class ModelRequest:
    """One request of a Turn. `tools_json` is the Agent's Menu exactly as `Machine.menu_json(slot)` gives it:
    the same bytes on every request of the slot, because provider prompt caches key on them."""

    model: str
    system: str
    tools_json: str
    messages: Sequence[Mapping[str, Any]]
    dials: Mapping[str, Any] = field(default_factory=dict)
    view: TurnView | None = None

    @property
    def tools(self) -> list[dict[str, Any]]:
        return json.loads(self.tools_json)

    @property
    def max_tokens(self) -> int:
        return int(self.dials.get("max_tokens", 4096))


@dataclass(frozen=True)
class ToolCall:
    """One tool call of a reply. `arguments` is None when `raw` is not a JSON object; `error` then says why."""

    id: str
    name: str
    arguments: dict[str, Any] | None
    raw: str = ""
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "arguments": self.arguments, "raw": self.raw, "error": self.error}


@dataclass(frozen=True)
class Usage:
    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0

    def to_json(self) -> dict[str, int]:
        return {
            "input": self.input,
            "output": self.output,
            "cache_read": self.cache_read,
            "cache_write": self.cache_write,
        }


@dataclass(frozen=True)
class ModelReply:
    """A model's answer: its text, its tool calls (the picks it wants), why it stopped, and what it cost.
    `response` is the provider's response as JSON, kept in the Turn record."""

    text: str
    tool_calls: tuple[ToolCall, ...]
    stop_reason: str
    usage: Usage = Usage()
    model: str = ""
    response: Mapping[str, Any] = field(default_factory=dict)

    def without_nul(self) -> ModelReply:
        """This reply with the NUL character replaced in its text, calls and response (engine/core/text.py): what the
        run records and acts on, the same on every database."""
        if nul_at([self.text, [c.to_json() for c in self.tool_calls], dict(self.response)]) is None:
            return self
        calls = tuple(
            ToolCall(
                without_nul(c.id),
                without_nul(c.name),
                without_nul(c.arguments),
                without_nul(c.raw),
                without_nul(c.error),
            )
            for c in self.tool_calls
        )
        return replace(self, text=without_nul(self.text), tool_calls=calls, response=without_nul(dict(self.response)))

    def message(self) -> dict[str, Any]:
        """The reply as the assistant message of the neutral conversation. Thinking blocks of the response come
        first, unchanged: with extended thinking and tools, Anthropic's API refuses the next request without them."""
        content: list[dict[str, Any]] = []
        blocks = self.response.get("content")
        if isinstance(blocks, list):
            content.extend(
                dict(b) for b in blocks if isinstance(b, Mapping) and b.get("type") in ("thinking", "redacted_thinking")
            )
        if self.text:
            content.append({"type": "text", "text": self.text})
        for call in self.tool_calls:
            block: dict[str, Any] = {
                "type": "tool_use",
                "id": call.id,
                "name": call.name,
                "input": call.arguments if call.arguments is not None else {},
            }
            if call.arguments is None:
                block["raw"] = call.raw
            content.append(block)
        return {"role": "assistant", "content": content}


class ProviderError(Exception):
    """A model call that failed, in words a person can act on ("ANTHROPIC_API_KEY is not set", "provider limit:
    429 ..."). `retryable` says whether asking again later may work (the SDK has already retried)."""

    def __init__(self, message: str, *, retryable: bool = False, status: int | None = None) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.status = status


class Provider(abc.ABC):
    """A model provider: one per prefix of `agent(model="<prefix>/<model id>")`."""

    #: A scripted provider is labelled "scripted" wherever its Turns are shown.
    scripted: bool = False

    @abc.abstractmethod
    async def complete(self, request: ModelRequest) -> ModelReply:
        """Send one request; return the reply or raise ProviderError."""

    async def aclose(self) -> None:
        """Release connections (the default holds none)."""


def parse_arguments(raw: Any) -> tuple[dict[str, Any] | None, str, str | None]:
    """A tool call's arguments as (object or None, raw text, error): models sometimes send text that is not JSON,
    or JSON that is not an object; those are refused back to the model, never guessed at."""
    if isinstance(raw, Mapping):
        return dict(raw), json.dumps(raw, sort_keys=True), None
    text = raw if isinstance(raw, str) else json.dumps(raw)
    if not text.strip():
        return {}, text, None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        return None, text, f"the arguments are not JSON ({err.msg} at position {err.pos})"
    if not isinstance(value, dict):
        return None, text, f"the arguments must be a JSON object; got {type(value).__name__}"
    return value, text, None
