"""The Console's side of reaching people, on a real Host and the test database: the inbox shows each Gate's due
time (the Machine's `after`) as a countdown and sorts by it, so does the run page; the delivery log lists an
endpoint's deliveries and sends one again; `JR2_WEBHOOKS` and its neighbours are checked at start with clear
errors."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

import pytest
from django.contrib.auth.models import Permission, User
from django.core import checks
from django.test import Client

from engine.checks import notify_settings
from engine.models import Delivery, GateRecord, WebhookEndpoint
from engine.runtime.host import Host
from engine.runtime.webhooks import endpoints_in
from tests.notify.receivers import Receiver
from tests.runtime.hosting import hosted, until
from workflows import escalation, notes

pytestmark = pytest.mark.django_db(transaction=True)


def operator() -> Client:
    user, made = User.objects.get_or_create(username="olga")
    if made:  # an operator's permissions (a transactional test has no groups left from the migrations)
        user.user_permissions.add(*Permission.objects.filter(codename__in=["answer_gate", "cancel_run"]))
    client = Client()
    client.force_login(user)
    return client


def test_the_inbox_shows_due_times_and_sorts_by_them(settings: Any) -> None:
    settings.JR2_WEBHOOKS = []

    async def body(host: Host) -> None:
        late = await host.start_run("escalation", {"title": "late", "escalate_after_minutes": 300})
        soon = await host.start_run("escalation", {"title": "soon", "escalate_after_minutes": 5})
        mid = await host.start_run("escalation", {"title": "mid", "escalate_after_minutes": 60})
        plain = await host.start_run("notes", {"changes": "One fix."})
        await until(host, lambda: GateRecord.objects.filter(closed_at=None).count() == 4, what="four open Gates")
        records = await host.db(lambda: {r.run_id: r for r in GateRecord.objects.all()})
        assert records[plain].due_at is None
        left = (records[soon].due_at - dt.datetime.now(dt.UTC)).total_seconds()
        assert 4 * 60 < left <= 5 * 60

        def pages() -> tuple[str, str, str]:
            client = operator()
            return (
                client.get("/gates/?order=due").content.decode(),
                client.get("/gates/").content.decode(),
                client.get(f"/runs/{soon}/").content.decode(),
            )

        due, oldest, run_page = await host.db(pages)
        order = [m for m in re.findall(r'href="/runs/(\w+)/"><code>', due) if m in (late, soon, mid, plain)]
        assert list(dict.fromkeys(order)) == [soon, mid, late, plain]  # soonest first; no timer last
        order = [m for m in re.findall(r'href="/runs/(\w+)/"><code>', oldest) if m in (late, soon, mid, plain)]
        assert list(dict.fromkeys(order)) == [late, soon, mid, plain]
        assert re.search(r'<time class="due" datetime="[^"]+"[^>]*>due in 4:\d\d</time>', due)
        assert "soonest due first" in due
        assert re.search(r'<time class="due" datetime="[^"]+"[^>]*>due in 4:\d\d</time>', run_page)
        bad = await host.db(lambda: operator().get("/gates/?order=soon"))
        assert bad.status_code == 400 and "is not one of oldest, newest, due" in bad.content.decode()

    hosted({"escalation": escalation.machine, "notes": notes.machine}, body)


def test_the_delivery_log_lists_an_endpoints_deliveries_and_sends_one_again(settings: Any) -> None:
    receiver = Receiver().start()
    receiver.answer = 503
    settings.JR2_WEBHOOKS = [{"url": receiver.url, "secret": "s3cret-s3cret", "events": ["gate.opened"]}]
    settings.JR2_NOTIFY_TRIES = 1
    try:

        async def body(host: Host) -> None:
            await host.start_run("escalation", {"title": "Ship"})
            row = await until(host, lambda: Delivery.objects.filter(status="failed").first(), what="a failed one")
            endpoint = await host.db(lambda: WebhookEndpoint.objects.get())
            log = await host.db(lambda: operator().get(f"/webhooks/{endpoint.pk}/"))
            html = log.content.decode()
            assert log.status_code == 200 and "s3cret" not in html
            assert f'id="delivery-{row.pk}"' in html and "gate.opened" in html and "503" in html
            assert "the endpoint answered 503" in html and "Send again" in html
            listing = await host.db(lambda: operator().get("/webhooks/").content.decode())
            assert receiver.url in listing and "s3cret" not in listing

            receiver.answer = 200
            again = await host.db(lambda: operator().post(f"/webhooks/deliveries/{row.pk}/again/"))
            assert again.status_code == 302 and again["Location"] == f"/webhooks/{endpoint.pk}/"
            host.courier.wake()
            sent = await until(host, lambda: Delivery.objects.filter(pk=row.pk, status="delivered").first())
            assert sent.last_code == 200 and sent.tries == 2
            assert [r.headers["X-Jr2-Delivery"] for r in receiver.got] == [row.delivery_id] * 2

            def stranger() -> tuple[int, int]:
                user = User.objects.create_user("sam", password="x-long-password")
                user.user_permissions.add(Permission.objects.get(codename="answer_gate"))
                client = Client()
                client.force_login(user)
                return (
                    client.get("/webhooks/").status_code,
                    client.post(f"/webhooks/deliveries/{row.pk}/again/").status_code,
                )

            assert await host.db(stranger) == (403, 403)

        hosted({"escalation": escalation.machine}, body)
    finally:
        receiver.stop()


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ({"url": "x"}, "JR2_WEBHOOKS must be a JSON list"),
        (["https://x"], "JR2_WEBHOOKS[0] must be an object"),
        ([{"url": "ftp://x", "secret": "12345678", "events": ["gate.opened"]}], '"url" must be an http or https'),
        ([{"url": "https://x", "secret": "short", "events": ["gate.opened"]}], '"secret" must be a text of at least 8'),
        ([{"url": "https://x", "secret": "12345678", "events": []}], '"events" must be a non-empty list'),
        ([{"url": "https://x", "secret": "12345678", "events": ["gate.open"]}], "names unknown kinds ['gate.open']"),
        ([{"url": "https://x", "secret": "12345678", "events": ["run.ended"], "slak": True}], "unknown keys ['slak']"),
        (
            [{"url": "https://x", "secret": "12345678", "events": ["run.ended"]}] * 2,
            "JR2_WEBHOOKS lists https://x more than once",
        ),
    ],
)
def test_jr2_webhooks_is_checked_with_clear_errors(settings: Any, value: Any, words: str) -> None:
    with pytest.raises(ValueError, match=re.escape(words)):
        endpoints_in(value)
    settings.JR2_WEBHOOKS = value
    (error,) = notify_settings()
    assert error.id == "engine.E010" and words in error.msg and error.level == checks.ERROR


def test_good_settings_pass_and_bad_addresses_and_numbers_do_not(settings: Any) -> None:
    settings.JR2_WEBHOOKS = [{"url": "https://hooks.example/x", "secret": "12345678", "events": ["gate.opened"]}]
    assert endpoints_in(settings.JR2_WEBHOOKS)[0].events == ("gate.opened",)
    assert notify_settings() == []
    settings.JR2_PUBLIC_URL = "jr2.example"
    settings.JR2_LINK_HOURS = 0
    settings.JR2_NOTIFY_DIGEST_MINUTES = -1
    found = {(e.id, e.msg) for e in notify_settings()}
    assert ("engine.E011", "JR2_PUBLIC_URL must be an http or https address, not 'jr2.example'") in found
    assert ("engine.E012", "JR2_LINK_HOURS must be more than 0, not 0") in found
    assert ("engine.E012", "JR2_NOTIFY_DIGEST_MINUTES must be 0 or more, not -1") in found


def test_the_admin_lists_endpoints_checks_them_and_keeps_the_secret_unshown() -> None:
    admin = User.objects.create_superuser("root", password="x-long-password")
    client = Client()
    client.force_login(admin)
    bad = client.post(
        "/admin/engine/webhookendpoint/add/", {"url": "https://hooks.example/x", "secret": "short", "active": "on"}
    )
    assert bad.status_code == 200 and "a secret of at least 8 characters" in bad.content.decode()
    assert "This field is required" in bad.content.decode()  # no kinds chosen
    made = client.post(
        "/admin/engine/webhookendpoint/add/",
        {"url": "https://hooks.example/x", "secret": "long-enough-secret", "events": ["gate.opened"], "active": "on"},
    )
    assert made.status_code == 302
    endpoint = WebhookEndpoint.objects.get()
    assert (endpoint.secret, endpoint.events, endpoint.source) == ("long-enough-secret", ["gate.opened"], "admin")
    page = client.get(f"/admin/engine/webhookendpoint/{endpoint.pk}/change/").content.decode()
    assert "long-enough-secret" not in page
    kept = client.post(
        f"/admin/engine/webhookendpoint/{endpoint.pk}/change/",
        {"url": "https://hooks.example/x", "secret": "", "events": ["run.ended"], "active": "on"},
    )
    assert kept.status_code == 302
    endpoint.refresh_from_db()
    assert (endpoint.secret, endpoint.events) == ("long-enough-secret", ["run.ended"])
