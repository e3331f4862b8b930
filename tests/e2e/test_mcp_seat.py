"""An Agent's seat over MCP (/mcp/runs/<run id>/seats/<agent>/), driven by the official SDK's streamable HTTP client
against a real `jr2 up`: tokens and permissions, tools/list as the Menu, await_turn, picks and their refusals, who
holds the seat."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager

import anyio
import httpx
import httpx2
import mcp_types as types
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from tests.live_server import LiveServer, served


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """A server whose user "player" may play seats (the group operators) and "watcher" may not."""
    with served(
        tmp_path_factory.mktemp("mcp"), users={"player": ["operators"], "watcher": ["gate-answerers"]}
    ) as server:
        server.env["PLAYER_TOKEN"] = server.new_token("player")
        server.env["WATCHER_TOKEN"] = server.new_token("watcher")
        yield server


@asynccontextmanager
async def seat(
    server: LiveServer, run_id: str, agent: str = "writer", client: str = "pytest-harness"
) -> AsyncIterator[tuple[ClientSession, types.InitializeResult]]:
    headers = {"Authorization": f"Bearer {server.env['PLAYER_TOKEN']}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(60, read=400)) as http,
        streamable_http_client(f"{server.url}/mcp/runs/{run_id}/seats/{agent}/", http_client=http) as (read, write),
        ClientSession(read, write, client_info=types.Implementation(name=client, version="1")) as session,
    ):
        init = await session.initialize()
        yield session, init


def text(result: types.CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))


def start_played(server: LiveServer, changes: str = "- faster search\n- a dark theme") -> str:
    """A notes run whose writer's seat the player holds from the start (?play=writer)."""
    with server.client(server.env["PLAYER_TOKEN"]) as client:
        made = client.post("/api/workflows/notes/runs?play=writer", json={"changes": changes})
    assert made.status_code == 201, made.text
    return str(made.json()["id"])


def test_tokens_and_permission(live: LiveServer) -> None:
    run_id = start_played(live)
    url = f"{live.url}/mcp/runs/{run_id}/seats/writer/"
    assert httpx.post(url, json={}).status_code == 401
    wrong = httpx.post(url, json={}, headers={"Authorization": "Bearer not-a-token"})
    assert wrong.status_code == 401 and "jr2 token create" in wrong.json()["detail"]
    denied = httpx.post(url, json={}, headers={"Authorization": f"Bearer {live.env['WATCHER_TOKEN']}"})
    assert denied.status_code == 403 and "engine.play_seat" in denied.json()["detail"]
    player = {"Authorization": f"Bearer {live.env['PLAYER_TOKEN']}"}
    nobody = httpx.post(f"{live.url}/mcp/runs/{run_id}/seats/nobody/", json={}, headers=player)
    assert nobody.status_code == 404 and "its Agents: writer" in nobody.json()["detail"]
    assert httpx.post(f"{live.url}/mcp/runs/no-such-run/seats/writer/", json={}, headers=player).status_code == 404


def test_play_notes_writer_to_done(live: LiveServer) -> None:
    run_id = start_played(live)

    async def play() -> None:
        async with seat(live, run_id) as (session, init):
            assert init.instructions is not None and init.instructions.startswith("You write short release notes.")
            tools = await session.list_tools()
            assert [t.name for t in tools.tools] == ["ask", "done", "await_turn"]
            prompt = text(await session.call_tool("await_turn", {"timeout_s": 30}))
            assert "Write the release notes for these changes" in prompt
            assert prompt.endswith("Allowed picks now: ask.")
            asked = await session.call_tool("ask", {"question": "Who reads these?"})
            assert not asked.is_error, text(asked)
            assert "outstanding" in text(asked)
            waited = text(await session.call_tool("await_turn", {"timeout_s": 1}))
            assert "the pick ask is outstanding: the Gate writing.asking waits for an answer" in waited
            gate = live.wait_for(run_id, "waiting")["gates"][0]["id"]
            await anyio.to_thread.run_sync(lambda: live.answer(run_id, gate, "reply", text="Admins."))
            reply = text(await session.call_tool("await_turn", {"timeout_s": 30}))
            assert "The editor replied: Admins." in reply and "done" in reply.rsplit("Allowed picks now:", 1)[1]
            finished = await session.call_tool("done", {"notes": "## Notes\n- faster search"})
            assert not finished.is_error, text(finished)
            assert "the run ended: done" in text(finished)

    anyio.run(play)
    run = live.wait_for(run_id, "done")
    assert run["output"] == {"notes": "## Notes\n- faster search"}
    with live.client() as client:
        turns = client.get(f"/api/runs/{run_id}/turns").json()
    models = json.dumps(turns)
    assert "mcp/player via pytest-harness" in models
