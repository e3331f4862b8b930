"""`mcp/<username> via <client>`: an MCP client playing an Agent's seat (engine/web/mcp/seat.py), through the same
Turn loop as a model and a person.

As for a person (`human.py`), the Turn loop asks this provider as it would ask a model and the request waits for
the pick the client makes (a call of one of its Menu tools), which comes back as the reply's one tool call. What the
MCP side needs besides is what the model would read: each request is published on the seat's `Desk` (the
conversation so far, the Allowed picks), and the Turn loop reports what became of each pick (`picked`), so a tool
call can answer at once when its pick is outstanding or ended the Turn. Giving the seat back works as for a person.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from engine.runtime.providers.base import ModelReply, ModelRequest, Provider, ProviderError, ToolCall, Usage
from engine.runtime.providers.human import next_pick

__all__ = ["McpSeatProvider", "Desk", "desk", "forget", "picked", "tail_text", "PREFIX", "WAITING"]

PREFIX = "mcp"
#: The model id of a seat no client holds (engine.runtime.players.MCP_WAITING).
WAITING = "waiting"
_ids = itertools.count(1)


@dataclass
class Desk:
    """What an MCP seat can read: the request waiting for the client's pick (None while nothing waits), how many
    requests there were, the id of the last pick the client made and what became of each pick."""

    request: ModelRequest | None = None
    serial: int = 0
    last_call: str = ""
    outcomes: dict[str, str] = field(default_factory=dict)
    _changed: asyncio.Event = field(default_factory=asyncio.Event)

    def bump(self) -> None:
        """Something changed: wake every waiter (each waits on the event it took before looking)."""
        self._changed.set()
        self._changed = asyncio.Event()

    @property
    def changed(self) -> asyncio.Event:
        return self._changed


_desks: dict[tuple[str, str], Desk] = {}


def desk(run: str, agent: str) -> Desk:
    """The Desk of `agent`'s seat in `run` (made on first use)."""
    return _desks.setdefault((run, agent), Desk())


def forget(run: str, agent: str) -> None:
    """Drop the Desk of a seat whose run has ended."""
    _desks.pop((run, agent), None)


def picked(run: str, agent: str, call: str, outcome: str) -> None:
    """The Turn loop's report of a pick's outcome (refused, unmoved, answered, outstanding, ended)."""
    found = _desks.get((run, agent))
    if found is not None and call.startswith(f"{PREFIX}-"):
        found.outcomes[call] = outcome
        found.bump()


class McpSeatProvider(Provider):
    """Replies with the pick the MCP client makes. The seat of an `agent(model="mcp")` that no client holds waits
    for one (`mcp/waiting`): at most its Dial `timeout_s`, then the Turn faults."""

    prefix = PREFIX

    async def _pick(self, request: ModelRequest) -> tuple[str, dict[str, Any]]:
        timeout = request.dials.get("timeout_s")
        if request.model != WAITING or timeout is None:
            return await next_pick(request)
        try:
            return await asyncio.wait_for(next_pick(request), timeout=float(timeout))
        except TimeoutError:
            agent = request.view.agent if request.view is not None else "the Agent"
            raise ProviderError(
                f"no MCP client took the seat of {agent} within {timeout} s (its Dial timeout_s)"
            ) from None

    async def complete(self, request: ModelRequest) -> ModelReply:
        view = request.view
        seat = desk(view.run, view.agent) if view is not None else None
        if seat is not None:
            seat.request = request
            seat.serial += 1
            seat.bump()
        try:
            event, params = await self._pick(request)
        finally:
            if seat is not None and seat.request is request:
                seat.request = None
                seat.bump()
        call = ToolCall(id=f"{PREFIX}-{next(_ids)}", name=event, arguments=dict(params))
        if seat is not None:
            seat.last_call = call.id
        return ModelReply(
            text="",
            tool_calls=(call,),
            stop_reason="tool_use",
            usage=Usage(),
            model=f"{self.prefix}/{request.model}",
            response={"mcp": request.model, "pick": {"event": event, "params": params}},
        )


def tail_text(messages: Sequence[Mapping[str, Any]]) -> tuple[str, bool]:
    """What the model reads next: the messages after its last reply, as text, and whether a tool result among them
    is an error."""
    last = max((i for i, m in enumerate(messages) if m.get("role") == "assistant"), default=-1)
    parts, error = [], False
    for message in messages[last + 1 :]:
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        for block in blocks:
            if block.get("type") == "tool_result":
                error = error or bool(block.get("is_error"))
                inner = block.get("content", "")
                parts.append(inner if isinstance(inner, str) else "\n".join(str(b.get("text", "")) for b in inner))
            elif block.get("type") == "text":
                parts.append(str(block.get("text", "")))
    return "\n\n".join(p for p in parts if p), error
