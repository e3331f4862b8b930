"""Export a run as one JSON file and import it read-only: the round trip keeps every record, a bad file is refused
naming what is wrong and imports nothing, and an imported live run is never hosted."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from engine.models import EffectRecord, JournalEntry, ModelCall, Run, RunSnapshot, TurnMessage, TurnRecord
from engine.runtime.host import Host, RunNotHosted
from engine.web.exchange import ExchangeError, export_run, import_run, schema, validate
from tests.runtime.hosting import hosted, status, until
from workflows import code_review, notes

pytestmark = pytest.mark.django_db(transaction=True)

WORKFLOWS = {"notes": notes.machine, "code_review": code_review.machine}


@pytest.fixture(autouse=True)
def offline(settings: Any) -> None:
    settings.JR2_SCRIPTED = True


def _made(review: bool = True) -> dict[str, str]:
    """A notes run waiting at its Gate and, with `review`, a code_review run done (its real pytest Effect takes
    seconds, so the tests that read only the notes run go without)."""
    made: dict[str, str] = {}

    async def body(host: Host) -> None:
        made["notes"] = await host.start_run("notes", {"changes": "One.\nTwo."})
        await until(host, status(made["notes"], "waiting"))
        if review:
            made["review"] = await host.start_run("code_review", {"task": "Add add()."})
            await until(host, status(made["review"], "done"), timeout=30)

    hosted(WORKFLOWS, body)
    return made


def _records(run_id: str) -> dict[str, Any]:
    """Everything of a run but its id and the database's row ids."""

    def rows(model: Any, *order: str, drop: tuple[str, ...] = ()) -> list[dict[str, Any]]:
        return [
            {k: v for k, v in row.items() if k not in ("id", "run_id", "turn_id", *drop)}
            for row in model.objects.filter(run_id=run_id).order_by(*order).values()
        ]

    run = Run.objects.filter(id=run_id).values().get()
    return {
        "run": {k: v for k, v in run.items() if k not in ("id", "imported_from", "started_by_id")},
        "journal": rows(JournalEntry, "seq"),
        "snapshots": rows(RunSnapshot, "seq", drop=("created_at",)),
        "turns": rows(TurnRecord, "turn"),
        "messages": rows(TurnMessage, "conversation", "seq"),
        "calls": rows(ModelCall, "seq"),
        "effects": rows(EffectRecord, "effect"),
    }


def test_an_export_imports_whole_and_read_only_keeping_its_id_where_it_is_free() -> None:
    made = _made()
    for run_id in made.values():
        data = json.loads(json.dumps(export_run(run_id)))  # through a file's JSON
        assert data["format"] == "jr2.run" and data["version"] == 1
        before = _records(run_id)
        Run.objects.filter(id=run_id).delete()  # as on another instance
        run = import_run(data)
        assert run.id == run_id and run.imported_from == run_id and run.imported and not run.live
        assert _records(run_id) == before
    review = _records(made["review"])
    assert review["effects"] and review["calls"] and review["messages"]


def test_importing_again_gives_a_new_id_and_an_imported_live_run_is_never_hosted() -> None:
    made = _made(review=False)
    again = import_run(export_run(made["notes"]))
    assert again.id != made["notes"] and again.imported_from == made["notes"]
    assert again.status == "waiting" and not again.live
    assert JournalEntry.objects.filter(run=again).count() == JournalEntry.objects.filter(run_id=made["notes"]).count()

    async def body(host: Host) -> None:
        assert host.holds(made["notes"]) and not host.holds(again.id)
        with pytest.raises(RunNotHosted, match=r"imported, read-only\); nothing was delivered"):
            await host.deliver(again.id, "gate", gate="writing.asking", event="reply", params={"text": "x"})

    hosted(WORKFLOWS, body)


def _broken(data: dict[str, Any], how: str) -> dict[str, Any]:
    bad = copy.deepcopy(data)
    if how == "missing":
        del bad["run"]["workflow"]
    elif how == "mistyped":
        bad["journal"][0]["seq"] = "one"
    elif how == "unknown field":
        bad["run"]["colour"] = "blue"
    elif how == "gap":
        bad["journal"][-1]["seq"] += 5
    elif how == "orphan message":
        bad["messages"][0]["turn"] = "turn-99"
    elif how == "format":
        bad["format"] = "something.else"
    elif how == "version":
        bad["version"] = 7
    elif how == "nul":
        bad["journal"][0]["entry"]["input"]["changes"] = "One.\x00"
    return bad


@pytest.mark.parametrize(
    ("how", "words"),
    [
        ("missing", "run.workflow: Field required"),
        ("mistyped", "journal.0.seq: Input should be a valid integer"),
        ("unknown field", "run.colour: Extra inputs are not permitted"),
        ("gap", "journal: the seqs must run 1, 2, 3… without a gap"),
        ("orphan message", "messages.0.turn: no Turn turn-99 in turns"),
        ("format", 'not a jr2 run export: "format" must be "jr2.run"'),
        ("version", "this instance reads run exports of version 1; the file is version 7"),
        ("nul", "journal.0.entry.input.changes: text may not contain the NUL character"),
    ],
)
def test_a_bad_file_is_refused_naming_what_is_wrong_and_imports_nothing(how: str, words: str) -> None:
    made = _made(review=False)
    data = export_run(made["notes"])
    counts = (Run.objects.count(), JournalEntry.objects.count(), TurnMessage.objects.count())
    with pytest.raises(ExchangeError) as refused:
        import_run(_broken(data, how))
    assert words in str(refused.value)
    assert (Run.objects.count(), JournalEntry.objects.count(), TurnMessage.objects.count()) == counts


def test_the_schema_describes_the_format_and_a_good_file_validates() -> None:
    found = schema()
    assert set(found["required"]) >= {"format", "version", "run", "journal"}
    made = _made(review=False)
    assert validate(export_run(made["notes"])).run.id == made["notes"]
    with pytest.raises(ExchangeError, match="a run export is a JSON object; got list"):
        validate([])
