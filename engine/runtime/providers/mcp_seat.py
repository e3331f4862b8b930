"""`mcp/<username> via <client>`: an MCP client playing an Agent's seat (engine/web/mcp/seat.py), through the same
Turn loop as a model and a person.

As for a person (`human.py`), the Turn loop asks this provider as it would ask a model and the request waits for
the pick the client makes (a call of one of its Menu tools), which comes back as the reply's one tool call; giving
the seat back works as for a person. What the client reads is what the run recorded (engine/web/mcp/reading.py);
the seat's `Desk` only wakes the MCP calls of this process when a request starts or ends, so they read again at once.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from engine.runtime.providers.base import ModelReply, ModelRequest, Provider, ProviderError, ToolCall, Usage
from engine.runtime.providers.human import next_pick

__all__ = ["McpSeatProvider", "Desk", "desk", "forget", "tail_text", "PREFIX", "WAITING"]

PREFIX = "mcp"
#: A request is recorded as in flight after this long (engine/runtime/turns.py's IN_FLIGHT_AFTER) and a bit more.
IN_FLIGHT_AFTER = 0.1
#: The model id of a seat no client holds (engine.runtime.players.MCP_WAITING).
WAITING = "waiting"
_ids = itertools.count(1)


@dataclass
class Desk:
    """Wakes whoever waits on a seat in this process: `changed` is set when a request of the seat starts or
    ends."""

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
            asyncio.get_running_loop().call_later(IN_FLIGHT_AFTER, seat.bump)  # once the request is recorded
        try:
            event, params = await self._pick(request)
        finally:
            if seat is not None:
                seat.bump()
        call = ToolCall(id=f"{PREFIX}-{next(_ids)}", name=event, arguments=dict(params))
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
