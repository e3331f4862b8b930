"""Gate emails through Django's SMTP backend to a real SMTP server (aiosmtpd on a free port), and the one-tap links
they carry, used through the Console's own views on a real Host: the assigned user with an address gets the
workflow, the run, the Gate's meta and a link; the link opens the Gate and answers it as that user (door "link");
it is refused after the Gate closed, for another Gate, after it expired, and when tampered with; each use is
logged; only its hash is stored; with a digest period a person gets one message for several Gates."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

import pytest
from django.contrib.auth.models import Group, Permission, User
from django.test import AsyncClient

from engine.models import EmailNotice, GateLink, GateLinkUse, GateRecord, JournalEntry
from engine.outbox import digest
from engine.runtime.host import Host
from engine.web.audit import AuditFilter, audit
from tests.notify.receivers import Mailbox
from tests.runtime.hosting import hosted, status, until
from workflows import escalation

pytestmark = pytest.mark.django_db(transaction=True)

DOOR = {"title": "Ship 2.0", "escalate_after_minutes": 30, "reject_after_minutes": 60}
PUBLIC = "https://jr2.example"
LINK = re.compile(r"https://jr2\.example(/gates/(\d+)/link/([^/\s]+)/)")


@pytest.fixture
def mailbox(settings: Any) -> Any:
    box = Mailbox().start()
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", box.port
    settings.EMAIL_USE_TLS = False
    settings.DEFAULT_FROM_EMAIL = "gates@jr2.example"
    settings.JR2_PUBLIC_URL = PUBLIC
    settings.JR2_NOTIFY_RETRY_SECONDS = 0.1
    settings.JR2_WEBHOOKS = []
    yield box
    box.stop()


def people() -> None:
    """ann (a reviewer with an address), bo (a reviewer without one), cy (a reviewer who may not answer Gates),
    and dee (a lead)."""
    reviewers, leads = Group.objects.create(name="reviewers"), Group.objects.create(name="leads")
    answer = Permission.objects.get(codename="answer_gate")
    for name, email, group, may in (
        ("ann", "ann@example.com", reviewers, True),
        ("bo", "", reviewers, True),
        ("cy", "cy@example.com", reviewers, False),
        ("dee", "dee@example.com", leads, True),
    ):
        user = User.objects.create_user(name, email=email)
        user.groups.add(group)
        if may:
            user.user_permissions.add(answer)


def links_in(text: str) -> list[tuple[str, int, str]]:
    return [(m.group(1), int(m.group(2)), m.group(3)) for m in LINK.finditer(text)]


def test_the_assigned_user_gets_the_gate_by_email_and_its_link_answers_it(mailbox: Mailbox):
    people()

    async def body(host: Host) -> None:
        run_id = await host.start_run("escalation", DOOR)
        await until(host, lambda: len(mailbox.messages) >= 1, what="the email to ann")
        await until(host, lambda: EmailNotice.objects.filter(status="delivered").count() == 1, what="it marked sent")
        (message,) = mailbox.messages
        assert message["To"] == "ann@example.com" and message["From"] == "gates@jr2.example"
        assert message["Subject"] == f"[jr2] Gate review waits for you (escalation, run {run_id})"
        text = mailbox.texts()[0]
        assert "workflow: escalation" in text and run_id in text
        assert "title: Ship 2.0" in text and "due:" in text
        assert "escalate_ms" not in text  # nothing of the context beyond the Gate's meta
        ((path, record_id, token),) = links_in(text)
        record = await host.db(lambda: GateRecord.objects.get(pk=record_id))
        assert (record.run_id, record.gate) == (run_id, "review")
        stored = await host.db(lambda: list(GateLink.objects.values_list("key_hash", flat=True)))
        assert stored == [digest(token)] and token not in stored  # stored hashed only

        client = AsyncClient()
        page = await client.get(path)
        assert page.status_code == 200
        html = page.content.decode()
        assert "Ship 2.0" in html and 'data-event="approve"' in html and 'data-event="reject"' in html
        assert "<svg" in html and 'class="due"' in html

        refused = await client.post(path, {"_event": "reject", "reason": ""})
        assert refused.status_code == 400  # the schema's own check: the reason is required
        done = await client.post(path, {"_event": "approve", "note": "from my phone"})
        assert done.status_code == 200 and "was delivered" in done.content.decode()
        await until(host, status(run_id, "done"), what="the run to end")
        answer = await host.db(lambda: JournalEntry.objects.get(run_id=run_id, kind="gate").entry)
        assert (answer["by"], answer["door"], answer["event"]) == ("ann", "link", "approve")

        closed = await client.get(path)
        assert closed.status_code == 410 and "This Gate has closed by ann" in closed.content.decode()
        uses = await host.db(lambda: list(GateLinkUse.objects.order_by("id").values_list("action", "detail")))
        assert uses == [
            ("opened", ""),
            ("answered", "approve"),
            ("refused", "This Gate has closed by ann: there is nothing left to answer."),
        ]
        trail = await host.db(lambda: audit(AuditFilter(user="ann")))
        links = [(r.action, r.door, r.run, r.target) for r in trail if r.action.startswith("link ")]
        assert sorted(links) == [
            ("link answered", "link", run_id, "review"),
            ("link opened", "link", run_id, "review"),
            ("link refused", "link", run_id, "review"),
        ]
        assert any(r.action == "answer" and r.door == "link" for r in trail)

    hosted({"escalation": escalation.machine}, body)


def test_a_link_is_refused_for_another_gate_after_it_expired_and_when_tampered_with(mailbox: Mailbox):
    people()

    async def body(host: Host) -> None:
        first = await host.start_run("escalation", DOOR)
        second = await host.start_run("escalation", {**DOOR, "title": "Ship 3.0"})
        await until(host, lambda: len(mailbox.messages) >= 2, what="two emails to ann")
        found = {links_in(t)[0][1]: links_in(t)[0] for t in mailbox.texts()}
        records = await host.db(lambda: {r.run_id: r.pk for r in GateRecord.objects.all()})
        path, record_id, token = found[records[first]]
        client = AsyncClient()

        other = await client.get(f"/gates/{records[second]}/link/{token}/")
        assert other.status_code == 403 and "This link is for another Gate." in other.content.decode()
        bad = await client.get(f"/gates/{record_id}/link/{token[:-2]}xx/")
        assert bad.status_code == 403 and "This link is not valid." in bad.content.decode()
        assert (await client.post(f"/gates/{records[second]}/link/{token}/", {"_event": "approve"})).status_code == 403

        await host.db(
            lambda: GateLink.objects.filter(key_hash=digest(token)).update(
                expires_at=dt.datetime(2000, 1, 1, tzinfo=dt.UTC)
            )
        )
        expired = await client.get(path)
        assert expired.status_code == 410 and "This link has expired." in expired.content.decode()
        runs = await host.db(lambda: sorted(JournalEntry.objects.filter(kind="gate").values_list("run_id", flat=True)))
        assert runs == []  # no refused link answered anything
        refusals = await host.db(lambda: GateLinkUse.objects.filter(action="refused").count())
        assert refusals == 4

    hosted({"escalation": escalation.machine}, body)


def test_an_escalated_gate_emails_its_new_group(mailbox: Mailbox):
    people()

    async def body(host: Host) -> None:
        run_id = await host.start_run("escalation", {**DOOR, "escalate_after_minutes": 0.05})  # 3 s
        await until(host, lambda: [m["To"] for m in mailbox.messages] == ["ann@example.com"], what="ann's email")
        await until(host, lambda: len(mailbox.messages) == 2, what="dee's email, after the escalation")
        assert mailbox.messages[1]["To"] == "dee@example.com"
        lead = next(t for m, t in zip(mailbox.messages, mailbox.texts()) if m["To"] == "dee@example.com")
        assert "Gate escalation" in lead and "The reviewers did not answer in time" in lead
        path, _, _ = links_in(lead)[0]
        ann = next(t for m, t in zip(mailbox.messages, mailbox.texts()) if m["To"] == "ann@example.com")
        gone = await AsyncClient().get(links_in(ann)[0][0])
        assert gone.status_code == 410  # the reviewers' Gate closed when it escalated
        assert (await AsyncClient().get(path)).status_code == 200
        await host.cancel(run_id)

    hosted({"escalation": escalation.machine}, body)


def test_with_a_digest_period_a_person_gets_one_message_for_several_gates(mailbox: Mailbox, settings: Any):
    settings.JR2_NOTIFY_DIGEST_MINUTES = 0.02  # 1.2 s
    people()

    async def body(host: Host) -> None:
        runs = [await host.start_run("escalation", {**DOOR, "title": f"Ship {i}"}) for i in range(3)]
        await until(host, lambda: EmailNotice.objects.filter(status="delivered").count() == 3, what="the digest")
        (message,) = mailbox.messages
        assert message["Subject"] == "[jr2] 3 Gates wait for you"
        text = mailbox.texts()[0]
        assert all(run_id in text for run_id in runs) and len(links_in(text)) == 3

    hosted({"escalation": escalation.machine}, body)


def test_an_smtp_server_down_for_a_while_gets_the_message_once_it_is_up(settings: Any):
    box = Mailbox()  # its port refuses connections until it starts
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", box.port
    settings.JR2_PUBLIC_URL, settings.JR2_NOTIFY_RETRY_SECONDS, settings.JR2_WEBHOOKS = PUBLIC, 0.1, []
    people()

    async def body(host: Host) -> None:
        await host.start_run("escalation", DOOR)
        failing = await until(host, lambda: EmailNotice.objects.filter(tries__gte=2).first(), what="two failed tries")
        assert failing.status == "pending" and "Connection refused" in failing.last_error
        box.start()
        try:
            await until(host, lambda: EmailNotice.objects.filter(status="delivered").exists(), what="the message")
            assert [m["To"] for m in box.messages] == ["ann@example.com"]
            assert len(links_in(box.texts()[0])) == 1
        finally:
            box.stop()

    hosted({"escalation": escalation.machine}, body)
