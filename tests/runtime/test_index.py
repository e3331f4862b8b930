"""The inbox's and search's records, written with each step: Gate openings and closings (who answered, with what),
the states a run is in and passed through, the events it took, its Agents, the words of its input and output; and
"waiting" for a run only a person can move."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User

from engine.models import GateRecord, JournalEntry, Run, RunMark, RunText
from engine.runtime.host import Host
from engine.runtime.index import words
from tests.runtime.hosting import hosted, status, until
from workflows import notes, triage

pytestmark = pytest.mark.django_db(transaction=True)

WORKFLOWS = {"notes": notes.machine, "triage": triage.machine}
DOOR = {"changes": "Faster Start-up.\nÉtats exportés."}


@pytest.fixture(autouse=True)
def offline(settings: Any) -> None:
    settings.JR2_SCRIPTED = True


def marks(run_id: str, kind: str) -> set[str]:
    return set(RunMark.objects.filter(run_id=run_id, kind=kind).values_list("name", flat=True))


def test_a_gate_is_recorded_open_then_closed_with_its_answer_and_who_sent_it() -> None:
    async def body(host: Host) -> None:
        run_id = await host.start_run("notes", DOOR)
        await until(host, status(run_id, "waiting"))
        opened = await host.db(lambda: list(GateRecord.objects.filter(run_id=run_id).values()))
        assert len(opened) == 1 and opened[0]["closed_at"] is None
        assert opened[0]["gate"] == "writing.asking" and opened[0]["workflow"] == "notes"
        assert opened[0]["accepts"] == ["reply"] and "question" in opened[0]["meta"]
        assert await host.db(lambda: marks(run_id, "in")) == {"writing", "writing.asking"}
        await host.deliver(run_id, "gate", gate="writing.asking", event="reply", params={"text": "Admins"}, by="ann")
        await until(host, status(run_id, "done"))

        def found() -> dict[str, Any]:
            record = GateRecord.objects.get(run_id=run_id)
            return {
                "record": (record.closed_at is not None, record.event, record.answered_by),
                "by": JournalEntry.objects.get(run_id=run_id, kind="gate").entry.get("by"),
                "in": marks(run_id, "in"),
                "passed": marks(run_id, "passed"),
                "event": marks(run_id, "event"),
                "agent": marks(run_id, "agent"),
                "text": RunText.objects.get(run_id=run_id),
            }

        got = await host.db(found)
        assert got["record"] == (True, "reply", "ann") and got["by"] == "ann"
        assert got["in"] == {"published"}
        assert {"writing", "writing.drafting", "writing.asking", "published"} <= got["passed"]
        assert got["event"] == {"ask", "reply", "done"} and got["agent"] == {"writer"}
        assert "faster start-up" in got["text"].input and "états exportés" in got["text"].input
        assert "changes" not in got["text"].input, "keys are not words of the input"
        assert "admins" in got["text"].output

    hosted(WORKFLOWS, body)


def test_a_cancelled_run_closes_its_gate_without_an_answer() -> None:
    async def body(host: Host) -> None:
        run_id = await host.start_run("notes", DOOR)
        await until(host, status(run_id, "waiting"))
        await host.cancel(run_id)
        await until(host, status(run_id, "cancelled"))
        record = await host.db(lambda: GateRecord.objects.get(run_id=run_id))
        assert record.closed_at is not None and record.event == "" and record.answered_by == ""

    hosted(WORKFLOWS, body)


def test_a_taken_up_run_goes_on_from_its_committed_view() -> None:
    """A restarted host starts from the view it committed: the open Gate is not opened a second time."""
    made: dict[str, str] = {}

    async def first(host: Host) -> None:
        made["run"] = await host.start_run("notes", DOOR)
        await until(host, status(made["run"], "waiting"))

    hosted(WORKFLOWS, first)

    async def second(host: Host) -> None:
        run_id = made["run"]
        await host.deliver(run_id, "gate", gate="writing.asking", event="reply", params={"text": "Ops"}, by="bo")
        await until(host, status(run_id, "done"))
        rows = await host.db(
            lambda: list(GateRecord.objects.filter(run_id=run_id).values_list("answered_by", flat=True))
        )
        assert rows == ["bo"]

    hosted(WORKFLOWS, second)


def test_a_run_whose_open_turn_waits_on_the_person_in_its_seat_is_waiting() -> None:
    ann = User.objects.create_user("ann")

    async def body(host: Host) -> None:
        run_id = await host.start_run("notes", DOOR, seats={"writer": (ann.pk, "ann")})
        run = await until(host, lambda: Run.objects.filter(id=run_id).first())
        assert run.status == "waiting", "only ann can move this run: it is not running"
        assert await host.db(lambda: marks(run_id, "agent")) == {"writer"}

    hosted(WORKFLOWS, body)


def test_words_are_the_values_case_folded() -> None:
    assert words({"a": "Hello", "b": [1, {"c": "WORLD"}], "d": None}) == "hello\n1\nworld"
    assert words(None) == ""


def test_words_do_not_depend_on_the_order_of_an_objects_keys() -> None:
    """PostgreSQL's jsonb gives an object's keys back in its own order: an imported run's text must match."""
    assert words({"topic": "export crash", "notes": "it crashes."}) == "it crashes.\nexport crash"
    assert words({"notes": "it crashes.", "topic": "export crash"}) == "it crashes.\nexport crash"
