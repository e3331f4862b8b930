"""A `jr2 web` process on PostgreSQL keeps a bounded number of database connections however many requests it serves.

Under ASGI every request runs its database work on a thread of its own, so a persistent connection (CONN_MAX_AGE
other than 0) is opened per request and never reused or closed: PostgreSQL refused new clients ("too many clients
already") after about 300 API calls to a fleet."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.databases import migrated_database, on_postgres
from tests.live_server import answered, free_port, spawn, stop_group

ROOT = Path(__file__).resolve().parents[2]
JR2 = [sys.executable, "-m", "jr2.cli"]

pytestmark = pytest.mark.skipif(
    not on_postgres(),
    reason="PostgreSQL only: the suite's second pass (scripts/services run) sets it",
)


def connections(url: str) -> int:
    import psycopg

    name = url.rsplit("/", 1)[1]
    with psycopg.connect(url.rsplit("/", 1)[0] + "/postgres") as conn:
        row = conn.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = %s", (name,)).fetchone()
    assert row is not None
    return int(row[0])


def test_a_web_process_does_not_keep_a_database_connection_for_each_request_it_served(tmp_path: Path) -> None:
    url = migrated_database(tmp_path / "unused.sqlite3")
    assert url is not None
    env = {k: v for k, v in os.environ.items() if not k.startswith("JR2_") and k not in ("REDIS_URL",)}
    env.update(DATABASE_URL=url, PYTHONPATH=str(ROOT), JR2_WORKFLOWS=str(ROOT / "workflows"), JR2_DEBUG="0")
    token = (
        subprocess.run(
            [*JR2, "token", "create", "conns", "--create-user"],
            cwd=ROOT,
            env=env,
            check=True,
            capture_output=True,
            text=True,
        )
        .stdout.strip()
        .splitlines()[-1]
    )
    port = free_port()
    web = spawn([*JR2, "web", "--port", str(port)], cwd=ROOT, env=env, log=tmp_path / "web.log")
    try:
        with httpx.Client(
            base_url=f"http://127.0.0.1:{port}",
            headers={"Authorization": f"Bearer {token}"},
            timeout=30,
            trust_env=False,
        ) as client:
            up = answered(lambda: client.get("/api/runs").status_code == 200, process=web)
            assert up, (tmp_path / "web.log").read_text()
            before = connections(url)
            for _ in range(40):
                assert client.get("/api/runs?status=waiting").status_code == 200
            after = connections(url)
    finally:
        stop_group(web, timeout=30)
    assert after - before <= 2, f"{after - before} more connections held after 40 requests"
