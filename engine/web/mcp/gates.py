"""`/mcp/gates/`: the Gates a user may answer, served over MCP for people who answer them from an agent harness or a
chat client.

`list_gates` lists the open Gates of live runs (not imported ones, which are read-only) that the user may answer
(not those assigned to others), with their `meta`, the events each accepts and those events' input schemas, their
assignment and claim, as `GET /api/runs/<id>` shows them; `answer_gate` is
`POST /api/runs/<run>/gates/<gate>/events` itself (engine/web/mcp/api_calls.py), so its rules and answers are the
API's, and its 404, 400 and 409 come back as `isError` results in words. Callers need `engine.answer_gate`.
In the fleet, the answer goes to the worker that drives the run through the relay the API's answers use.
"""

from __future__ import annotations

import re
from typing import Any

import mcp_types as types
from asgiref.sync import sync_to_async
from mcp.server.lowlevel import Server
from pydantic import BaseModel, ConfigDict, Field

from engine.models import Run
from engine.runtime.assignment import may_answer
from engine.runtime.view import RunView
from engine.web import api
from engine.web.mcp.api_calls import call_async, refused, request_as, result
from engine.web.mcp.arguments import parsed, tool
from engine.web.mcp.auth import Caller
from engine.web.mcp.mount import CALLER, McpRoute, one_server

__all__ = ["ROUTE", "TOOLS", "open_gates"]

#: At most this many Gates in one list (newest runs first); filters narrow it.
LIMIT = 200


class ListGates(BaseModel):
    model_config = ConfigDict(extra="forbid")

    workflow: str | None = Field(None, description="Only Gates of runs of this workflow.")
    gate: str | None = Field(None, description='Only this Gate (its id, e.g. "writing.asking").')


class AnswerGate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    run: str = Field(description="The run's id.")
    gate: str = Field(description='The Gate\'s id, as list_gates gives it (e.g. "writing.asking").')
    type: str = Field(description="The event to answer with: one the Gate accepts.")
    input: dict[str, Any] = Field(default_factory=dict, description="The event's input, by its schema.")


TOOLS = [
    tool(
        "list_gates",
        "The open Gates you may answer, newest run first: each with its run, workflow, meta (what the Gate shows), "
        "and the events it accepts with their input schemas. Filter by workflow and Gate.",
        ListGates,
    ),
    tool(
        "answer_gate",
        "Answer an open Gate of a run with one of the events it accepts and that event's input. The same rules as "
        "the HTTP API: an unknown run or Gate, an event the Gate does not accept, bad input, or a Gate already "
        "answered is refused in words, and nothing is delivered.",
        AnswerGate,
    ),
]


def open_gates(user: Any, workflow: str | None, gate: str | None) -> dict[str, Any]:
    """The open Gates of live, not imported runs that `user` may answer (engine/runtime/assignment.py: a Gate
    assigned to others is left out), as the API shows a run's Gates, with the run beside each."""
    runs = Run.objects.filter(status__in=Run.LIVE, imported_from="")
    if workflow:
        runs = runs.filter(workflow=workflow)
    found: list[dict[str, Any]] = []
    for row in runs.order_by("-created_at", "id").only("id", "workflow", "view", "created_at").iterator():
        view = RunView.of(row.view)
        if not view.gates:
            continue
        theirs = {g.id for g in view.gates if not may_answer(user, g)}
        for entry in api.open_gates_json(row.workflow, view):
            if (gate and entry["id"] != gate) or entry["id"] in theirs:
                continue
            found.append({"run": row.id, "workflow": row.workflow, "started_at": row.created_at.isoformat(), **entry})
            if len(found) >= LIMIT:
                return {"gates": found, "truncated": True}
    return {"gates": found, "truncated": False}


async def _list(caller: Caller, arguments: ListGates) -> types.CallToolResult:
    return result(await sync_to_async(open_gates)(caller.user, arguments.workflow, arguments.gate))


async def _answer(caller: Caller, arguments: AnswerGate) -> types.CallToolResult:
    if "type" in arguments.input:
        return refused(
            'the request is not valid: the input must not hold a field "type" (the event\'s name goes in `type`); '
            "nothing was delivered"
        )
    request = request_as(caller, body={"type": arguments.type, **arguments.input})
    return result(await call_async(api.answer_gate, request, arguments.run, arguments.gate))


def _server() -> Server[Any]:
    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=TOOLS)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        caller: Caller = ctx.request.scope[CALLER]
        if params.name == "list_gates":
            listing = parsed(ListGates, params)
            return listing if isinstance(listing, types.CallToolResult) else await _list(caller, listing)
        if params.name == "answer_gate":
            answer = parsed(AnswerGate, params)
            return answer if isinstance(answer, types.CallToolResult) else await _answer(caller, answer)
        return refused(f"no tool {params.name!r} here (the tools: list_gates, answer_gate)")

    return Server(
        "jr2 Gates",
        instructions="The Gates of jr2 runs that wait for a person. list_gates shows what waits and what each Gate "
        "accepts; answer_gate answers one.",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


ROUTE = McpRoute(
    re.compile(r"/mcp/gates/?"), "engine.answer_gate", "answer Gates", one_server(_server), name="/mcp/gates/"
)
