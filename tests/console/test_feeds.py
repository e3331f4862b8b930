"""Big runs on the run page: the newest steps and Turns first, older ones by cursor, deep links to one step, the
live head merged by id, and the database work of a commit that does not grow with the number of open pages."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils.html import escape

from bench import ledger
from console.consumers import run as run_consumers
from console.pages import feeds
from console.pages.runview import agent_turns
from engine.models import JournalEntry, Run, TurnMessage, TurnRecord
from engine.runtime.host import Host
from tests.console.conftest import logged_in, user_in
from tests.console.test_live import communicator, receive_until

pytestmark = pytest.mark.django_db(transaction=True)

STEP = re.compile(r'id="step-(\d+)"')
TURN = re.compile(r'<article class="turn[^"]*" id="[^"]*" data-cursor="(\d+)"')
LOADER = re.compile(r'hx-get="([^"]+)"')
LINE_TEXT = re.compile(r'<li class="line [^"]*">.*?<pre[^>]*>(.*?)</pre>', re.S)


async def _ledger_run(host: Host, notes: int, lap: int, steps: int) -> str:
    """A ledger run whose clerk took `notes` notes in laps of `lap`, then ticked at its desk until it has at least
    `steps` steps."""
    run_id = await host.start_run("ledger", {"notes": notes, "lap": lap})
    for _ in range(3000):
        if await host.db(lambda: Run.objects.filter(id=run_id, status="waiting").exists()):
            break
        await asyncio.sleep(0.01)
    await host.deliver(run_id, "gate", gate="writing.asking", event="reply", params={"text": "File them."})
    while await host.db(lambda: Run.objects.get(id=run_id).seq) < steps:
        assert (await host.deliver(run_id, "gate", gate="desk", event="tick", params={})).outcome == "delivered"
    return run_id


def ledger_run(notes: int, lap: int, steps: int) -> str:
    async def main() -> str:
        host = Host({"ledger": ledger.machine}, owner="feeds-tests")
        await host.start()
        try:
            return await _ledger_run(host, notes, lap, steps)
        finally:
            await host.stop()

    return asyncio.run(main())


def follow(client: Client, html: str, pattern: re.Pattern[str]) -> list[int]:
    """Every item of a feed: those in `html`, then the pages its loaders fetch, to the end."""
    found = [int(x) for x in pattern.findall(html)]
    loaders = LOADER.findall(html)
    while loaders:
        url = loaders.pop(0).replace("&amp;", "&")
        response = client.get(url)
        assert response.status_code == 200, url
        more = response.content.decode()
        found += [int(x) for x in pattern.findall(more)]
        loaders += LOADER.findall(more)
    return found


def section(html: str, start: str, end: str) -> str:
    return html[html.index(start) : html.index(end)]


def test_a_big_run_opens_with_its_newest_page_and_loads_the_rest_by_cursor(ledger_folder: Path) -> None:
    run_id = ledger_run(notes=60, lap=20, steps=260)
    run = Run.objects.get(id=run_id)
    client = logged_in("olga")
    page = client.get(f"/runs/{run_id}/").content.decode()
    steps = section(page, 'id="run-steps"', 'id="run-turns"')
    shown = [int(x) for x in STEP.findall(steps)]
    assert shown == list(range(run.seq, run.seq - feeds.STEP_PAGE, -1)), "the newest steps first, one page"
    assert follow(client, steps, STEP) == list(range(run.seq, 0, -1)), "every step once, newest first"

    turns = page[page.index('id="run-turns"') :]
    head = [int(x) for x in TURN.findall(turns)]
    every = list(TurnRecord.objects.filter(run_id=run_id).order_by("-pk").values_list("pk", flat=True))
    assert len(every) == 3 and head == every[: len(head)] and len(head) < len(every)
    messages = TurnMessage.objects.filter(turn_id__in=head).count()
    assert messages <= feeds.TURN_PAGE
    assert follow(client, turns, TURN) == every
    summary = re.search(r'id="run-summary"[^>]*>(.*?)</p>', page, re.S)
    assert summary is not None
    text = re.sub(r"<[^>]+>", "", summary.group(1))
    total = TurnMessage.objects.filter(run_id=run_id).count()
    assert f"{run.seq} steps" in text and "3 Turns" in text and f"{total} messages" in text
    assert "&lt;br/&gt; &amp; keeps" in turns and "<br/> &" not in page


def test_a_long_turn_shows_its_last_messages_and_loads_the_earlier_ones(ledger_folder: Path) -> None:
    run_id = ledger_run(notes=70, lap=100, steps=0)
    record = TurnRecord.objects.get(run_id=run_id)
    total = TurnMessage.objects.filter(turn=record).count()
    assert total > feeds.TURN_PAGE
    client = logged_in("olga")
    page = client.get(f"/runs/{run_id}/").content.decode()
    turns = page[page.index('id="run-turns"') :]  # a step's cursor (its seq) may be the Turn's (its pk)
    card = turns[turns.index(f'data-cursor="{record.pk}"') :]
    shown = card.count('<li class="line ')
    assert f"{total - feeds.TURN_PAGE} earlier messages" in card
    url = LOADER.search(card)
    assert url is not None and f"/turns/{record.pk}/lines/?before=" in url.group(1)
    earlier = client.get(url.group(1)).content.decode()
    assert "earlier message" not in earlier, "the rest fits in one page"
    lines = earlier.count('<li class="line ') + shown
    assert "Finding 1: " in earlier and "Finding 70: " in card
    whole = [line for turns in agent_turns(Run.objects.get(id=run_id)) for turn in turns.turns for line in turn.lines]
    assert lines == len(whole), "the same lines as the whole Turn read at once"
    assert [*LINE_TEXT.findall(earlier), *LINE_TEXT.findall(card)] == [escape(x.text or x.input) for x in whole]


def test_a_deep_link_opens_an_old_step_with_the_steps_between_left_to_load(ledger_folder: Path) -> None:
    run_id = ledger_run(notes=5, lap=5, steps=400)
    last = Run.objects.get(id=run_id).seq
    client = logged_in("olga")
    page = client.get(f"/runs/{run_id}/?step=100").content.decode()
    steps = section(page, 'id="run-steps"', 'id="run-turns"')
    assert 'data-step="100"' in steps and 'id="step-100"' in steps
    shown = [int(x) for x in STEP.findall(steps)]
    head = list(range(last, last - feeds.STEP_PAGE, -1))
    assert shown[: feeds.STEP_PAGE] == head
    around = shown[feeds.STEP_PAGE :]
    assert around == list(range(100 + feeds.STEP_PAGE // 2, 100 + feeds.STEP_PAGE // 2 - feeds.STEP_PAGE, -1))
    loaders = [u.replace("&amp;", "&") for u in LOADER.findall(steps)]
    assert loaders == [
        f"/runs/{run_id}/steps/?before={head[-1]}&after={around[0]}",
        f"/runs/{run_id}/steps/?before={around[-1]}",
    ]
    assert sorted(follow(client, steps, STEP), reverse=True) == list(range(last, 0, -1)), "no step twice, none lost"
    step_text = JournalEntry.objects.get(run_id=run_id, seq=100).kind
    assert step_text in ("gate", "advance")
    assert f'data-link="/runs/{run_id}/?step=100"' in steps, "every step has its copy link"

    recent = client.get(f"/runs/{run_id}/?step={last - 3}").content.decode()
    steps = section(recent, 'id="run-steps"', 'id="run-turns"')
    assert f'data-step="{last - 3}"' in steps and "&after=" not in steps.replace("&amp;", "&")
    assert [int(x) for x in STEP.findall(steps)] == head, "a step the head shows needs no other page"


@pytest.mark.parametrize(
    "step, says",
    [
        ("0", "there is no step 0 in this run"),
        ("9999", "there is no step 9999 in this run"),
        ("x1", "step must be a whole number of 0 or more, not &#x27;x1&#x27;"),
    ],
)
def test_a_deep_link_to_no_such_step_says_so_and_opens_the_run(step: str, says: str, ledger_folder: Path) -> None:
    run_id = ledger_run(notes=2, lap=5, steps=0)
    response = logged_in("olga").get(f"/runs/{run_id}/?step={step}")
    page = response.content.decode()
    assert response.status_code == 200 and says in page and "data-step=" not in page
    assert f'id="step-{Run.objects.get(id=run_id).seq}"' in page


def test_the_feed_pages_check_their_cursors_and_who_reads(ledger_folder: Path, client: Client) -> None:
    run_id = ledger_run(notes=2, lap=5, steps=0)
    turn = TurnRecord.objects.get(run_id=run_id)
    other = ledger_run(notes=1, lap=5, steps=0)
    reading = logged_in("olga")
    for url, status, says in [
        (f"/runs/{run_id}/steps/?before=x", 400, "before must be a whole number of 0 or more, not 'x'"),
        (f"/runs/{run_id}/steps/?before=3&after=3", 400, "before (3) must be above after (3)"),
        (f"/runs/{run_id}/turns/?after=-1", 400, "after must be a whole number of 0 or more, not '-1'"),
        (f"/runs/{run_id}/turns/{turn.pk}/lines/", 400, "before is needed"),
        (f"/runs/{other}/turns/{turn.pk}/lines/?before=3", 404, ""),
        ("/runs/nosuchrun/steps/", 404, ""),
    ]:
        response = reading.get(url)
        assert response.status_code == status and says in response.content.decode(), url
    anonymous = client.get(f"/runs/{run_id}/steps/")
    assert anonymous.status_code == 302 and anonymous["Location"].startswith("/accounts/login/")


def test_a_live_page_gets_the_new_steps_as_a_head_to_merge(ledger_folder: Path) -> None:
    answerer = user_in("ann", "gate-answerers")

    async def main() -> None:
        host = Host({"ledger": ledger.machine}, owner="feeds-tests")
        await host.start()
        try:
            run_id = await _ledger_run(host, notes=2, lap=5, steps=0)
            socket = communicator(f"/ws/runs/{run_id}/", answerer)
            assert (await socket.connect())[0]
            first = await receive_until(socket, 'id="run-steps-head"')
            assert 'hx-swap-oob="afterbegin:#run-steps-list"' in first
            assert 'hx-swap-oob="afterbegin:#run-turns-list"' in first
            await host.deliver(run_id, "gate", gate="desk", event="tick", params={})
            seq = await host.db(lambda: Run.objects.get(id=run_id).seq)
            moved = await receive_until(socket, f'id="step-{seq}"')
            head = moved[moved.index('id="run-steps-head"') :]
            assert "the Gate desk got tick" in head and f'data-prev="{seq - feeds.STEP_HEAD}"' in head
            assert len(STEP.findall(head)) == feeds.STEP_HEAD, "a live update carries the newest steps only"
            assert 'id="run-turns-head"' not in moved, "the Turns did not change, so they are not sent again"
            await socket.disconnect()
        finally:
            await host.stop()

    asyncio.run(main())


def test_the_queries_of_a_commit_are_the_same_for_1_10_and_100_open_pages(
    ledger_folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the hub does for a commit (read the run, render its regions) is counted in the thread it runs in; the
    pages only take their share of the one render."""
    answerer = user_in("ann", "gate-answerers")
    counted: list[int] = []
    renders: list[str] = []

    def counting(fn: Any) -> Any:
        def run(*args: Any, **kwargs: Any) -> Any:
            with CaptureQueriesContext(connection) as queries:
                out = fn(*args, **kwargs)
            counted.append(len(queries.captured_queries))
            renders.append(fn.__name__)
            return out

        return run

    async def main() -> dict[int, tuple[int, list[str]]]:
        per: dict[int, tuple[int, list[str]]] = {}
        host = Host({"ledger": ledger.machine}, owner="feeds-tests")
        await host.start()
        try:
            run_id = await _ledger_run(host, notes=2, lap=5, steps=0)
            for viewers in (1, 10, 100):
                sockets = [communicator(f"/ws/runs/{run_id}/", answerer) for _ in range(viewers)]
                for socket in sockets:
                    assert (await socket.connect())[0]
                    await receive_until(socket, 'id="run-steps-head"')
                with monkeypatch.context() as patched:
                    patched.setattr(run_consumers, "commit_views", counting(run_consumers.commit_views))
                    counted.clear()
                    renders.clear()
                    await host.deliver(run_id, "gate", gate="desk", event="tick", params={})
                    seq = await host.db(lambda: Run.objects.get(id=run_id).seq)
                    for socket in sockets:
                        await receive_until(socket, f'id="step-{seq}"')
                    per[viewers] = (sum(counted), list(renders))
                for socket in sockets:
                    await socket.disconnect()
        finally:
            await host.stop()
        return per

    per = asyncio.run(main())
    assert per[1][1] == ["commit_views"], "one call on the sync thread for a commit, for every page"
    assert per[1][0] > 1
    assert per[1] == per[10] == per[100], per


@pytest.mark.parametrize(("notes", "lap", "long"), [(6, 2, False), (70, 100, True)])
def test_the_head_reads_in_few_statements_with_each_turns_totals_over_all_its_calls(
    notes: int, lap: int, long: bool, ledger_folder: Path
) -> None:
    """The head is read again after every commit of a live run: the summary's three counts in one statement, a short
    Turn's totals summed from the calls its lines read anyway (a long one's counted by the database), and the numbers
    those of all the Turn's calls."""
    from django.db.models import Count, Sum

    from engine.models import ModelCall

    run_id = ledger_run(notes=notes, lap=lap, steps=0)
    run = Run.objects.get(id=run_id)
    with CaptureQueriesContext(connection) as queries:
        head = feeds.head(run_id, run.seq)
    assert any(item.hidden for item in head.turns.turns) == long
    # summary 1, steps 1, Turns 1, messages 1, calls 1 (+ a long Turn's totals and its window: 5)
    assert len(queries.captured_queries) <= (10 if long else 5), [q["sql"][:60] for q in queries.captured_queries]
    assert head.summary.turns == TurnRecord.objects.filter(run_id=run_id).count()
    assert head.summary.messages == TurnMessage.objects.filter(run_id=run_id).count()
    assert head.summary.model_calls == ModelCall.objects.filter(run_id=run_id).count() > 0
    expected = {
        row["turn_id"]: (row["n"], round(float(row["ms"] or 0), 1))
        for row in ModelCall.objects.filter(run_id=run_id)
        .values("turn_id")
        .annotate(n=Count("id"), ms=Sum("latency_ms"))
    }
    shown = {item.view.record.pk: (item.view.calls, item.view.latency_ms) for item in head.turns.turns}
    assert shown and all(shown[pk] == expected.get(pk, (0, 0.0)) for pk in shown)
