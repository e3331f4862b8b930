"""The Gate inbox: every open Gate with its form, filters and order in the URL, answers one by one or several at
once (each delivered on its own, the page saying which had closed and who answered them), the header's count,
and the live sockets."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from django.test import AsyncClient, Client
from django.utils.html import escape

from engine.models import GateRecord, Run
from engine.runtime.host import Host
from tests.console.conftest import NOTES_DOOR, WORKFLOWS, _until, logged_in
from tests.console.test_live import communicator, receive_until

pytestmark = pytest.mark.django_db(transaction=True)


def items(page: str) -> list[str]:
    return re.findall(r'<article class="inbox-item gate" id="gate-item-(\d+)"', page)


def record(run_id: str) -> GateRecord:
    return GateRecord.objects.filter(run_id=run_id).latest("opened_at")


def with_host(body: Callable[[Host], Awaitable[Any]]) -> Any:
    async def main() -> Any:
        host = Host(WORKFLOWS, owner="inbox-tests")
        await host.start()
        try:
            return await body(host)
        finally:
            await host.stop()

    return asyncio.run(main())


async def waiting_notes(host: Host, n: int) -> list[str]:
    made = []
    for _ in range(n):
        run_id = await host.start_run("notes", NOTES_DOOR)
        await _until(host, run_id, "waiting")
        made.append(run_id)
    return made


async def post(user: Any, data: dict[str, Any], htmx: bool = False) -> Any:
    client = AsyncClient()
    await client.aforce_login(user)
    return await client.post("/gates/answer/", data, headers={"HX-Request": "true"} if htmx else None)


# -- the page ----------------------------------------------------------------------------------------------------


def test_the_inbox_lists_every_open_gate_with_its_run_state_meta_and_form(answerer: Any, runs: dict[str, str]) -> None:
    page = logged_in(answerer).get("/gates/").content.decode()
    shown = items(page)
    assert shown == [str(record(runs["waiting"]).pk), str(record(runs["triage"]).pk)], "oldest first, open only"
    notes_item = page[page.index(f'id="gate-item-{shown[0]}"') : page.index(f'id="gate-item-{shown[1]}"')]
    assert f'href="/runs/{runs["waiting"]}/"' in notes_item and "writing.asking" in notes_item
    assert "Who reads these notes, and what should they know first?" in notes_item
    assert "waiting under a minute" in notes_item
    assert 'data-event="reply"' in notes_item and 'name="text"' in notes_item and "Send reply" in notes_item
    assert 'class="inbox-select"' in notes_item
    assert 'id="inbox-count">2<' in page


def test_filters_and_order_live_in_the_url(answerer: Any, runs: dict[str, str]) -> None:
    client = logged_in(answerer)
    assert items(client.get("/gates/?workflow=triage").content.decode()) == [str(record(runs["triage"]).pk)]
    assert items(client.get("/gates/?gate=writing.asking").content.decode()) == [str(record(runs["waiting"]).pk)]
    newest = items(client.get("/gates/?order=newest").content.decode())
    assert newest == [str(record(runs["triage"]).pk), str(record(runs["waiting"]).pk)]
    page = client.get("/gates/?workflow=triage&order=newest").content.decode()
    assert 'ws-connect="/ws/gates/?workflow=triage&amp;order=newest&amp;shown=' in page
    wrong = client.get("/gates/?order=sideways")
    assert wrong.status_code == 400
    assert escape('order: "sideways" is not one of oldest, newest') in wrong.content.decode()


def test_a_rejecting_event_takes_its_reason_first(answerer: Any, runs: dict[str, str]) -> None:
    page = logged_in(answerer).get("/gates/?workflow=triage").content.decode()
    form = page[page.index('data-event="withdraw"') :]
    form = form[: form.index("</form>")]
    assert (
        "rejecting"
        in page[page.rindex("<form", 0, page.index('data-event="withdraw"')) : page.index('data-event="withdraw"')]
    )
    assert 'class="send danger"' in form
    assert form.index('name="reason"') < form.index("</p>", form.index('name="reason"')), "the reason field is there"
    assert "takes no reason" not in form


def test_an_observer_reads_the_inbox_but_gets_no_form_and_an_anonymous_visitor_logs_in(
    observer: Any, client: Client, runs: dict[str, str]
) -> None:
    page = logged_in(observer).get("/gates/").content.decode()
    assert len(items(page)) == 2 and "You may read these Gates but not answer them." in page
    assert "Send reply" not in page and 'class="inbox-select"' not in page
    response = client.get("/gates/")
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


def test_the_header_counts_the_open_gates_the_user_may_answer_on_every_page(
    answerer: Any, observer: Any, runs: dict[str, str]
) -> None:
    client = logged_in(answerer)
    for url in ("/", "/runs/", "/workflows/notes/", f"/runs/{runs['done']}/", "/gates/"):
        assert 'id="gate-count-n">2<' in client.get(url).content.decode(), url
    assert 'id="gate-count-n">0<' in logged_in(observer).get("/").content.decode()  # may answer none


# -- answering -----------------------------------------------------------------------------------------------------


def test_answering_one_gate_delivers_it_and_records_who(answerer: Any, settings: Any) -> None:
    settings.JR2_SCRIPTED = True

    async def body(host: Host) -> tuple[Any, str]:
        [run_id] = await waiting_notes(host, 1)
        gate = await host.db(lambda: record(run_id))
        response = await post(answerer, {"_event": "reply", "gate": gate.pk, "text": "Admins"}, htmx=True)
        await _until(host, run_id, "done")
        return response, run_id

    response, run_id = with_host(body)
    html = response.content.decode()
    assert response.status_code == 200 and "1 delivered" in html
    assert "closed: answered by ann with reply" in html and 'hx-swap-oob="true"' in html
    closed = record(run_id)
    assert closed.answered_by == "ann" and closed.event == "reply" and closed.closed_at is not None


def test_a_batch_delivers_each_and_says_which_had_already_closed(answerer: Any, settings: Any) -> None:
    """Three Gates of one kind selected; one is answered by bob in between: two are delivered, one is reported
    closed with who answered it, and bob's answer stands."""
    settings.JR2_SCRIPTED = True

    async def body(host: Host) -> tuple[Any, list[str]]:
        made = await waiting_notes(host, 3)
        ids = await host.db(lambda: [record(r).pk for r in made])
        await host.deliver(made[1], "gate", gate="writing.asking", event="reply", params={"text": "Bob's"}, by="bob")
        await _until(host, made[1], "done")
        response = await post(answerer, {"_event": "reply", "gate": ids, "text": "Everyone"}, htmx=True)
        for run_id in made:
            await _until(host, run_id, "done")
        return response, made

    response, made = with_host(body)
    html = response.content.decode()
    assert "2 delivered</strong>, 1 already closed" in html
    assert "already closed (answered by bob with reply)" in html
    outputs = {run_id: Run.objects.get(id=run_id).output["notes"] for run_id in made}
    assert "Bob&#x27;s" not in html and "Bob's" in outputs[made[1]] and "Everyone" in outputs[made[0]]
    assert [record(r).answered_by for r in made] == ["ann", "bob", "ann"]


def test_a_batch_of_different_kinds_or_a_wrong_input_delivers_nothing(answerer: Any, runs: dict[str, str]) -> None:
    async def body(host: Host) -> list[Any]:
        notes_gate, desk = await host.db(lambda: (record(runs["waiting"]).pk, record(runs["triage"]).pk))
        return [
            await post(answerer, {"_event": "reply", "gate": [notes_gate, desk], "text": "x"}),
            await post(answerer, {"_event": "reply", "gate": [notes_gate]}, htmx=True),
            await post(answerer, {"_event": "label", "gate": [notes_gate], "text": "x"}),
            await post(answerer, {"_event": "reply", "gate": ["12; drop"], "text": "x"}),
            await post(answerer, {"_event": "reply", "text": "x"}),
        ]

    mixed, empty, wrong_event, bad_id, none = with_host(body)
    assert mixed.status_code == 400 and "select Gates of one kind" in mixed.content.decode()
    assert "Nothing was delivered." in mixed.content.decode()
    assert "is not valid (see the form)" in empty.content.decode()
    assert "This field is required." in empty.content.decode()
    assert escape('does not take "label"') in wrong_event.content.decode()
    assert "is not a Gate of the inbox" in bad_id.content.decode()
    assert "no Gate selected" in none.content.decode()
    assert Run.objects.get(id=runs["waiting"]).status == "waiting"
    assert record(runs["waiting"]).closed_at is None and record(runs["triage"]).closed_at is None


def test_only_those_who_may_answer_can_post(observer: Any, runs: dict[str, str]) -> None:
    response = asyncio.run(post(observer, {"_event": "reply", "gate": [record(runs["waiting"]).pk], "text": "x"}))
    assert response.status_code == 403


# -- live ----------------------------------------------------------------------------------------------------------


def test_a_gate_that_opens_appears_and_one_answered_elsewhere_says_who(
    answerer: Any, settings: Any, channel_layer: str
) -> None:
    settings.JR2_SCRIPTED = True

    async def body(host: Host) -> None:
        inbox = communicator("/ws/gates/?workflow=notes&shown=", answerer)
        count = communicator("/ws/gates/count/", answerer)
        assert (await inbox.connect())[0] and (await count.connect())[0]
        assert json.loads(await count.receive_from(timeout=5)) == {"open": 0, "opened": []}
        await inbox.receive_from(timeout=5)
        run_id = await host.start_run("notes", NOTES_DOOR)
        added = await receive_until(inbox, "writing.asking")
        assert 'hx-swap-oob="beforeend:#inbox-items"' in added and f"/runs/{run_id}/" in added
        assert 'id="inbox-count" hx-swap-oob="true">1<' in added
        told = json.loads(await count.receive_from(timeout=5))
        assert told == {"open": 1, "opened": [{"workflow": "notes", "gate": "writing.asking", "run": run_id}]}
        await host.deliver(run_id, "gate", gate="writing.asking", event="reply", params={"text": "Ops"}, by="bob")
        gone = await receive_until(inbox, "inbox-closed")
        assert "closed: answered by bob with reply" in gone and 'id="inbox-count" hx-swap-oob="true">0<' in gone
        assert json.loads(await count.receive_from(timeout=5))["open"] == 0
        await inbox.disconnect()
        await count.disconnect()

        again = communicator(f"/ws/gates/?shown={await host.db(lambda: record(run_id).pk)}", answerer)
        assert (await again.connect())[0]
        whole = await again.receive_from(timeout=5)
        assert "closed: answered by bob with reply" in whole, "a page that connects is told what changed since"
        await again.disconnect()

    with_host(body)


def test_the_inbox_sockets_refuse_an_anonymous_visitor(runs: dict[str, str]) -> None:
    from django.contrib.auth.models import AnonymousUser

    async def main() -> list[Any]:
        out = []
        for path in ("/ws/gates/", "/ws/gates/count/"):
            socket = communicator(path, AnonymousUser())
            out.append(await socket.connect())
        return out

    assert all(not connected for connected, _ in asyncio.run(main()))
