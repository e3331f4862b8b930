"""`/mcp/runs/<run id>/seats/<agent>/`: an Agent's seat in a run, served over MCP's streamable HTTP transport.

`tools/list` is the Agent's Menu exactly as the model providers get it (the same tools block, in its order), then
the workspace tools when the Agent has a workspace, then `await_turn`; it is built once per seat, so it is the same
bytes on every call of every session. The initialize result's `instructions` are the Agent's system prompt.

The first call of an MCP session takes the seat, as "Take over" does in the Console, and its Turns are then played
by `mcp/<username> via <client name>` (engine/runtime/providers/mcp_seat.py): a Menu tool's call is a pick through
the run's Turn loop, and its result is what a model would read as the tool result. A second session on a held seat
is refused, naming the holder. The seat goes back to the Agent's model when the session ends (the client's DELETE,
or JR2_MCP_IDLE_SECONDS without a request).
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from dataclasses import dataclass, field
from typing import Any

import mcp_types as types
from asgiref.sync import sync_to_async
from django.conf import settings
from mcp.server.lowlevel import Server
from starlette.types import ASGIApp

from engine.core.prompts import system_prompt
from engine.core.workspace import AWAIT_TURN
from engine.models import Run
from engine.runtime.errors import HostError, NoHost
from engine.runtime.providers.mcp_seat import Desk, desk
from engine.runtime.providers.mcp_seat import forget as forget_desk
from engine.runtime.registry import workflows
from engine.runtime.workspace import tools as workspace_tools
from engine.web.hosting import ready_host
from engine.web.mcp.auth import Caller, Refused
from engine.web.mcp.mount import CALLER, Managed, McpRoute, security
from engine.web.mcp.reading import ENDED, Reading, read

__all__ = ["ROUTE", "AWAIT_TURN", "seat_tools"]

log = logging.getLogger("engine.web.mcp")

#: How long a pick's call waits for its answer before it says the pick is still being carried out.
PICK_WAIT = 30.0
#: How often (seconds) a waiting call reads the run's records again when no change of it was heard here.
POLL = 0.25

AWAIT_TOOL = types.Tool(
    name=AWAIT_TURN,
    description=(
        "Wait until your seat has something to read: the prompt of a Turn that opened, the answer to your "
        "outstanding pick, a notice, or that the run ended. Call it first, and after a pick that is outstanding."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "timeout_s": {
                "type": "number",
                "minimum": 0,
                "maximum": 300,
                "default": 60,
                "description": "How long to wait, in seconds (at most 300).",
            }
        },
        "additionalProperties": False,
    },
)


def seat_tools(menu_json: str, workspace: bool) -> list[types.Tool]:
    """The seat's tools: the Menu as the providers get it (engine/runtime/workspace/tools.py's tools block), then
    `await_turn`."""
    block = json.loads(workspace_tools.tools_json(menu_json, workspace))
    return [
        *(types.Tool(name=t["name"], description=t.get("description"), input_schema=t["input_schema"]) for t in block),
        AWAIT_TOOL,
    ]


@dataclass
class Hold:
    """The MCP session holding a seat, and who it is for."""

    session: str
    name: str


@dataclass
class Seat:
    """One Agent's seat in one run, and its MCP server."""

    run_id: str
    agent: str
    workflow: str
    tools: list[types.Tool]
    instructions: str
    hold: Hold | None = None
    #: The number of the last model call (reading.Reading.call) whose text the holding session has read.
    read: int = 0
    server: Managed | None = field(default=None, repr=False)

    @property
    def desk(self) -> Desk:
        return desk(self.run_id, self.agent)


_seats: dict[tuple[str, str], Seat] = {}


def _text(text: str, error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=error)


def _waiting_for(seat: Seat, now: Reading) -> str:
    """What the seat waits for, in words."""
    view = now.view
    turn = view.turn_of(seat.agent)
    if turn is None:
        states = ", ".join(view.active) or "none"
        return f"the seat waits for a Turn of {seat.agent} to open (the run is {now.status}; its states: {states})"
    if turn.outstanding is not None:
        gates = [g.state for g in view.gates if g.state.startswith(turn.state + ".") or g.state == turn.state]
        gate = gates[0].removeprefix(f"{seat.workflow}.") if gates else ""
        why = f": the Gate {gate} waits for an answer" if gate else ": its work is not finished"
        return f"the pick {turn.outstanding.event} is outstanding{why}"
    return f"the Turn of {seat.agent} in {turn.state} is being played by {turn.model}"


def _ended_text(now: Reading) -> str:
    return f"the run ended: {now.status}; its output: {json.dumps(now.output, ensure_ascii=False, default=str)}"


async def _changed(seat: Seat, timeout: float) -> None:
    """Until the run that this process drives says something changed, or `timeout` (a run another process drives
    is read again after it)."""
    try:
        await asyncio.wait_for(seat.desk.changed.wait(), timeout=timeout)
    except TimeoutError:
        pass


async def _await_turn(seat: Seat, arguments: dict[str, Any]) -> types.CallToolResult:
    timeout = arguments.get("timeout_s", 60)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 0 <= timeout <= 300:
        return _text(f"timeout_s must be a number of seconds from 0 to 300, not {timeout!r}", True)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + float(timeout)
    while True:
        now = await sync_to_async(read)(seat.run_id, seat.agent)
        if now.call > seat.read:
            seat.read = now.call
            return _text(now.text)
        if now.ended:
            return _text(_ended_text(now))
        left = deadline - loop.time()
        if left <= 0:
            return _text(f"nothing to read yet after {timeout} s: {_waiting_for(seat, now)}")
        await _changed(seat, min(left, POLL))


async def _pick(seat: Seat, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
    """A Menu or workspace tool's call: a pick for the Turn waiting on the seat."""
    before = await sync_to_async(read)(seat.run_id, seat.agent)
    if before.ended:
        return _text(_ended_text(before) + "; nothing was delivered", True)
    if not before.call:
        return _text(
            f"no Turn of {seat.agent} waits for a pick now ({_waiting_for(seat, before)}); nothing was "
            f"delivered. Call {AWAIT_TURN} to wait for your Turn.",
            True,
        )
    seat.read = before.call
    try:
        host = await ready_host()
        await host.offer_pick(seat.run_id, seat.agent, name, arguments)
    except HostError as err:
        return _text(f"{err}; nothing was delivered", True)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + PICK_WAIT
    while True:
        await _changed(seat, POLL)
        now = await sync_to_async(read)(seat.run_id, seat.agent)
        if now.call > before.call:
            seat.read = now.call
            return _text(now.text, now.error or now.outcome in ("refused", "unmoved"))
        turn = now.view.turn_of(seat.agent)
        if turn is not None and turn.id == before.turn and turn.outstanding is not None:
            return _text(
                f"{_waiting_for(seat, now)}. Its answer comes when that work is done: call {AWAIT_TURN} to read it."
            )
        if now.ended:
            return _text(f"{name} was taken: your Turn is over; {_ended_text(now)}")
        if now.turn != before.turn or not now.turn_open:
            return _text(f"{name} was taken: your Turn is over. Call {AWAIT_TURN} for your next Turn.")
        if loop.time() > deadline:
            return _text(f"{name} was delivered and is still being carried out; call {AWAIT_TURN} to read its answer")


def _client_name(ctx: Any) -> str:
    params = ctx.session.client_params
    info = getattr(params, "client_info", None) if params is not None else None
    return str(getattr(info, "name", "") or "an MCP client")


async def _hold(seat: Seat, ctx: Any, caller: Caller) -> str | None:
    """Take the seat for this session on its first call; the reason when it cannot be taken."""
    session = str(ctx.request.headers.get("mcp-session-id", "")) if ctx.request is not None else ""
    if not session:
        return "this seat is held by an MCP session: initialize one first (streamable HTTP with a session id)"
    if seat.hold is not None:
        if seat.hold.session == session:
            return None
        return (
            f"the seat of {seat.agent} is held by {seat.hold.name} in another MCP session; that session must end "
            "(or stay idle for JR2_MCP_IDLE_SECONDS) before another takes it"
        )
    name = f"mcp/{caller.username} via {_client_name(ctx)}"
    try:
        host = await ready_host()
        await host.take_seat(seat.run_id, seat.agent, (caller.user.pk, name))
    except (HostError, NoHost) as err:
        return f"the seat of {seat.agent} could not be taken: {err}"
    seat.hold = Hold(session, name)
    seat.read = 0  # a new session reads the request that waits now, even if an earlier session read it
    log.info("run %s: %s took the seat of %s", seat.run_id, name, seat.agent)
    connection = getattr(ctx.session, "_connection", None)
    if connection is not None:
        connection.exit_stack.push_async_callback(_release, seat, session)
    return None


async def _release(seat: Seat, session: str) -> None:
    """The session ended: the seat goes back to the Agent's model."""
    if seat.hold is None or seat.hold.session != session:
        return
    seat.hold = None
    try:
        host = await ready_host()
        await host.take_seat(seat.run_id, seat.agent, None)
    except Exception as err:  # the run may have ended meanwhile
        log.info("run %s: the seat of %s was not given back: %s", seat.run_id, seat.agent, err)


def _server(seat: Seat) -> Server[Any]:
    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=seat.tools)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        caller: Caller = ctx.request.scope[CALLER]
        refused = await _hold(seat, ctx, caller)
        if refused is not None:
            return _text(refused, True)
        arguments = dict(params.arguments or {})
        if params.name == AWAIT_TURN:
            return await _await_turn(seat, arguments)
        # Any other name goes to the Turn loop, which refuses a name that is not one of the Agent's tools in the
        # words a model reads, with the Allowed picks.
        return await _pick(seat, params.name, arguments)

    return Server(
        f"jr2 seat {seat.agent} of run {seat.run_id}",
        instructions=seat.instructions,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def _seat(run_id: str, agent: str) -> Seat | Refused:
    """The seat (made on first use), or a 404 naming the run's Agents."""
    row = Run.objects.filter(id=run_id).only("workflow").first()
    if row is None:
        return Refused(404, f"no run {run_id}")
    machine = workflows().machines.get(row.workflow)
    agents = sorted(machine.agents) if machine is not None else []
    slot = machine.agents.get(agent) if machine is not None else None
    if machine is None or slot is None:
        return Refused(
            404, f'no Agent "{agent}" in run {run_id} of {row.workflow} (its Agents: {", ".join(agents) or "none"})'
        )
    found = _seats.get((run_id, agent))
    if found is None:
        workspace = getattr(slot, "workspace", "none") != "none"
        found = Seat(
            run_id,
            agent,
            row.workflow,
            seat_tools(machine.menu_json(agent), workspace),
            system_prompt(slot.instructions),
        )
        found.server = Managed(
            _server(found),
            session_idle_timeout=float(getattr(settings, "JR2_MCP_IDLE_SECONDS", 600)),
            security_settings=security(list(settings.ALLOWED_HOSTS)),
        )
        _seats[(run_id, agent)] = found
    return found


def _ended(run_ids: list[str]) -> set[str]:
    return set(Run.objects.filter(id__in=run_ids, status__in=ENDED).values_list("id", flat=True))


async def _sweep(keep: Seat) -> None:
    """Stop serving the seats of runs that have ended and that no session holds: a long-lived server keeps no
    session manager for every run it ever served."""
    ended = await sync_to_async(_ended)(sorted({run_id for run_id, _ in _seats}))
    for key, seat in list(_seats.items()):
        if seat is not keep and seat.run_id in ended and seat.hold is None:
            del _seats[key]
            forget_desk(seat.run_id, seat.agent)
            if seat.server is not None:
                await seat.server.close()


async def resolve(found: re.Match[str], caller: Caller) -> ASGIApp | Refused:
    known = len(_seats)
    seat = await sync_to_async(_seat)(found["run"], found["agent"])
    if isinstance(seat, Refused):
        return seat
    if len(_seats) > known:
        await _sweep(seat)
    assert seat.server is not None
    return seat.server


ROUTE = McpRoute(
    re.compile(r"/mcp/runs/(?P<run>[^/]+)/seats/(?P<agent>[^/]+)/?"),
    "engine.play_seat",
    "play an Agent's seat",
    resolve,
    name="/mcp/runs/<run id>/seats/<agent>/",
)
