"""The Gates and operations MCP servers in the fleet: sessions on a `jr2 web` process start a run that a `jr2 worker`
drives, answer its Gate and cancel another, through the relay the API's answers use, with the official SDK's
streamable HTTP client."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from bench.soak import Fleet
from tests.live_server import ROOT, api_client, copy_workflows, migrate, run_when, server_env

pytestmark = pytest.mark.slow


@pytest.fixture
def fleet(tmp_path: Path) -> Iterator[Fleet]:
    env = server_env(
        tmp_path,
        copy_workflows(tmp_path / "workflows"),
        {"JR2_SCRIPTED": "1", "JR2_LEASE_SECONDS": "2", "JR2_SCAN_SECONDS": "0.2"},
    )
    fleet = Fleet(tmp_path, env)
    migrate(env)
    made = subprocess.run(
        [
            sys.executable,
            str(ROOT / "manage.py"),
            "shell",
            "-c",
            "from django.contrib.auth import get_user_model\n"
            "from django.contrib.auth.models import Group\n"
            "get_user_model().objects.create_user('player').groups.add(Group.objects.get(name='operators'))\n",
        ],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert made.returncode == 0, made.stdout + made.stderr
    fleet.env["TOKEN"] = fleet.jr2("token", "create", "player").strip()
    fleet.start(webs=1, workers=1)
    try:
        yield fleet
    finally:
        fleet.stop()


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


def test_a_web_process_answers_gates_and_runs_runs_a_worker_drives(fleet: Fleet) -> None:
    web, token = fleet.webs[0].url, fleet.env["TOKEN"]
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
