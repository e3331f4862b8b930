"""`/mcp/`: jr2's runs as MCP tools: `list_workflows`, `describe_workflow` (seats, Menus, door schema), `start_run`,
`list_runs` (the runs search's filters), `run_status` and `cancel_run`.

Each tool is the HTTP API's operation itself, called as the token's user (engine/web/mcp/api_calls.py): the same
permissions (`engine.start_run`, `engine.play_seat` for `play`, `engine.cancel_run`), the same data, and the API's
refusals as `isError` results in words. Any valid API token may connect; what it may do is the API's to say.
"""

from __future__ import annotations

import re
from typing import Any

import mcp_types as types
from mcp.server.lowlevel import Server
from pydantic import BaseModel, ConfigDict, Field

from engine.web import api
from engine.web.mcp.api_calls import call_async, call_sync, refused, request_as, result
from engine.web.mcp.arguments import parsed, tool
from engine.web.mcp.auth import Caller
from engine.web.mcp.mount import CALLER, McpRoute, one_server
from engine.web.search import FILTERS

__all__ = ["ROUTE", "TOOLS"]


class NoArguments(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Workflow(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="The workflow's name, as list_workflows gives it.")


class StartRun(BaseModel):
    model_config = ConfigDict(extra="forbid")

    workflow: str = Field(description="The workflow's name.")
    input: dict[str, Any] = Field(default_factory=dict, description="The door input, by the workflow's door schema.")
    play: list[str] = Field(
        default_factory=list,
        description="Agents whose seats you hold from the start (no model Turn starts for them); needs "
        "engine.play_seat.",
    )


class ListRuns(api.RunFilters):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class RunId(BaseModel):
    model_config = ConfigDict(extra="forbid")

    run: str = Field(description="The run's id.")


_FILTER_WORDS = ", ".join(f"{name} ({what})" for name, what in FILTERS.items())

TOOLS = [
    tool(
        "list_workflows",
        "Every workflow, with its Agents, seats, warnings and live runs; failed files too.",
        NoArguments,
    ),
    tool(
        "describe_workflow",
        "One workflow: its seats (who plays what), each Agent's Menu, and the door schema its input must follow.",
        Workflow,
    ),
    tool(
        "start_run",
        "Start a run of a workflow with its door input; `play` holds Agents' seats for you from the start. Needs "
        "engine.start_run.",
        StartRun,
    ),
    tool(
        "list_runs",
        f"Runs, newest first, searched on the server. Filters, each comma-separated (any of), each with a not_ twin "
        f"(none of): {_FILTER_WORDS}; after and before (start time, ISO); prefix (4+ characters of a run id); "
        "page and page_size.",
        ListRuns,
    ),
    tool(
        "run_status",
        "One run: its status, states, context, output, open Gates (with what they accept), Turns and Effects.",
        RunId,
    ),
    tool("cancel_run", "Cancel a live run. Needs engine.cancel_run.", RunId),
]


async def _call(caller: Caller, params: types.CallToolRequestParams) -> types.CallToolResult:
    name = params.name
    if name == "list_workflows":
        none = parsed(NoArguments, params)
        if isinstance(none, types.CallToolResult):
            return none
        return result(await call_sync(api.list_workflows, request_as(caller)))
    if name == "describe_workflow":
        workflow = parsed(Workflow, params)
        if isinstance(workflow, types.CallToolResult):
            return workflow
        return result(await call_sync(api.get_workflow, request_as(caller), workflow.name))
    if name == "start_run":
        start = parsed(StartRun, params)
        if isinstance(start, types.CallToolResult):
            return start
        query = {"play": ",".join(start.play)} if start.play else {}
        return result(await call_async(api.start_run, request_as(caller, query, start.input), start.workflow))
    if name == "list_runs":
        filters = parsed(ListRuns, params)
        if isinstance(filters, types.CallToolResult):
            return filters
        query = filters.model_dump(by_alias=True, exclude_unset=True)
        runs = api.RunFilters.model_validate(query)
        return result(await call_sync(api.list_runs, request_as(caller, query), runs))
    if name in ("run_status", "cancel_run"):
        run = parsed(RunId, params)
        if isinstance(run, types.CallToolResult):
            return run
        if name == "run_status":
            return result(await call_sync(api.get_run, request_as(caller), run.run))
        return result(await call_async(api.cancel_run, request_as(caller, body={}), run.run))
    return refused(f"no tool {name!r} here (the tools: {', '.join(t.name for t in TOOLS)})")


def _server() -> Server[Any]:
    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=TOOLS)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        return await _call(ctx.request.scope[CALLER], params)

    return Server(
        "jr2",
        instructions="jr2's workflows and runs: list and describe workflows, start runs, search them, read a run's "
        "status and cancel it, with your API token's permissions. Gates are answered at /mcp/gates/, seats played "
        "at /mcp/runs/<run id>/seats/<agent>/.",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


ROUTE = McpRoute(re.compile(r"/mcp/?"), "", "use jr2's runs", one_server(_server), name="/mcp/")
