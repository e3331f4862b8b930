"""Webhooks across a fleet's real processes (`jr2 web` and `jr2 worker` on one database): the worker driving a run
is SIGKILLed right after committing a Gate answer, before it sent anything; a new worker takes the run over and
finishes it, and the receiver gets the answer's webhook (once per idempotency key) and the run's end."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from bench.soak import Fleet
from engine.runtime import webhooks
from tests.live_server import api_client, copy_workflows, run_when, server_env
from tests.notify.receivers import Receiver

pytestmark = pytest.mark.slow

SECRET = "the-fleet-webhook-secret"


def until(check: Callable[[], Any], timeout: float = 30, what: str = "") -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what or check}")


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    made = Receiver().start()
    yield made
    made.stop()


def test_a_worker_killed_between_the_step_and_its_webhook_still_delivers_once_taken_over(
    tmp_path: Path, receiver: Receiver
) -> None:
    env = server_env(
        tmp_path,
        copy_workflows(tmp_path / "workflows"),
        {
            "JR2_SCRIPTED": "1",
            "JR2_LEASE_SECONDS": "2",
            "JR2_SCAN_SECONDS": "0.2",
            "JR2_NOTIFY_RETRY_SECONDS": "0.2",
            "JR2_WEBHOOKS": json.dumps(
                [{"url": receiver.url, "secret": SECRET, "events": ["gate.answered", "run.ended"]}]
            ),
        },
    )
    fleet = Fleet(tmp_path, env)
    token = fleet.jr2("token", "create", "fleet", "--create-user").strip()
    fleet.env["JR2_CRASH_AFTER_COMMIT"] = "gate"  # the first worker dies right after a Gate answer's commit
    fleet.start(webs=1, workers=1)
    try:
        with api_client(fleet.webs[0].url, token, timeout=60) as client:
            run_id = client.post("/api/workflows/notes/runs", json={"changes": "Faster start-up."}).json()["id"]
            run_when(client, run_id, lambda r: r["status"] == "waiting")
            client.post(f"/api/runs/{run_id}/gates/writing.asking/events", json={"type": "reply", "text": "Ops"})
            fleet.workers[0].popen.wait(timeout=30)  # killed itself after the commit
            assert [json.loads(r.body)["type"] for r in receiver.got] == []  # committed, never sent

            fleet.env.pop("JR2_CRASH_AFTER_COMMIT")
            fleet.workers[0] = fleet.start_worker(1)
            run = run_when(client, run_id, lambda r: r["status"] == "done", timeout=60)  # taken over, finished
            assert "Ops" in run["output"]["notes"]
        # both, in either order: one courier round sends the rows it took side by side, and under load the new
        # worker's first round can come after the run ended, with the Gate answer's row and the end's row together
        until(
            lambda: {"run.ended", "gate.answered"} <= {json.loads(r.body)["type"] for r in receiver.got},
            what="the killed worker's Gate answer and the run's end, delivered",
        )
        answered = [r for r in receiver.got if json.loads(r.body)["type"] == "gate.answered"]
        assert len({r.headers["Idempotency-Key"] for r in answered}) == 1
        for sent in receiver.got:
            assert webhooks.verify(SECRET, sent.body, sent.headers["X-Jr2-Signature"])
            assert json.loads(sent.body)["run"]["id"] == run_id
        assert json.loads(answered[0].body)["answer"]["event"] == "reply"
    finally:
        fleet.stop()
