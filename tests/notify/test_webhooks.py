"""Webhooks through a real Host on the test database and a real HTTP receiver: each kind an endpoint asked for
arrives as a signed JSON POST with a delivery id and an idempotency key; a receiver down for a while gets every
delivery once it is up, none lost; a delivery sent again carries the same key; nothing sent carries a secret or
more of the context than the Gate's meta."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from django.contrib.auth.models import Group, Permission, User

from engine.models import Delivery, WebhookEndpoint
from engine.runtime import webhooks
from engine.runtime.host import Host
from tests.notify.receivers import Receiver
from tests.runtime.hosting import hosted, status, until
from workflows import escalation

pytestmark = pytest.mark.django_db(transaction=True)

SECRET = "a-webhook-secret-of-the-test"
DOOR = {"title": "Ship 2.0", "escalate_after_minutes": 30, "reject_after_minutes": 60}
ALL = ["gate.opened", "gate.assigned", "gate.claimed", "gate.answered", "run.ended"]


@pytest.fixture
def receiver() -> Any:
    made = Receiver()
    yield made
    made.stop()


def endpoint(settings: Any, receiver: Receiver, events: list[str] = ALL, slack: bool = False) -> None:
    settings.JR2_WEBHOOKS = [{"url": receiver.url, "secret": SECRET, "events": events, "slack": slack}]
    settings.JR2_NOTIFY_RETRY_SECONDS = 0.1
    settings.JR2_PUBLIC_URL = "https://jr2.example"


def reviewer() -> None:
    user = User.objects.create_user("ann", email="ann@example.com")
    user.groups.add(Group.objects.create(name="reviewers"))
    user.user_permissions.add(Permission.objects.get(codename="answer_gate"))


def bodies(receiver: Receiver) -> list[dict[str, Any]]:
    return [json.loads(r.body) for r in receiver.got]


def all_delivered() -> bool:
    rows = list(Delivery.objects.all())
    return bool(rows) and all(r.status == "delivered" for r in rows)


def test_each_kind_arrives_signed_with_a_delivery_id_and_an_idempotency_key(settings: Any, receiver: Receiver):
    endpoint(settings, receiver.start())
    reviewer()

    async def body(host: Host) -> None:
        run_id = await host.start_run("escalation", DOOR)
        await until(host, lambda: len(receiver.got) >= 2, what="gate.opened and gate.assigned")
        took = await host.claim(run_id, "review", "claim", "ann", door="api")
        assert took.outcome == "delivered"
        answer = await host.deliver(
            run_id, "gate", gate="review", event="approve", params={"note": "fine"}, by="ann", door="console"
        )
        assert answer.outcome == "delivered"
        await until(host, status(run_id, "done"), what="the run to end")
        await until(host, lambda: len(receiver.got) >= 5, what="five deliveries")
        await until(host, all_delivered, what="every delivery marked delivered")

        order = await host.db(lambda: list(Delivery.objects.order_by("id").values_list("delivery_id", flat=True)))
        receiver.got.sort(key=lambda r: order.index(r.headers["X-Jr2-Delivery"]))  # sent at once, so in any order
        got = bodies(receiver)
        assert [b["type"] for b in got] == [
            "gate.opened",
            "gate.assigned",
            "gate.claimed",
            "gate.answered",
            "run.ended",
        ]
        for sent, data in zip(receiver.got, got):
            assert sent.headers["Content-Type"] == "application/json"
            assert webhooks.verify(SECRET, sent.body, sent.headers["X-Jr2-Signature"])
            assert sent.headers["X-Jr2-Signature"].startswith("sha256=")
            assert not webhooks.verify("another-secret", sent.body, sent.headers["X-Jr2-Signature"])
            assert sent.headers["X-Jr2-Delivery"] == data["id"]
            assert sent.headers["Idempotency-Key"].startswith(f"{run_id}:")
            assert data["run"]["id"] == run_id and data["run"]["workflow"] == "escalation"
            assert SECRET not in sent.body.decode()
        opened = got[0]["gate"]
        assert opened["id"] == "review" and opened["assign"] == ["group:reviewers"]
        assert opened["meta"]["title"] == "Ship 2.0"
        assert opened["due"] is not None and opened["url"] == f"https://jr2.example/runs/{run_id}/#run-gates"
        assert got[2]["claim"]["by"] == "ann"
        assert got[3]["answer"] == {"event": "approve", "by": "ann", "door": "console"}
        assert got[4]["status"] == "done" and got[4]["gate"] is None
        # Nothing of the context beyond the Gate's meta: not its timers' settings, not the output.
        text = b"".join(r.body for r in receiver.got).decode()
        assert "escalate_ms" not in text and "decision" not in text and '"note"' not in text

    hosted({"escalation": escalation.machine}, body)


def test_an_endpoint_gets_only_the_kinds_it_asked_for(settings: Any, receiver: Receiver):
    endpoint(settings, receiver.start(), events=["gate.answered"])

    async def body(host: Host) -> None:
        run_id = await host.start_run("escalation", DOOR)
        await host.deliver(run_id, "gate", gate="review", event="reject", params={"reason": "no"}, by="bo")
        await until(host, status(run_id, "done"))
        await until(host, all_delivered, what="the one delivery")
        assert [b["type"] for b in bodies(receiver)] == ["gate.answered"]

    hosted({"escalation": escalation.machine}, body)


def test_a_receiver_down_for_a_while_gets_every_delivery_once_it_is_up(settings: Any, receiver: Receiver):
    endpoint(settings, receiver)  # not started: its port refuses every POST

    async def body(host: Host) -> None:
        runs = [await host.start_run("escalation", DOOR) for _ in range(3)]
        for run_id in runs:
            await host.deliver(run_id, "gate", gate="review", event="approve", params={}, by="ann")
        await until(host, lambda: Delivery.objects.count() == 12, what="the outbox to hold 4 deliveries per run")
        await until(host, lambda: all(d.tries >= 2 for d in Delivery.objects.all()), what="each delivery failing twice")
        rows = await host.db(lambda: list(Delivery.objects.all()))
        assert all(r.status == "pending" and r.last_code is None and "Connect" in r.last_error for r in rows)
        receiver.start()
        await until(host, all_delivered, timeout=20, what="every delivery once the receiver is up")
        keys = {r.key for r in await host.db(lambda: list(Delivery.objects.all()))}
        got = [r.headers["Idempotency-Key"] for r in receiver.got]
        assert set(got) == keys and len(keys) == 12  # every one arrived, none lost
        assert {b["run"]["id"] for b in bodies(receiver)} == set(runs)

        # "Send again" (the Console's button) sends the same delivery: a duplicate with the same key and id.
        first = receiver.got[0]
        row = await host.db(lambda: Delivery.objects.get(delivery_id=first.headers["X-Jr2-Delivery"]))
        await host.db(lambda: Delivery.objects.filter(pk=row.pk).update(status="pending", next_try=row.created_at))
        host.courier.wake()
        await until(host, lambda: len(receiver.got) == 13, what="the delivery sent again")
        again = receiver.got[-1]
        assert again.headers["Idempotency-Key"] == first.headers["Idempotency-Key"]
        assert again.headers["X-Jr2-Delivery"] == first.headers["X-Jr2-Delivery"]
        assert again.body == first.body

    hosted({"escalation": escalation.machine}, body)


def test_a_receiver_that_answers_an_error_is_tried_again_and_then_marked_failed(settings: Any, receiver: Receiver):
    endpoint(settings, receiver, events=["gate.opened"])
    receiver.answer = 500
    receiver.start()
    settings.JR2_NOTIFY_TRIES = 3

    async def body(host: Host) -> None:
        await host.start_run("escalation", DOOR)
        row = await until(host, lambda: Delivery.objects.filter(status="failed").first(), what="a failed delivery")
        assert row.tries == 3 and row.last_code == 500 and len(receiver.got) == 3
        assert "answered 500" in row.last_error

    hosted({"escalation": escalation.machine}, body)


def test_a_slack_endpoint_gets_a_text_with_the_link(settings: Any, receiver: Receiver):
    endpoint(settings, receiver.start(), events=["gate.opened"], slack=True)

    async def body(host: Host) -> None:
        run_id = await host.start_run("escalation", {**DOOR, "title": "Ship <2.0> & more"})
        await until(host, all_delivered, what="the Slack delivery")
        (sent,) = bodies(receiver)
        assert set(sent) == {"text"}
        assert f"<https://jr2.example/runs/{run_id}/#run-gates|Gate review opened in run {run_id}" in sent["text"]
        assert "Ship &lt;2.0&gt; &amp; more" in sent["text"]
        assert webhooks.verify(SECRET, receiver.got[0].body, receiver.got[0].headers["X-Jr2-Signature"])

    hosted({"escalation": escalation.machine}, body)


def test_an_admin_endpoint_is_used_beside_the_settings_ones(settings: Any, receiver: Receiver):
    settings.JR2_WEBHOOKS = []
    receiver.start()
    WebhookEndpoint.objects.create(url=receiver.url, secret=SECRET, events=["run.ended"])

    async def body(host: Host) -> None:
        run_id = await host.start_run("escalation", DOOR)
        await host.cancel(run_id, by="ann")
        await until(host, all_delivered, what="run.ended")
        assert [(b["type"], b["status"]) for b in bodies(receiver)] == [("run.ended", "cancelled")]

    hosted({"escalation": escalation.machine}, body)


class CountedRounds:
    """The host's courier's rounds, counted (each one is two outbox queries on the run's database thread)."""

    def __init__(self, host: Host) -> None:
        self.n = 0
        self._round = host.courier.round
        host.courier.round = self  # type: ignore[method-assign]  # the real round, counted
        host.courier.scan_seconds = 60.0  # from its next wait on, only a wake-up starts a round

    async def __call__(self, client: Any) -> bool:
        self.n += 1
        return await self._round(client)


def test_the_courier_is_woken_by_a_step_that_put_something_in_the_outbox(settings: Any, receiver: Receiver):
    endpoint(settings, receiver.start(), events=["gate.opened", "gate.answered"])

    async def body(host: Host) -> None:
        CountedRounds(host)
        await asyncio.sleep(1.1)  # the courier's wait under way when the test began ends (at most its 1 s scan)
        run_id = await host.start_run("escalation", DOOR)  # the first step
        await until(host, lambda: len(receiver.got) == 1, what="gate.opened sent long before the courier's next scan")
        await host.deliver(run_id, "gate", gate="review", event="reject", params={"reason": "no"}, by="bo")  # a step
        await until(host, lambda: len(receiver.got) == 2, what="gate.answered sent long before the next scan")
        assert [b["type"] for b in bodies(receiver)] == ["gate.opened", "gate.answered"]

    hosted({"escalation": escalation.machine}, body)


def test_gate_steps_that_put_nothing_in_the_outbox_leave_the_courier_asleep():
    """No endpoint and no assignee with an address: the Gates opened and answered put no row in the outbox, so no
    step wakes the courier for two empty queries (its scan still comes once a second in a real host)."""

    async def body(host: Host) -> None:
        rounds = CountedRounds(host)
        await asyncio.sleep(1.1)
        before = rounds.n
        started = [await host.start_run("escalation", DOOR) for _ in range(10)]
        for run_id in started:
            await host.deliver(run_id, "gate", gate="review", event="reject", params={"reason": "no"}, by="bo")
        for run_id in started:
            await until(host, status(run_id, "done"))
        assert rounds.n == before
        assert not await host.db(lambda: Delivery.objects.exists())

    hosted({"escalation": escalation.machine}, body)
