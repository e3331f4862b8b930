"""The Gates server (/mcp/gates/) and the operations server (/mcp/), driven by the official SDK's streamable HTTP
client against a real `jr2 up`: tokens and permissions, each tool, and every refusal as the HTTP API words it."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx
import httpx2
import mcp_types as types
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from tests.live_server import LiveServer, jr2_script, served

NOTES_GATE = "writing.asking"


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """The server's token has every run permission; "answerer" may only answer Gates; "idle" may do nothing."""
    with served(
        tmp_path_factory.mktemp("mcp-ops"), users={"answerer": ["gate-answerers"], "idle": [], "player": ["operators"]}
    ) as server:
        server.env["ANSWERER_TOKEN"] = server.new_token("answerer")
        server.env["IDLE_TOKEN"] = server.new_token("idle")
        server.env["PLAYER_TOKEN"] = server.new_token("player")
        yield server


@asynccontextmanager
async def connected(server: LiveServer, path: str, token: str) -> AsyncIterator[ClientSession]:
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(60)) as http,
        streamable_http_client(f"{server.url}{path}", http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def over(server: LiveServer, path: str, token: str, body: Callable[[ClientSession], Awaitable[None]]) -> None:
    async def main() -> None:
        async with connected(server, path, token) as session:
            await body(session)

    anyio.run(main)


def text(result: types.CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))


async def ok(session: ClientSession, name: str, arguments: dict[str, Any] | None = None) -> Any:
    done = await session.call_tool(name, arguments or {})
    assert not done.is_error, text(done)
    return json.loads(text(done))


async def refused(session: ClientSession, name: str, arguments: dict[str, Any], *words: str) -> str:
    done = await session.call_tool(name, arguments)
    said = text(done)
    assert done.is_error, said
    for word in words:
        assert word in said, said
    return said


def test_tokens_and_permissions_are_the_apis(live: LiveServer) -> None:
    for path in ("/mcp/gates/", "/mcp/"):
        assert httpx.post(f"{live.url}{path}", json={}).status_code == 401
        wrong = httpx.post(f"{live.url}{path}", json={}, headers={"Authorization": "Bearer not-a-token"})
        assert wrong.status_code == 401 and "jr2 token create" in wrong.json()["detail"]
    idle = httpx.post(f"{live.url}/mcp/gates/", json={}, headers={"Authorization": f"Bearer {live.env['IDLE_TOKEN']}"})
    assert idle.status_code == 403 and "engine.answer_gate" in idle.json()["detail"]
    missing = httpx.post(f"{live.url}/mcp/nothing/", json={}, headers={"Authorization": f"Bearer {live.token}"})
    assert missing.status_code == 404 and "/mcp/gates/" in missing.json()["detail"]


def test_list_gates_and_answer_one_with_every_refusal(live: LiveServer) -> None:
    run_id = live.start_run("notes", {"changes": "- faster search"}, "waiting")
    other = live.start_run("notes", {"changes": "- a dark theme"}, "waiting")

    async def body(session: ClientSession) -> None:
        tools = await session.list_tools()
        assert [t.name for t in tools.tools] == ["list_gates", "answer_gate"]
        listed = await ok(session, "list_gates", {"workflow": "notes"})
        mine = [g for g in listed["gates"] if g["run"] == run_id]
        assert [g["id"] for g in mine] == [NOTES_GATE]
        [gate] = mine
        assert gate["workflow"] == "notes" and gate["state"] == "notes.writing.asking"
        assert "question" in gate["meta"]
        [event] = gate["events"]
        assert event["type"] == "reply" and event["schema"]["required"] == ["text"]
        assert (await ok(session, "list_gates", {"workflow": "code_review"}))["gates"] == []
        assert {g["run"] for g in (await ok(session, "list_gates", {"gate": NOTES_GATE}))["gates"]} >= {run_id, other}
        assert (await ok(session, "list_gates", {"gate": "nowhere"}))["gates"] == []
        await refused(session, "list_gates", {"flow": "notes"}, "the arguments of list_gates are not valid", "flow")

        answer = {"run": run_id, "gate": NOTES_GATE, "type": "reply", "input": {"text": "Admins."}}
        await refused(session, "answer_gate", {**answer, "run": "no-such-run"}, "HTTP 404", "no run 'no-such-run'")
        await refused(
            session, "answer_gate", {**answer, "gate": "writing.nope"}, "HTTP 404", f"open Gates: {NOTES_GATE}"
        )
        await refused(session, "answer_gate", {**answer, "type": "shout"}, "HTTP 400", "shout")
        await refused(session, "answer_gate", {**answer, "input": {}}, "HTTP 400", "text")
        await refused(session, "answer_gate", {**answer, "input": {"type": "x"}}, '"type"', "nothing was delivered")
        await refused(session, "answer_gate", {"run": run_id}, "the arguments of answer_gate are not valid", "gate")
        assert live.wait_for(run_id, "waiting")["gates"][0]["id"] == NOTES_GATE  # nothing was delivered

        answered = await ok(session, "answer_gate", answer)
        assert answered["outcome"] == "delivered" and answered["run"] == run_id
        await refused(session, "answer_gate", answer, "HTTP 409")

    over(live, "/mcp/gates/", live.env["ANSWERER_TOKEN"], body)
    done = live.wait_for(run_id, "done")
    assert done["output"]["notes"].endswith("_Written for: Admins._")
    assert [e["entry"].get("by") for e in live.journal(run_id) if e["kind"] == "gate"] == ["answerer"]
    assert [e["entry"].get("door") for e in live.journal(run_id) if e["kind"] == "gate"] == ["mcp"]


def test_the_operations_tools(live: LiveServer) -> None:
    async def body(session: ClientSession) -> None:
        tools = await session.list_tools()
        assert [t.name for t in tools.tools] == [
            "list_workflows",
            "describe_workflow",
            "start_run",
            "list_runs",
            "run_status",
            "cancel_run",
        ]
        listed = await ok(session, "list_workflows")
        assert "notes" in {w["name"] for w in listed}
        notes = await ok(session, "describe_workflow", {"name": "notes"})
        assert notes["door"]["required"] == ["changes"]
        assert [t["name"] for t in notes["menus"]["writer"]] == ["ask", "done"]
        assert notes["seats_data"] and "writer" in notes["seats_text"]
        await refused(session, "describe_workflow", {"name": "nosuch"}, "HTTP 404", 'no workflow "nosuch"', "notes")

        started = await ok(session, "start_run", {"workflow": "notes", "input": {"changes": "- faster search"}})
        run_id = started["id"]
        assert started["workflow"] == "notes" and started["url"] == f"/api/runs/{run_id}"
        await refused(session, "start_run", {"workflow": "notes", "input": {}}, "HTTP 400", "changes")
        await refused(session, "start_run", {"workflow": "nosuch"}, "HTTP 404", "nosuch")
        await refused(
            session,
            "start_run",
            {"workflow": "notes", "input": {"changes": "x"}, "play": ["writer"]},
            "HTTP 403",
            "engine.play_seat",
        )

        status = await ok(session, "run_status", {"run": run_id})
        assert (
            status["id"] == run_id
            and status["workflow"] == "notes"
            and status["input"] == {"changes": "- faster search"}
        )
        await refused(session, "run_status", {"run": "no-such-run"}, "HTTP 404")

        runs = await ok(session, "list_runs", {"workflow": "notes", "page_size": 500})
        assert run_id in {r["id"] for r in runs["results"]}
        assert run_id not in {r["id"] for r in (await ok(session, "list_runs", {"not_workflow": "notes"}))["results"]}
        assert run_id in {r["id"] for r in (await ok(session, "list_runs", {"prefix": run_id[:6]}))["results"]}
        await refused(session, "list_runs", {"prefix": "ab"}, "HTTP 400", "at least 4 characters")
        await refused(session, "list_runs", {"status": "sleeping"}, "HTTP 400", "sleeping")
        await refused(session, "list_runs", {"colour": "red"}, "the arguments of list_runs are not valid", "colour")

        cancelled = await ok(session, "cancel_run", {"run": run_id})
        assert cancelled == {"outcome": "cancelled", "run": run_id, "status": "cancelled"}
        await refused(session, "cancel_run", {"run": run_id}, "HTTP 409", "already ended")
        await refused(session, "cancel_run", {"run": "no-such-run"}, "HTTP 404")
        await refused(session, "nothing", {}, "no tool 'nothing'")

    over(live, "/mcp/", live.token, body)


def test_the_apis_permissions_hold_per_tool(live: LiveServer) -> None:
    run_id = live.start_run("notes", {"changes": "- one"}, "waiting")

    async def body(session: ClientSession) -> None:
        assert "notes" in {w["name"] for w in await ok(session, "list_workflows")}
        await refused(
            session, "start_run", {"workflow": "notes", "input": {"changes": "x"}}, "HTTP 403", "engine.start_run"
        )
        await refused(session, "cancel_run", {"run": run_id}, "HTTP 403", "engine.cancel_run")

    over(live, "/mcp/", live.env["ANSWERER_TOKEN"], body)
    assert live.wait_for(run_id, "waiting")["status"] == "waiting"

    async def player(session: ClientSession) -> None:
        door = {"workflow": "notes", "input": {"changes": "- two"}}
        await refused(session, "start_run", {**door, "play": ["ghost"]}, "HTTP 400", "ghost", "its Agents: writer")
        held = await ok(session, "start_run", {**door, "play": ["writer"]})
        status = await ok(session, "run_status", {"run": held["id"]})
        assert [t["agent"] for t in status["turns"]] in ([], ["writer"])

    over(live, "/mcp/", live.env["PLAYER_TOKEN"], player)


# -- the stdio bridges: `jr2 mcp ...` driven by the SDK's stdio client -------------------------------------------


@asynccontextmanager
async def bridged(
    server: LiveServer, *args: str, token: str, client: str = "pytest-stdio"
) -> AsyncIterator[tuple[ClientSession, types.InitializeResult]]:
    params = StdioServerParameters(
        command=jr2_script(), args=["mcp", *args], env={**server.env, "JR2_TOKEN": token}, cwd=str(server.folder)
    )
    async with (
        stdio_client(params) as (read, write),
        ClientSession(read, write, client_info=types.Implementation(name=client, version="1")) as session,
    ):
        init = await session.initialize()
        yield session, init


def test_jr2_mcp_ops_and_gates_relay_over_stdio(live: LiveServer) -> None:
    run_id = live.start_run("notes", {"changes": "- over stdio"}, "waiting")

    async def main() -> None:
        async with bridged(live, "ops", token=live.token) as (session, init):
            assert init.instructions is not None and "/mcp/gates/" in init.instructions
            assert [t.name for t in (await session.list_tools()).tools][:2] == ["list_workflows", "describe_workflow"]
            assert (await ok(session, "run_status", {"run": run_id}))["status"] == "waiting"
            await refused(session, "run_status", {"run": "no-such-run"}, "HTTP 404")
        async with bridged(live, "gates", token=live.env["ANSWERER_TOKEN"]) as (session, _):
            gates = (await ok(session, "list_gates", {"workflow": "notes"}))["gates"]
            assert run_id in {g["run"] for g in gates}
            answer = {"run": run_id, "gate": NOTES_GATE, "type": "reply", "input": {"text": "Stdio users."}}
            assert (await ok(session, "answer_gate", answer))["outcome"] == "delivered"
            await refused(session, "answer_gate", answer, "HTTP 409")

    anyio.run(main)
    assert live.wait_for(run_id, "done")["output"]["notes"].endswith("_Written for: Stdio users._")


def test_jr2_mcp_seat_plays_a_seat_over_stdio(live: LiveServer) -> None:
    with live.client(live.env["PLAYER_TOKEN"]) as client:
        made = client.post("/api/workflows/notes/runs?play=writer", json={"changes": "- a seat over stdio"})
    assert made.status_code == 201, made.text
    run_id = str(made.json()["id"])

    async def main() -> None:
        async with bridged(live, "seat", run_id[:8], "writer", token=live.env["PLAYER_TOKEN"]) as (session, init):
            assert init.instructions is not None and init.instructions.startswith("You write short release notes.")
            assert [t.name for t in (await session.list_tools()).tools] == ["ask", "done", "await_turn"]
            prompt = text(await session.call_tool("await_turn", {"timeout_s": 30}))
            assert prompt.endswith("Allowed picks now: ask.")
            early = await session.call_tool("done", {"notes": "too soon"})
            assert early.is_error and "Allowed picks" in text(early)
            asked = await session.call_tool("ask", {"question": "Who reads these?"})
            assert not asked.is_error and "outstanding" in text(asked)

    anyio.run(main)
    with live.client() as client:
        turns = client.get(f"/api/runs/{run_id}/turns").json()
    assert "mcp/player via pytest-stdio" in json.dumps(turns)
    picks = [e["entry"] for e in live.journal(run_id) if e["kind"] == "pick"]
    assert [p["event"] for p in picks if p.get("outcome") != "unmoved"][-1] == "ask"


def test_jr2_mcp_refused_says_why_on_stderr(live: LiveServer) -> None:
    wrong = live.jr2("mcp", "ops", env={"JR2_TOKEN": "not-a-token"}, input="")
    assert wrong.returncode == 2 and wrong.stdout == ""
    assert "refused: 401" in wrong.stderr and "jr2 token create" in wrong.stderr, wrong.stderr
    idle = live.jr2("mcp", "gates", env={"JR2_TOKEN": live.env["IDLE_TOKEN"]}, input="")
    assert idle.returncode == 2 and "403" in idle.stderr and "engine.answer_gate" in idle.stderr, idle.stderr
    nobody = live.jr2("mcp", "seat", "no-such-run", "writer", env={"JR2_TOKEN": live.env["PLAYER_TOKEN"]}, input="")
    assert nobody.returncode == 2 and "no-such-run" in nobody.stderr, nobody.stderr
    none = live.jr2("mcp", "ops", env={"JR2_TOKEN": ""}, input="")
    assert none.returncode == 2 and "JR2_TOKEN" in none.stderr


def test_list_gates_leaves_out_gates_assigned_to_others(live: LiveServer) -> None:
    door = {"title": "Ship 2.0", "escalate_after_minutes": 60, "reject_after_minutes": 60}
    run_id = live.start_run("escalation", door, "waiting")

    async def listed() -> set[str]:
        async with connected(live, "/mcp/gates/", live.env["ANSWERER_TOKEN"]) as session:
            return {g["run"] for g in (await ok(session, "list_gates", {"workflow": "escalation"}))["gates"]}

    assert run_id not in anyio.run(listed)  # the review Gate is the group reviewers'
    live.shell(
        "from django.contrib.auth.models import Group, User\n"
        "User.objects.get(username='answerer').groups.add(Group.objects.get_or_create(name='reviewers')[0])\n"
    )
    assert run_id in anyio.run(listed)
