"""Exports written before the journal's entries had types (tests/fixtures/export-*.json: a notes run answered
and done, a fork of it cancelled, a code_review run with its Effects) still import, replay "same" against the
workflows as they are, and fork: the layout issue moved code, not data.

The code_review run imports whole, but is not replayed here: its command Effects name the interpreter and the
folder of the checkout that recorded it, which are part of what the run asked for (and so of its digests), and a
checkout elsewhere asks for other paths."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from engine.core.journal.replay import replay
from engine.models import JournalEntry, Run
from engine.runtime.host import Host
from engine.web.exchange import import_run
from tests.runtime.hosting import hosted, status, until
from workflows import code_review, notes

pytestmark = pytest.mark.django_db(transaction=True)

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
WORKFLOWS = {"notes": notes.machine, "code_review": code_review.machine}


def _export(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / f"export-{name}.json").read_text())


def _imported(name: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    data = _export(name)
    run = import_run(data)
    journal = list(JournalEntry.objects.filter(run=run).order_by("seq").values("seq", "kind", "entry", "out"))
    assert [row["entry"] for row in journal] == [row["entry"] for row in data["journal"]]
    return data, journal


def test_the_old_code_review_export_imports_whole() -> None:
    data, journal = _imported("review")
    assert [row["kind"] for row in journal].count("effect_done") == 3  # the checkout and two test runs


@pytest.mark.parametrize(("name", "steps"), [("notes", 7), ("fork", 3)])
def test_an_export_of_the_old_format_imports_and_replays_the_same(name: str, steps: int) -> None:
    data, journal = _imported(name)
    report = replay(WORKFLOWS[data["run"]["workflow"]], journal)
    assert report.same, report.message
    assert report.message.startswith("same (")
    assert len(journal) >= steps


def test_an_imported_old_run_forks_and_the_fork_runs_on(settings: Any) -> None:
    settings.JR2_SCRIPTED = True
    run = import_run(_export("notes"))
    made: dict[str, str] = {}

    async def body(host: Host) -> None:
        made["fork"] = await host.fork_run(run.id, 3)
        await until(host, status(made["fork"], "waiting"))
        await host.deliver(made["fork"], "gate", gate="writing.asking", event="reply", params={"text": "Ops"})
        await until(host, status(made["fork"], "done"))

    hosted(WORKFLOWS, body)
    fork = Run.objects.get(id=made["fork"])
    assert fork.parent_id == run.id and fork.status == "done"
    assert "Ops" in json.dumps(fork.output)
