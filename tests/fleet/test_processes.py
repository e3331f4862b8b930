"""`jr2 web` and `jr2 worker` as real processes on one database (SQLite here; PostgreSQL and Redis in the suite's
second pass): a run started through the web process is driven by a worker, a Gate answered through the web process
reaches it, a killed worker's Effect process dies with it and its run is taken over, and SIGTERM drains a worker."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from bench.soak import Fleet
from tests.live_server import api_client, copy_workflows, run_when, server_env

pytestmark = pytest.mark.slow

LONG = """
import os, sys, time
from pydantic import BaseModel
from engine import agent, assign, define_event, effect, jr2_setup, scripted


class Empty(BaseModel):
    pass


go = define_event(name="go", input=Empty, description="Start the long command.")
machine = jr2_setup(events=[go], actors={
    "starter": agent(model="script/long.starter", instructions="Start it."),
    "long": effect.command([sys.executable, "-c", "import os, sys, time; open(sys.argv[1], 'a').write(str(os.getpid())"
                            " + chr(10)); time.sleep(60)", os.environ["LONG_PIDS"]]),
}).create_machine({
    "id": "long", "initial": "working", "context": {"ended": ""},
    "states": {"working": {"invoke": {"src": "starter"}, "initial": "idle",
                           "states": {"idle": {"on": {"go": "running"}},
                                      "running": {"invoke": {
                                          "src": "long",
                                          "onDone": {"target": "#long.ended", "actions": assign(ended="finished")},
                                          "onError": {"target": "#long.ended",
                                                      "actions": assign(ended="interrupted")}}}}},
               "ended": {"type": "final"}},
    "output": lambda context: {"ended": context["ended"]},
})


@scripted("long.starter")
def starter(turn):
    return ("go", {}) if "go" in turn.allowed_picks else None
"""


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.fixture
def fleet(tmp_path: Path) -> Iterator[Fleet]:
    env = server_env(
        tmp_path,
        copy_workflows(tmp_path / "workflows", {"long.py": LONG}),
        {
            "JR2_SCRIPTED": "1",
            "JR2_LEASE_SECONDS": "2",
            "JR2_SCAN_SECONDS": "0.2",
            "LONG_PIDS": str(tmp_path / "pids"),
            "JR2_DRAIN_SECONDS": "1",
        },
    )
    fleet = Fleet(tmp_path, env)
    token = fleet.jr2("token", "create", "fleet", "--create-user").strip()
    fleet.env["TOKEN"] = token
    fleet.start(webs=1, workers=1)
    try:
        yield fleet
    finally:
        fleet.stop()


def api(fleet: Fleet) -> httpx.Client:
    return api_client(fleet.webs[0].url, fleet.env["TOKEN"], timeout=60)


def test_a_run_started_and_answered_through_the_web_process_is_driven_by_the_worker(fleet: Fleet) -> None:
    with api(fleet) as client:
        made = client.post("/api/workflows/notes/runs", json={"changes": "Faster start-up."})
        assert made.status_code == 201, made.text
        run_id = made.json()["id"]
        run_when(client, run_id, lambda r: r["status"] == "waiting")
        answered = client.post(f"/api/runs/{run_id}/gates/writing.asking/events", json={"type": "reply", "text": "Ops"})
        assert answered.status_code == 200, answered.text
        run = run_when(client, run_id, lambda r: r["status"] == "done")
        assert "Ops" in run["output"]["notes"]
        again = client.post(f"/api/runs/{run_id}/gates/writing.asking/events", json={"type": "reply", "text": "x"})
        assert again.status_code == 409


def test_a_killed_workers_effect_dies_with_it_and_its_run_is_taken_over(fleet: Fleet) -> None:
    pids = Path(fleet.env["LONG_PIDS"])
    with api(fleet) as client:
        run_id = client.post("/api/workflows/long/runs", json={}).json()["id"]
        deadline = time.monotonic() + 30
        while not (pids.exists() and pids.read_text().strip()):
            assert time.monotonic() < deadline, "the Effect never started"
            time.sleep(0.05)
        effect_pid = int(pids.read_text().split()[0])
        assert alive(effect_pid)
        fleet.kill(fleet.workers[0])
        deadline = time.monotonic() + 5
        while alive(effect_pid):
            assert time.monotonic() < deadline, "the Effect's process outlived its killed worker"
            time.sleep(0.05)
        killed = time.monotonic()
        fleet.workers[0] = fleet.start_worker(0)
        run = run_when(client, run_id, lambda r: r["status"] == "done")
        assert time.monotonic() - killed < 15
        assert run["output"] == {"ended": "interrupted"}, run
        assert len(pids.read_text().split()) == 1, "the non-idempotent Effect was run again"


def test_sigterm_drains_a_worker_which_hands_its_runs_back_and_exits(fleet: Fleet) -> None:
    with api(fleet) as client:
        run_id = client.post("/api/workflows/notes/runs", json={"changes": "x"}).json()["id"]
        run_when(client, run_id, lambda r: r["status"] == "waiting")
        worker = fleet.workers[0]
        worker.popen.send_signal(signal.SIGTERM)
        assert worker.popen.wait(timeout=20) == 0
        log = (fleet.folder / "worker-0.log").read_text()
        assert "draining" in log and "stopped" in log
        fleet.workers[0] = fleet.start_worker(0)
        answered = client.post(f"/api/runs/{run_id}/gates/writing.asking/events", json={"type": "reply", "text": "x"})
        # 200 once the new worker holds the run; 202 (kept, then delivered) while it is still starting.
        assert answered.status_code in (200, 202), answered.text
        run_when(client, run_id, lambda r: r["status"] == "done", timeout=30)
