"""`/mcp/runs/<run id>/seats/<agent>/`: an Agent's seat in a run, served over MCP's streamable HTTP transport."""

from __future__ import annotations

import re

from asgiref.sync import sync_to_async
from starlette.types import ASGIApp

from engine.models import Run
from engine.runtime.registry import workflows
from engine.web.mcp.auth import Caller, Refused
from engine.web.mcp.mount import McpRoute

__all__ = ["ROUTE"]


def _agents(run_id: str) -> tuple[str, list[str]] | None:
    """The run's workflow and its Agents, or None for an unknown run."""
    row = Run.objects.filter(id=run_id).only("workflow").first()
    if row is None:
        return None
    machine = workflows().machines.get(row.workflow)
    return row.workflow, sorted(machine.agents) if machine is not None else []


async def resolve(found: re.Match[str], caller: Caller) -> ASGIApp | Refused:
    run_id, agent = found["run"], found["agent"]
    known = await sync_to_async(_agents)(run_id)
    if known is None:
        return Refused(404, f"no run {run_id}")
    workflow, agents = known
    if agent not in agents:
        return Refused(404, f'no Agent "{agent}" in run {run_id} of {workflow} (its Agents: {", ".join(agents)})')
    return Refused(501, "the seat server is not built yet")


ROUTE = McpRoute(
    re.compile(r"/mcp/runs/(?P<run>[^/]+)/seats/(?P<agent>[^/]+)/?"),
    "engine.play_seat",
    "play an Agent's seat",
    resolve,
    name="/mcp/runs/<run id>/seats/<agent>/",
)
