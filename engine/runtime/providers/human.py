"""`human/<username>`: a person playing an Agent's seat from the Console, through the same Turn loop as a model.

The Turn loop asks this provider as it would ask a model; the request waits until the person picks on the page
(`offer(run, agent, event, params)`), and the pick comes back as the reply's one tool call, so it is refused,
answered, left outstanding or ends the Turn exactly as a model's would. When the person gives the seat back while a
request waits (`give_back(run, agent)`), the request ends with `SeatGivenBack` and the loop asks the Agent's model
instead.

The picks waiting for a run live in this process (the host that drives the run serves its pages in the embedded
default).
"""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

from engine.runtime.providers.base import ModelReply, ModelRequest, Provider, ToolCall, Usage

__all__ = ["HumanProvider", "SeatGivenBack", "offer", "give_back", "waiting", "next_pick"]

_GIVEN_BACK = object()
_inboxes: dict[tuple[str, str], tuple[asyncio.AbstractEventLoop, asyncio.Queue[Any]]] = {}
_waiting: set[tuple[str, str]] = set()
_ids = itertools.count(1)


class SeatGivenBack(Exception):
    """The person gave the seat back while the Turn waited for them: ask the Agent's model instead."""


def _inbox(run: str, agent: str) -> asyncio.Queue[Any]:
    """The picks waiting for a seat, on the running loop (a host started again in another loop starts afresh)."""
    loop = asyncio.get_running_loop()
    found = _inboxes.get((run, agent))
    if found is None or found[0] is not loop:
        found = _inboxes[(run, agent)] = (loop, asyncio.Queue())
    return found[1]


def offer(run: str, agent: str, event: str, params: dict[str, Any]) -> None:
    """A pick made on the page for `agent` in `run`: the waiting request (or the next one) takes it."""
    _inbox(run, agent).put_nowait((event, params))


def give_back(run: str, agent: str) -> None:
    """The seat goes back to the model: a request waiting for the person ends, and picks not yet taken are
    dropped."""
    found = _inboxes.pop((run, agent), None)
    if found is not None and (run, agent) in _waiting:
        found[1].put_nowait(_GIVEN_BACK)


def waiting(run: str, agent: str) -> bool:
    """Whether a Turn of `agent` in `run` waits for the person holding its seat now."""
    return (run, agent) in _waiting


async def next_pick(request: ModelRequest) -> tuple[str, dict[str, Any]]:
    """The next pick offered for the seat of `request`'s Agent; SeatGivenBack when the seat is given back first."""
    view = request.view
    if view is None or not view.run:
        raise SeatGivenBack("a seat played by a person needs its run and Agent")
    key = (view.run, view.agent)
    inbox = _inbox(*key)
    _waiting.add(key)
    try:
        pick = await inbox.get()
    finally:
        _waiting.discard(key)
    if pick is _GIVEN_BACK:
        raise SeatGivenBack(f"{request.model} gave the seat of {view.agent} back")
    event, params = pick
    return str(event), dict(params)


class HumanProvider(Provider):
    """Replies with the pick the person makes on the page."""

    prefix = "human"

    async def complete(self, request: ModelRequest) -> ModelReply:
        event, params = await next_pick(request)
        call = ToolCall(id=f"human-{next(_ids)}", name=event, arguments=dict(params))
        return ModelReply(
            text="",
            tool_calls=(call,),
            stop_reason="tool_use",
            usage=Usage(),
            model=f"{self.prefix}/{request.model}",
            response={"human": request.model, "pick": {"event": event, "params": params}},
        )
