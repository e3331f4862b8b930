"""bench/lean_http.py, the runs rounds' load generator, against a real `jr2 up`: JSON in and out, errors as the
API gives them, one kept connection for calls one after another, and a connection the server dropped (it was
restarted) opened again for the next call."""

from __future__ import annotations

import asyncio
from pathlib import Path

from bench.lean_http import LeanClient
from tests.live_server import served


def test_the_lean_client_starts_and_reads_runs_over_kept_connections(tmp_path: Path) -> None:
    with served(tmp_path, {"JR2_SCRIPTED": "1"}) as server:
        auth = {"Authorization": f"Bearer {server.token}"}

        async def calls() -> None:
            async with LeanClient(server.url, connections=4) as http:
                started = await http.request(
                    "POST", "/api/workflows/notes/runs", json={"changes": "A new export button."}, headers=auth
                )
                assert started.status_code == 201, started.text
                run_id = started.json()["id"]
                for _ in range(3):
                    run = await http.request("GET", f"/api/runs/{run_id}", headers=auth)
                    assert run.status_code == 200 and run.json()["id"] == run_id
                assert len(http._idle) == 1  # one after another: one connection, kept
                refused = await http.request("GET", "/api/runs", headers={"Authorization": "Bearer wrong"})
                assert refused.status_code == 401 and "detail" in refused.json()
                bad = await http.request("POST", "/api/workflows/notes/runs", json={"nope": 1}, headers=auth)
                assert bad.status_code == 400 and "changes" in bad.json()["detail"], bad.text

                server.restart({"JR2_SCRIPTED": "1"})  # the kept connection is dead now
                again = await http.request("GET", f"/api/runs/{run_id}", headers=auth)
                assert again.status_code == 200 and again.json()["id"] == run_id

        asyncio.run(calls())
