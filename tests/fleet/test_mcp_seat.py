"""An MCP seat in the fleet: a session on a `jr2 web` process plays the writer of a run that a `jr2 worker` drives
(its picks reach the worker through the relay, and what it reads comes from the run's records), with the official
SDK's streamable HTTP client."""

from __future__ import annotations

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from bench.soak import Fleet
from tests.live_server import api_client, run_when

pytestmark = pytest.mark.slow


def text(result: types.CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))


def test_a_web_process_serves_the_seat_of_a_run_a_worker_drives(player_fleet: Fleet) -> None:
    web = player_fleet.webs[0].url
    with api_client(web, player_fleet.env["TOKEN"], timeout=60) as client:
        made = client.post("/api/workflows/notes/runs?play=writer", json={"changes": "- faster search"})
        assert made.status_code == 201, made.text
        run_id = made.json()["id"]
        run_when(client, run_id, lambda run: bool(run["turns"]), what="opened no Turn")

        async def play() -> None:
            headers = {"Authorization": f"Bearer {player_fleet.env['TOKEN']}"}
            async with (
                httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(60, read=400)) as http,
                streamable_http_client(f"{web}/mcp/runs/{run_id}/seats/writer/", http_client=http) as (read, write),
                ClientSession(read, write, client_info=types.Implementation(name="fleet-harness", version="1")) as s,
            ):
                await s.initialize()
                prompt = text(await s.call_tool("await_turn", {"timeout_s": 60}))
                assert prompt.endswith("Allowed picks now: ask."), prompt
                asked = await s.call_tool("ask", {"question": "Who reads these?"})
                assert "the pick ask is outstanding" in text(asked), text(asked)
                answered = await anyio.to_thread.run_sync(
                    lambda: client.post(
                        f"/api/runs/{run_id}/gates/writing.asking/events", json={"type": "reply", "text": "Ops."}
                    )
                )
                assert answered.status_code == 200, answered.text
                reply = text(await s.call_tool("await_turn", {"timeout_s": 60}))
                assert "The editor replied: Ops." in reply, reply
                done = await s.call_tool("done", {"notes": "## Notes"})
                assert "the run ended: done" in text(done), text(done)

        anyio.run(play)
        run = run_when(client, run_id, lambda run: run["status"] == "done")
        assert run["output"] == {"notes": "## Notes"}
        picks = [e["entry"] for e in client.get(f"/api/runs/{run_id}/journal").json()["entries"] if e["kind"] == "pick"]
        assert {p["player"] for p in picks} == {"mcp/player via fleet-harness"}
