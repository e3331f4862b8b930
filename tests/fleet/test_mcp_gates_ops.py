"""The Gates and operations MCP servers in the fleet: sessions on a `jr2 web` process start a run that a `jr2 worker`
drives, answer its Gate and cancel another, through the relay the API's answers use, with the official SDK's
streamable HTTP client."""

from __future__ import annotations

import json
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from bench.soak import Fleet
from tests.live_server import api_client, run_when

pytestmark = pytest.mark.slow


async def call(web: str, path: str, token: str, *calls: tuple[str, dict[str, Any]]) -> list[Any]:
    """Each tool call in one session; the parsed JSON of each result (an error fails the test)."""
    out = []
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=httpx2.Timeout(60)) as http,
        streamable_http_client(f"{web}{path}", http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        for name, arguments in calls:
            done = await session.call_tool(name, arguments)
            said = "\n".join(b.text for b in done.content if isinstance(b, types.TextContent))
            assert not done.is_error, said
            out.append(json.loads(said))
    return out


def test_a_web_process_answers_gates_and_runs_runs_a_worker_drives(player_fleet: Fleet) -> None:
    web, token = player_fleet.webs[0].url, player_fleet.env["TOKEN"]
    [first, second] = anyio.run(
        call,
        web,
        "/mcp/",
        token,
        ("start_run", {"workflow": "notes", "input": {"changes": "- in the fleet"}}),
        ("start_run", {"workflow": "notes", "input": {"changes": "- to cancel"}}),
    )
    with api_client(web, token, timeout=60) as client:
        for made in (first, second):
            run_when(client, made["id"], lambda run: run["status"] == "waiting", what="is not waiting")
        [gates, answered] = anyio.run(
            call,
            web,
            "/mcp/gates/",
            token,
            ("list_gates", {"workflow": "notes"}),
            ("answer_gate", {"run": first["id"], "gate": "writing.asking", "type": "reply", "input": {"text": "Ops."}}),
        )
        assert {first["id"], second["id"]} <= {g["run"] for g in gates["gates"]}
        assert answered["outcome"] == "delivered"
        [cancelled] = anyio.run(call, web, "/mcp/", token, ("cancel_run", {"run": second["id"]}))
        assert cancelled["outcome"] == "cancelled"
        done = run_when(client, first["id"], lambda run: run["status"] == "done")
        assert done["output"]["notes"].endswith("_Written for: Ops._")
        assert run_when(client, second["id"], lambda run: run["status"] == "cancelled")["status"] == "cancelled"
