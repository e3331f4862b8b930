"""An Agent's seat over MCP (/mcp/runs/<run id>/seats/<agent>/), driven by the official SDK's streamable HTTP client
against a real `jr2 up`: tokens and permissions, tools/list as the Menu, await_turn, picks and their refusals, who
holds the seat."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import httpx
import httpx2
import mcp_types as types
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from tests.live_server import LiveServer, run_when, served


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
            assert text(asked).startswith("the pick ask is outstanding: the Gate writing.asking waits for an answer.")
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
    assert "mcp/player via pytest-harness" in json.dumps(turns)
    picks = [e["entry"] for e in live.journal(run_id) if e["kind"] == "pick"]
    assert [p["event"] for p in picks] == ["ask", "done"]
    assert {p["player"] for p in picks} == {"mcp/player via pytest-harness"}


def _menu() -> list[dict[str, object]]:
    """The writer's tools block as the model providers get it, from the workflow file itself."""
    import importlib.util

    from tests.live_server import ROOT

    spec = importlib.util.spec_from_file_location("notes_for_mcp", ROOT / "workflows" / "notes.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return list(json.loads(module.machine.menu_json("writer")))


def test_tools_list_is_the_menu_byte_for_byte_in_every_session(live: LiveServer) -> None:
    run_id = start_played(live)

    async def listed() -> list[str]:
        dumps = []
        for name in ("first", "second"):
            async with seat(live, run_id, client=name) as (session, _):
                tools = (await session.list_tools()).tools
                again = (await session.list_tools()).tools
                dumps.append(json.dumps([t.model_dump(by_alias=True, exclude_none=True) for t in tools]))
                dumps.append(json.dumps([t.model_dump(by_alias=True, exclude_none=True) for t in again]))
                menu = [{"name": t.name, "description": t.description, "input_schema": t.input_schema} for t in tools]
                assert menu[:-1] == _menu()
                assert tools[-1].name == "await_turn"
        return dumps

    dumps = anyio.run(listed)
    assert len(set(dumps)) == 1


def test_every_refusal_is_an_error_with_the_allowed_picks(live: LiveServer) -> None:
    run_id = start_played(live)

    async def refused() -> None:
        async with seat(live, run_id) as (session, _):
            await session.call_tool("await_turn", {"timeout_s": 30})
            unmoved = await session.call_tool("done", {"notes": "too soon"})
            assert unmoved.is_error and "Allowed picks now: ask." in text(unmoved)
            bad = await session.call_tool("ask", {"question": 3})
            assert bad.is_error and "Allowed picks now: ask." in text(bad)
            unknown = await session.call_tool("publish", {})
            assert unknown.is_error and '"publish" is not one of your tools (your tools: ask, done)' in text(unknown)
            assert text(unknown).endswith("Allowed picks now: ask.")
            wrong_wait = await session.call_tool("await_turn", {"timeout_s": 301})
            assert wrong_wait.is_error and "from 0 to 300" in text(wrong_wait)
            asked = await session.call_tool("ask", {"question": "Who reads these?"})
            assert not asked.is_error and "outstanding" in text(asked)
            no_turn = await session.call_tool("done", {"notes": "while ask is outstanding"})
            assert no_turn.is_error and "call await_turn" in text(no_turn).lower()
            assert "the pick ask is outstanding" in text(no_turn)

    anyio.run(refused)
    assert live.wait_for(run_id, "waiting")["status"] == "waiting"


def test_a_second_session_is_told_who_holds_the_seat_until_the_first_ends(live: LiveServer) -> None:
    run_id = start_played(live)

    async def two() -> None:
        async with seat(live, run_id, client="harness-a") as (first, _):
            await first.call_tool("await_turn", {"timeout_s": 30})
            async with seat(live, run_id, client="harness-b") as (second, _):
                held = await second.call_tool("await_turn", {"timeout_s": 1})
                assert held.is_error and "held by mcp/player via harness-a" in text(held)
            run = await anyio.to_thread.run_sync(lambda: live.wait_for(run_id, "running", "waiting"))
            assert "mcp/player via harness-a" in json.dumps(run)
        # The first session ended: the seat went back to the model (its scripted stand-in asks the editor).
        async with seat(live, run_id, client="harness-b") as (second, _):
            taken = await second.call_tool("await_turn", {"timeout_s": 1})
            assert not taken.is_error and "the pick ask is outstanding" in text(taken), text(taken)
            gate = (await anyio.to_thread.run_sync(lambda: live.wait_for(run_id, "waiting")))["gates"][0]["id"]
            await anyio.to_thread.run_sync(lambda: live.answer(run_id, gate, "reply", text="Operators."))
            reply = text(await second.call_tool("await_turn", {"timeout_s": 30}))
            assert "The editor replied: Operators." in reply, reply

    anyio.run(two)


def test_jr2_run_play_holds_the_seat_from_the_start(live: LiveServer) -> None:
    started = live.jr2(
        "run",
        "notes",
        "--input",
        json.dumps({"changes": "- one change"}),
        "--play",
        "writer",
        "--detach",
        env={"JR2_TOKEN": live.env["PLAYER_TOKEN"]},
    )
    assert started.returncode == 0, started.stdout + started.stderr
    run_id = json.loads(started.stdout)["id"]
    assert f"/mcp/runs/{run_id}/seats/writer/" in started.stderr
    run = live.wait_for(run_id, "running", "waiting")
    assert [t["model"] for t in run["turns"]] == ["player (a person, in the seat of anthropic/claude-haiku-5-5)"]
    wrong = live.jr2(
        "run", "notes", "--input", "{}", "--play", "editor", "--detach", env={"JR2_TOKEN": live.env["PLAYER_TOKEN"]}
    )
    assert wrong.returncode != 0 and "editor, which is no Agent of this workflow (its Agents: writer)" in wrong.stderr
    with live.client() as client:  # e2e may start runs, not play seats
        denied = client.post("/api/workflows/notes/runs?play=writer", json={"changes": "x"})
    assert denied.status_code == 403 and "engine.play_seat" in denied.json()["detail"]


def test_an_idle_session_gives_the_seat_back(tmp_path: Path) -> None:
    with served(tmp_path, {"JR2_MCP_IDLE_SECONDS": "2"}, users={"player": ["operators"]}) as server:
        server.env["PLAYER_TOKEN"] = server.new_token("player")
        run_id = start_played(server)

        async def go_silent() -> None:
            headers = {"Authorization": f"Bearer {server.env['PLAYER_TOKEN']}"}
            url = f"{server.url}/mcp/runs/{run_id}/seats/writer/"
            async with (
                httpx2.AsyncClient(headers=headers, timeout=60) as http,
                streamable_http_client(url, http_client=http, terminate_on_close=False) as (read, write),
                ClientSession(read, write, client_info=types.Implementation(name="quiet", version="1")) as session,
            ):
                await session.initialize()
                assert not (await session.call_tool("await_turn", {"timeout_s": 30})).is_error

        anyio.run(go_silent)  # leaves without ending its session
        with server.client() as client:
            run = run_when(
                client,
                run_id,
                lambda run: "mcp/" not in json.dumps(run["turns"]),
                timeout=60,
                what="kept the seat of an idle MCP session",
            )
        assert [t["model"] for t in run["turns"]] == [
            "script/notes.writer (scripted stand-in for anthropic/claude-haiku-5-5)"
        ]
