"""Reaching people, end to end against `jr2 up` (a real subprocess, its own clock and SQLite file), with a real SMTP
server (aiosmtpd) and a real HTTP receiver in the test process:

- the escalation example moves on by the host's own clock: the reviewers' Gate escalates to the leads', which is
  rejected when its time is up; the API shows each Gate's due time;
- an assigned Gate's email arrives; its one-tap link opens the Gate's page in chromium at a phone's width (390 px,
  saved as docs/screenshots/gate-link-phone.png with JR2_SCREENSHOTS=1) and answers it;
- the server SIGKILLed right after committing a Gate answer, before anything was sent: once it is back and has
  taken the run over, the webhook of that answer is delivered, with one idempotency key.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import expect

from engine.outbox import KINDS
from engine.runtime import webhooks
from tests.browsers import chromium
from tests.e2e.test_browser import shot
from tests.live_server import LiveServer, make_server
from tests.notify.receivers import Mailbox, Receiver

PUBLIC = "http://jr2.test"
LINK = re.compile(r"http://jr2\.test(/gates/\d+/link/[^/\s]+/)")
SECRET = "the-e2e-webhook-secret"
PHONE = {"width": 390, "height": 844}

PEOPLE = (
    "from django.contrib.auth.models import Group, Permission, User\n"
    "answer = Permission.objects.get(codename='answer_gate')\n"
    "for name, group in (('ann', 'reviewers'), ('dee', 'leads')):\n"
    "    user = User.objects.create_user(name, email=name + '@example.com', first_name=name.title())\n"
    "    user.groups.add(Group.objects.get_or_create(name=group)[0])\n"
    "    user.user_permissions.add(answer)\n"
)


def until(check: Callable[[], Any], timeout: float = 30, what: str = "") -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what or check}")


def run_of(server: LiveServer, run_id: str) -> dict[str, Any]:
    with server.client() as client:
        return dict(client.get(f"/api/runs/{run_id}").json())


@pytest.fixture
def mailbox() -> Iterator[Mailbox]:
    box = Mailbox().start()
    yield box
    box.stop()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    made = Receiver().start()
    yield made
    made.stop()


@pytest.fixture
def server(tmp_path: Path, mailbox: Mailbox, receiver: Receiver) -> Iterator[LiveServer]:
    env = {
        "EMAIL_HOST": "127.0.0.1",
        "EMAIL_PORT": str(mailbox.port),
        "DEFAULT_FROM_EMAIL": "gates@jr2.test",
        "JR2_PUBLIC_URL": PUBLIC,
        "JR2_NOTIFY_RETRY_SECONDS": "0.2",
        "JR2_WEBHOOKS": json.dumps([{"url": receiver.url, "secret": SECRET, "events": list(KINDS)}]),
    }
    made = make_server(tmp_path, env)
    try:
        made.shell(PEOPLE)
        yield made
    finally:
        made.stop()


def kinds(receiver: Receiver, run_id: str) -> list[str]:
    return [b["type"] for b in (json.loads(r.body) for r in receiver.got) if b["run"]["id"] == run_id]


def test_the_escalation_example_moves_on_by_the_hosts_clock(server: LiveServer) -> None:
    door = {"title": "Ship 2.0", "escalate_after_minutes": 0.05, "reject_after_minutes": 0.05}  # 3 s each
    started = time.time()
    run_id = server.start_run("escalation", door, "waiting")
    (review,) = run_of(server, run_id)["gates"]
    assert review["id"] == "review" and review["assign"] == ["group:reviewers"]
    due = dt.datetime.fromisoformat(review["due"]).timestamp()
    assert started + 2 <= due <= time.time() + 3.5

    escalated = until(
        lambda: next((g for g in run_of(server, run_id)["gates"] if g["id"] == "escalation"), None),
        what="the escalation to the leads",
    )
    assert escalated["assign"] == ["group:leads"] and time.time() >= due - 0.5
    assert dt.datetime.fromisoformat(escalated["due"]).timestamp() - due == pytest.approx(3, abs=0.5)
    run = server.wait_for(run_id, "done", "failed")
    assert run["output"] == {"decision": "rejected", "reason": "nobody answered in time"}
    assert [e["kind"] for e in server.journal(run_id)].count("advance") >= 2


def test_an_assigned_gates_email_link_opens_it_on_a_phone_and_answers_it(
    server: LiveServer, mailbox: Mailbox, receiver: Receiver
) -> None:
    run_id = server.start_run("escalation", {"title": "Ship 2.0 to the stores"}, "waiting")
    message = until(lambda: next((m for m in mailbox.messages if m["To"] == "ann@example.com"), None), what="mail")
    text = str(message.get_content())
    assert "workflow: escalation" in text and run_id in text and "title: Ship 2.0 to the stores" in text
    (path,) = LINK.findall(text)

    with chromium() as browser:
        context = browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True)
        tab = context.new_page()
        errors: list[str] = []
        tab.on("pageerror", lambda err: errors.append(str(err)))
        tab.goto(server.url + path)
        expect(tab.locator("#link-gate h1")).to_have_text("review")
        expect(tab.locator("#link-gate dl.meta")).to_contain_text("Ship 2.0 to the stores")
        countdown = tab.locator("#link-gate time.due")
        expect(countdown).to_contain_text("due in 59:")
        first = countdown.inner_text()
        expect(countdown).not_to_have_text(first, timeout=3000)  # it counts down live, in the page
        expect(tab.locator(".link-graph svg")).to_be_visible()
        form_box = tab.locator("form[data-event=approve]").bounding_box()
        graph_box = tab.locator(".link-graph").bounding_box()
        assert form_box is not None and graph_box is not None and graph_box["y"] > form_box["y"]  # graph below
        assert tab.evaluate("() => document.documentElement.scrollWidth") <= PHONE["width"]  # no sideways scroll
        shot(tab, "gate-link-phone")
        tab.locator("form[data-event=approve] [name=note]").fill("Approved from my phone.")
        tab.get_by_role("button", name="Send approve").click()
        expect(tab.locator("#link-answered")).to_contain_text("was delivered")
        tab.goto(server.url + path)
        expect(tab.locator("#link-refused")).to_contain_text("This Gate has closed by ann")
        assert not errors, errors
        context.close()

    run = server.wait_for(run_id, "done")
    assert run["output"] == {"decision": "approved", "reason": ""}
    (answer,) = [e for e in server.journal(run_id) if e["kind"] == "gate"]
    assert (answer["entry"]["by"], answer["entry"]["door"]) == ("ann", "link")
    until(lambda: "run.ended" in kinds(receiver, run_id), what="the webhooks")
    for sent in receiver.got:
        assert webhooks.verify(SECRET, sent.body, sent.headers["X-Jr2-Signature"])


def test_killed_between_a_gate_answers_commit_and_its_webhook_it_is_still_delivered(
    tmp_path: Path, receiver: Receiver
) -> None:
    env = {
        "JR2_PUBLIC_URL": PUBLIC,
        "JR2_NOTIFY_RETRY_SECONDS": "0.2",
        "JR2_WEBHOOKS": json.dumps([{"url": receiver.url, "secret": SECRET, "events": ["gate.answered", "run.ended"]}]),
        "JR2_CRASH_AFTER_COMMIT": "gate",
    }
    server = make_server(tmp_path, env)
    try:
        server.shell(PEOPLE)
        run_id = server.start_run("escalation", {"title": "Ship it"}, "waiting")
        with pytest.raises(httpx.HTTPError), server.client(server.new_token("ann")) as ann:
            ann.post(f"/api/runs/{run_id}/gates/review/events", json={"type": "approve", "note": "yes"})
        until(lambda: server.process is not None and server.process.poll() is not None, what="the server to die")
        assert kinds(receiver, run_id) == []  # committed, never sent
        server.env.pop("JR2_CRASH_AFTER_COMMIT")
        server.restart()
        until(lambda: "run.ended" in kinds(receiver, run_id), what="the deliveries after the takeover")
        until(lambda: kinds(receiver, run_id).count("gate.answered") >= 1)
        answered = [r for r in receiver.got if json.loads(r.body)["type"] == "gate.answered"]
        assert len({r.headers["Idempotency-Key"] for r in answered}) == 1
        body = json.loads(answered[0].body)
        assert body["answer"]["event"] == "approve" and body["gate"]["id"] == "review"
        assert webhooks.verify(SECRET, answered[0].body, answered[0].headers["X-Jr2-Signature"])
        assert server.wait_for(run_id, "done")["output"]["decision"] == "approved"
    finally:
        server.stop()
