"""An Agent declared for MCP (`agent(model="mcp", ...)`): the code_review_harness workflow's coder played by a
client of the official SDK over streamable HTTP against `jr2 up`, through two rounds of review to approval; and a
Turn that no client comes to, faulted by its Dial timeout_s."""

from __future__ import annotations

import json
from collections.abc import Iterator

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from tests.live_server import LiveServer, run_when, served

NOBODY_COMES = """
from pydantic import BaseModel, Field

from engine import agent, define_event, jr2_setup


class DoneInput(BaseModel):
    text: str = Field(description="The text.")


done = define_event(name="done", input=DoneInput, description="Finish.")
machine = jr2_setup(
    events=[done],
    actors={"writer": agent(model="mcp", instructions="Write.", dials={"timeout_s": 1})},
).create_machine(
    {
        "id": "nobody_comes",
        "initial": "writing",
        "on": {"agent.fault": ".failed"},
        "states": {
            "writing": {"invoke": {"src": "writer", "input": {"prompt": "Write."}}, "on": {"done": "finished"}},
            "finished": {"type": "final"},
            "failed": {"type": "final"},
        },
    }
)
"""


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    with served(
        tmp_path_factory.mktemp("harness"), files={"nobody_comes.py": NOBODY_COMES}, users={"dev": ["operators"]}
    ) as server:
        server.env["DEV_TOKEN"] = server.new_token("dev")
        yield server


def text(result: types.CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))


def test_a_coding_harness_plays_the_coder_of_code_review(live: LiveServer) -> None:
    run_id = live.start_run("code_review_harness", {"task": "Add add(a, b) to calc.py."})
    with live.client() as client:
        waiting = run_when(client, run_id, lambda run: bool(run["turns"]), what="opened no coder Turn")
    assert [t["model"] for t in waiting["turns"]] == ["waiting for an MCP client to take the coder's seat"]

    async def harness() -> None:
        headers = {"Authorization": f"Bearer {live.env['DEV_TOKEN']}"}
        url = f"{live.url}/mcp/runs/{run_id}/seats/coder/"
        async with (
            httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(60, read=400)) as http,
            streamable_http_client(url, http_client=http) as (read, write),
            ClientSession(read, write, client_info=types.Implementation(name="harness", version="1")) as session,
        ):
            init = await session.initialize()
            assert init.instructions is not None and init.instructions.startswith("You are a careful software")
            names = [t.name for t in (await session.list_tools()).tools]
            assert names == [
                "submit",
                "workspace_list",
                "workspace_read",
                "workspace_search",
                "workspace_write",
                "await_turn",
            ]
            prompt = text(await session.call_tool("await_turn", {"timeout_s": 60}))
            assert prompt.startswith("Make this change:\nAdd add(a, b) to calc.py.")
            read_back = await session.call_tool("workspace_read", {"path": "calc.py"})
            assert not read_back.is_error and "calc.py" in text(read_back), text(read_back)
            submitted = await session.call_tool("submit", {"summary": "Nothing to change yet."})
            assert "your Turn is over" in text(submitted), text(submitted)
            fixing = text(await session.call_tool("await_turn", {"timeout_s": 120}))
            assert "The reviewer asked for changes" in fixing, fixing
            again = await session.call_tool("submit", {"summary": "Named the test, added a docstring."})
            assert "your Turn is over" in text(again), text(again)

    anyio.run(harness)
    done = live.wait_for(run_id, "done", timeout=120)
    assert done["output"]["rounds"] == 1
    with live.client() as client:
        turns = client.get(f"/api/runs/{run_id}/turns").json()
    assert "mcp/dev via harness" in json.dumps(turns)


def test_a_turn_no_client_comes_to_faults_at_its_dial_timeout(live: LiveServer) -> None:
    run_id = live.start_run("nobody_comes", {})
    run = live.wait_for(run_id, "done", "failed", timeout=60)
    assert run["value"] == "failed" or "failed" in json.dumps(run["value"])
    with live.client() as client:
        turns = client.get(f"/api/runs/{run_id}/turns").json()
    assert "no MCP client took the seat of writer within 1 s (its Dial timeout_s)" in json.dumps(turns)
