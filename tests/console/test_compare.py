"""Comparing two runs: histories walked from journals, aligned by step with time that fired nothing left out, a
fork lined up with its parent, the first difference marked; and the page."""

from __future__ import annotations

import asyncio
import html
import re
from typing import Any

import pytest
from django.test import Client

from console.pages.compare import align, forked_history, history_of
from engine import Session, SimulatedClock
from engine.core.journal.forking import plan_fork
from engine.models import JournalEntry, Run
from engine.runtime.host import Host
from tests.console.conftest import NOTES_DOOR, WORKFLOWS
from workflows import notes


def notes_journal(reply: str, tick: bool = False) -> list[dict[str, Any]]:
    session = Session(notes.machine, NOTES_DOOR, clock=SimulatedClock(0))
    if tick:
        session.advance(250)  # time passing that fires nothing: not a step
    session.pick("writer", "ask", {"question": "Who reads these?"})
    session.send_gate("writing.asking", "reply", {"text": reply})
    session.pick("writer", "done", {"notes": f"For {reply}"})
    return [{"seq": i, "entry": e.to_json()} for i, e in enumerate(session.journal, start=1)]


def test_the_same_inputs_are_the_same_even_when_the_clocks_ticked_differently() -> None:
    a = history_of("a", notes.machine, notes_journal("Ops"))
    b = history_of("b", notes.machine, notes_journal("Ops", tick=True))
    found = align(a, b)
    assert found.first is None and found.verdict == "same (4 steps)"
    assert [row.a.seq for row in found.rows if row.a] == [1, 2, 3, 4]
    assert [row.b.seq for row in found.rows if row.b] == [1, 3, 4, 5]
    # each row is numbered as the run pages and replay number each run's steps: its journal entry
    assert [row.label for row in found.rows] == ["step 1"] + [f"A's step {n}, B's step {n + 1}" for n in (2, 3, 4)]


def test_the_first_difference_is_marked_with_the_parts_that_differ() -> None:
    found = align(
        history_of("a", notes.machine, notes_journal("Ops")), history_of("b", notes.machine, notes_journal("Devs"))
    )
    assert found.first == 3
    row = found.rows[2]
    assert row.first and set(row.differs) == {"input", "answers"}
    assert "writing.asking got reply" in row.a.words and "Ops" in row.a.words and "Devs" in row.b.words
    assert found.verdict.startswith("first difference at step 3: what came in")
    assert [r.first for r in found.rows].count(True) == 1
    shorter = align(
        history_of("a", notes.machine, notes_journal("Ops")[:2]), history_of("b", notes.machine, notes_journal("Ops"))
    )
    assert shorter.first == 3 and shorter.rows[2].a is None and "only run B goes on" in shorter.verdict


def test_a_fork_lines_up_with_its_parent_and_its_edited_context_differs_at_the_fork_step() -> None:
    parent_journal = notes_journal("Ops")
    plan = plan_fork(
        notes.machine,
        parent_journal,
        2,
        parent="p",
        now=10_000,
        context={"changes": "Other changes", "replies": 0, "question": "Who reads these?"},
    )
    fork = Session.restore(notes.machine, plan.entry.session)
    fork.send_gate("writing.asking", "reply", {"text": "Ops"})
    fork_journal = [{"seq": 1, "entry": plan.entry}] + [
        {"seq": i, "entry": e} for i, e in enumerate(fork.journal, start=2)
    ]
    parent = history_of("p", notes.machine, parent_journal)
    own = history_of("f", notes.machine, fork_journal)
    history = forked_history("p", parent, 2, own)
    assert [(s.run, s.seq, s.inherited) for s in history] == [("p", 1, True), ("p", 2, False), ("f", 2, False)]
    assert "forked from run p at step 2 with its context edited" in history[1].forked
    found = align(parent, history)
    assert found.first == 2 and found.rows[1].differs == ("context",)


@pytest.mark.django_db(transaction=True)
def test_the_compare_page_shows_a_fork_beside_its_parent_with_the_first_difference(
    observer: Any, settings: Any
) -> None:
    settings.JR2_SCRIPTED = True
    made: dict[str, str] = {}

    async def main() -> None:
        host = Host(WORKFLOWS, owner="compare-tests")
        await host.start()
        try:
            parent = await host.start_run("notes", NOTES_DOOR)
            for _ in range(500):
                if await host.db(lambda: Run.objects.filter(id=parent, status="waiting").exists()):
                    break
                await asyncio.sleep(0.02)
            step = await host.db(lambda: JournalEntry.objects.get(run_id=parent, entry__event="ask").seq)
            made["fork"] = await host.fork_run(parent, step, answer=("writing.asking", "reply", {"text": "Ops"}))
            await host.deliver(parent, "gate", gate="writing.asking", event="reply", params={"text": "Admins"})
            for _ in range(500):
                if await host.db(lambda: Run.objects.filter(status="done").count() == 2):
                    break
                await asyncio.sleep(0.02)
            made["parent"] = parent
        finally:
            await host.stop()

    asyncio.run(main())
    client = Client()
    client.force_login(observer)
    page = client.get(f"/runs/compare/?a={made['parent']}&b={made['fork']}").content.decode()
    verdict = html.unescape(page[page.index('id="compare-verdict"') :].split("</p>")[0])
    first = page[page.index('id="first-difference"') :]
    first = first[: first.index("</tr>")]
    # one numbering: the verdict and the row name the steps as the run pages and replay do (their journal's #N)
    a_seq, b_seq = re.findall(r'\?step=(\d+)">#\1<', first)
    assert f"first difference at A's step {a_seq}, B's step {b_seq}: what came in" in verdict
    assert f"A&#x27;s step {a_seq}, B&#x27;s step {b_seq}" in first
    assert "Admins" in first and "Ops" in first and "writing.asking got reply" in first
    assert client.get("/runs/compare/?a=nosuchrun&b=" + made["fork"]).status_code == 404
    assert "name two runs to compare" in client.get("/runs/compare/?a=x").content.decode()
    run_page = client.get(f"/runs/{made['fork']}/").content.decode()
    assert f'href="/runs/{made["parent"]}/"' in run_page and "compare with it" in run_page
    parent_page = client.get(f"/runs/{made['parent']}/").content.decode()
    assert f'href="/runs/{made["fork"]}/"' in parent_page and 'id="run-forks"' in parent_page
