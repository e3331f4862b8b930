"""An answer is never lost and never kept waiting: with no worker at all for a minute, `jr2 web` checks a Gate
answer against the run's committed view at once (a wrong one is 400 or 404 then), keeps a right one durably and
answers 202 with its address, and the first worker to start delivers it, in order, exactly once; an answer behind
it is refused with the reason in words. The person who answers in the Console (chromium) sees it pending, then
delivered, without reloading. Real processes on PostgreSQL and Redis (the suite's second pass)."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import expect

from bench.soak import Fleet
from tests.browsers import chromium, log_in
from tests.databases import on_postgres
from tests.live_server import ROOT, api_client, copy_workflows, run_when, server_env

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not on_postgres(),
        reason="PostgreSQL only: the suite's second pass (scripts/services run) sets it",
    ),
]

#: How long no worker runs before the answer is sent: the issue's "a minute".
QUIET = 60.0
GATE = "writing.asking"
PASSWORD = "a long test password"


@pytest.fixture
def fleet(tmp_path: Path) -> Iterator[Fleet]:
    env = server_env(
        tmp_path,
        copy_workflows(tmp_path / "workflows", {}),
        {"JR2_SCRIPTED": "1", "JR2_LEASE_SECONDS": "2", "JR2_SCAN_SECONDS": "0.2"},
    )
    fleet = Fleet(tmp_path, env)
    fleet.env["TOKEN"] = fleet.jr2("token", "create", "fleet", "--create-user").strip()
    fleet.start(webs=1, workers=1)
    try:
        yield fleet
    finally:
        fleet.stop()


def input_when(client: httpx.Client, url: str, status: str, timeout: float = 30) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        found = client.get(url)
        assert found.status_code == 200, found.text
        if found.json()["status"] == status:
            return dict(found.json())
        assert time.monotonic() < deadline, f"input {url} is still {found.json()['status']}, not {status}"
        time.sleep(0.1)


def test_a_gate_answer_posted_when_no_worker_has_run_for_a_minute_is_accepted_and_delivered_when_one_starts(
    fleet: Fleet,
) -> None:
    with api_client(fleet.webs[0].url, fleet.env["TOKEN"], timeout=60) as client:
        made = client.post("/api/workflows/notes/runs", json={"changes": "Faster start-up."})
        assert made.status_code == 201, made.text
        run_id = made.json()["id"]
        run_when(client, run_id, lambda r: r["status"] == "waiting")
        fleet.kill(fleet.workers[0])
        time.sleep(QUIET)
        answers = f"/api/runs/{run_id}/gates/{GATE}/events"

        # Checked at once against the committed view: no worker runs, and none is needed to say no.
        wrong_event = client.post(answers, json={"type": "approve"})
        assert wrong_event.status_code == 400 and "reply" in wrong_event.json()["detail"], wrong_event.text
        wrong_input = client.post(answers, json={"type": "reply", "text": 5})
        assert wrong_input.status_code == 400 and "text" in wrong_input.json()["detail"], wrong_input.text
        wrong_gate = client.post(f"/api/runs/{run_id}/gates/nowhere/events", json={"type": "reply", "text": "x"})
        assert wrong_gate.status_code == 404, wrong_gate.text

        # Accepted durably after JR2_RELAY_WAIT (2 s), not held until a worker comes: 202 and its outcome's address.
        accepted = client.post(answers, json={"type": "reply", "text": "Ops"})
        assert accepted.status_code == 202, accepted.text
        body = accepted.json()
        assert body["url"] == f"/api/runs/{run_id}/inputs/{body['input']}"
        pending = client.get(body["url"]).json()
        assert (pending["status"], pending["kind"], pending["gate"], pending["event"], pending["sent_by"]) == (
            "pending",
            "gate",
            GATE,
            "reply",
            "fleet",
        )
        behind = client.post(answers, json={"type": "reply", "text": "Too late"})
        assert behind.status_code == 202, behind.text
        assert client.get(f"/api/runs/{run_id}").json()["status"] == "waiting"

        # The first worker to start delivers them, in order: the first answer, and the second refused with why.
        fleet.workers[0] = fleet.start_worker(1)
        delivered = input_when(client, body["url"], "delivered")
        assert delivered["reason"] == "" and delivered["settled_at"]
        refused = input_when(client, behind.json()["url"], "refused")
        closed = "the Gate closed before your answer was delivered: fleet answered it with reply first"
        assert refused["reason"] == closed
        run = run_when(client, run_id, lambda r: r["status"] == "done")
        assert "Ops" in run["output"]["notes"] and "Too late" not in run["output"]["notes"]
        journal = client.get(f"/api/runs/{run_id}/journal").json()["entries"]
        assert [e["entry"]["params"] for e in journal if e["kind"] == "gate"] == [{"text": "Ops"}]
        listed = client.get(f"/api/runs/{run_id}/inputs").json()
        assert [(i["input"], i["status"]) for i in listed] == [
            (behind.json()["input"], "refused"),
            (body["input"], "delivered"),
        ]


def add_answerer(fleet: Fleet, name: str) -> None:
    """A Console user who may answer Gates, with a password, made as an administrator would."""
    script = (
        "from django.contrib.auth import get_user_model\n"
        "from django.contrib.auth.models import Group\n"
        f"user = get_user_model().objects.create_user({name!r}, password={PASSWORD!r})\n"
        "user.groups.add(Group.objects.get(name='gate-answerers'))\n"
    )
    done = subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), "shell", "-c", script],
        cwd=ROOT,
        env=fleet.env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_person_who_answers_in_the_console_sees_it_pending_then_delivered_live(fleet: Fleet) -> None:
    add_answerer(fleet, "ann")
    web = fleet.webs[0].url
    with api_client(web, fleet.env["TOKEN"], timeout=60) as client:
        run_id = client.post("/api/workflows/notes/runs", json={"changes": "Faster start-up."}).json()["id"]
        run_when(client, run_id, lambda r: r["status"] == "waiting")
        fleet.kill(fleet.workers[0])
        with chromium() as browser:
            context = browser.new_context()
            tab = log_in(context, web, "ann", PASSWORD, f"/runs/{run_id}/")
            tab.wait_for_load_state("networkidle")  # htmx and the page's websocket are up before the answer
            form = tab.locator('form.gate-form[data-event="reply"]')
            form.locator('[name="text"]').fill("Ops")
            form.get_by_role("button", name="Send reply").click()
            expect(tab.locator(".input-waiting")).to_contain_text("The answer reply from ann is kept", timeout=30_000)
            sent = tab.locator("#run-inputs li").first
            expect(sent).to_contain_text("ann answered writing.asking with reply")
            expect(sent.locator(".input-status")).to_have_text("pending")

            fleet.workers[0] = fleet.start_worker(1)  # no reload from here: the page's websocket brings the rest
            expect(sent.locator(".input-status")).to_have_text("delivered", timeout=30_000)
            expect(tab.locator(".input-waiting")).to_have_count(0)
            expect(tab.locator("#run-status-badge")).to_have_text("done", timeout=30_000)
            context.close()
