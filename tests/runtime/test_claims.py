"""Claims on open Gates (engine/runtime/claims.py) through a real Host on the test database: a claim holds the
Gate for its holder, others' answers are refused naming the holder and when the claim ends, the holder releases
it, an operator breaks it, each is journaled; two claims at once give exactly one holder, in one process and
across a fleet's processes; a claim survives the run being taken up again; the inbox's records follow."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from engine.models import GateAssignee, GateRecord, JournalEntry, Run
from engine.runtime import store
from engine.runtime.errors import RunNotHosted
from engine.runtime.host import Host
from engine.runtime.view import RunView
from tests.runtime.assigned import approval
from tests.runtime.hosting import NOTES_DOOR, NOTES_GATE, fleet, hosted, scripted, status, until  # noqa: F401 - scripted is a fixture
from workflows import notes

#: Every test on the database, the notes workflow's scripted writer playing (`scripted`, imported above).
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("scripted")]


async def waiting(host: Host) -> str:
    run_id = await host.start_run("notes", NOTES_DOOR)
    await until(host, status(run_id, "waiting"), what="the notes run at its Gate")
    return run_id


def claims(run_id: str) -> list[dict[str, Any]]:
    return [e.entry for e in JournalEntry.objects.filter(run_id=run_id, kind="claim").order_by("seq")]


def view(run_id: str) -> RunView:
    return RunView.of(Run.objects.get(id=run_id).view)


def test_a_claim_holds_the_gate_for_its_holder_until_released() -> None:
    async def body(host: Host) -> None:
        run_id = await waiting(host)
        before = time.time()
        took = await host.claim(run_id, NOTES_GATE, "claim", "ann", door="api")
        assert took.outcome == "delivered", took
        held = (await host.db(view, run_id)).claim(NOTES_GATE, time.time())
        assert held is not None and held.by == "ann"
        assert before + 15 * 60 - 1 <= held.until <= time.time() + 15 * 60 + 1
        record = await host.db(lambda: GateRecord.objects.get(run_id=run_id, closed_at=None))
        assert record.claimed_by == "ann" and record.claimed_until is not None

        other = await host.deliver(run_id, "gate", gate=NOTES_GATE, event="reply", params={"text": "no"}, by="bo")
        assert other.outcome == "refused" and other.code == "claimed"
        assert "claimed by ann until" in other.error and "only they may answer it" in other.error
        stolen = await host.claim(run_id, NOTES_GATE, "claim", "bo")
        assert stolen.code == "claimed" and "claimed by ann" in stolen.error
        not_theirs = await host.claim(run_id, NOTES_GATE, "release", "bo")
        assert not_theirs.code == "claimed" and "only they may release it" in not_theirs.error

        released = await host.claim(run_id, NOTES_GATE, "release", "ann")
        assert released.outcome == "delivered"
        assert (await host.db(view, run_id)).claim(NOTES_GATE, time.time()) is None
        again = await host.claim(run_id, NOTES_GATE, "release", "ann")
        assert again.code == "not-claimed"
        answered = await host.deliver(run_id, "gate", gate=NOTES_GATE, event="reply", params={"text": "Ops"}, by="bo")
        assert answered.outcome == "delivered"
        journal = await host.db(claims, run_id)
        assert [(e["action"], e["by"]) for e in journal] == [("claim", "ann"), ("release", "ann")]
        assert journal[0]["door"] == "api" and journal[0]["until"] == held.until
        gate_entry = await host.db(lambda: JournalEntry.objects.get(run_id=run_id, kind="gate").entry)
        assert gate_entry["by"] == "bo"

    hosted({"notes": notes.machine}, body)


def test_claims_are_kept_as_inputs_their_senders_read_in_words() -> None:
    async def body(host: Host) -> None:
        run_id = await waiting(host)
        await host.claim(run_id, NOTES_GATE, "claim", "ann")
        await host.claim(run_id, NOTES_GATE, "claim", "bo", sender="bo")
        await host.claim(run_id, NOTES_GATE, "break", "ops")
        sent = await host.db(store.reports, run_id)
        assert [(r.kind, r.sent_by, r.status, r.words) for r in reversed(sent)] == [
            ("claim", "ann", "delivered", f"claimed {NOTES_GATE}"),
            ("claim", "bo", "refused", f"claimed {NOTES_GATE}"),
            ("claim", "ops", "delivered", f"broke the claim on {NOTES_GATE}"),
        ]
        assert "claimed by ann" in sent[1].reason

    hosted({"notes": notes.machine}, body)


def test_an_operator_breaks_a_claim_and_the_holder_answers_through_it() -> None:
    async def body(host: Host) -> None:
        run_id = await waiting(host)
        await host.claim(run_id, NOTES_GATE, "claim", "ann")
        broken = await host.claim(run_id, NOTES_GATE, "break", "ops")
        assert broken.outcome == "delivered"
        assert [(e["action"], e["by"], e.get("holder")) for e in await host.db(claims, run_id)] == [
            ("claim", "ann", None),
            ("break", "ops", "ann"),
        ]
        await host.claim(run_id, NOTES_GATE, "claim", "bo")
        mine = await host.deliver(run_id, "gate", gate=NOTES_GATE, event="reply", params={"text": "Ops"}, by="bo")
        assert mine.outcome == "delivered"
        record = await host.db(lambda: GateRecord.objects.get(run_id=run_id, gate=NOTES_GATE))
        assert record.closed_at is not None and record.claimed_by == "" and record.answered_by == "bo"
        try:
            gone = await host.claim(run_id, NOTES_GATE, "claim", "bo")
        except RunNotHosted as err:  # the run ended: nothing is kept for it
            assert "has ended" in str(err)
        else:
            assert gone.code in ("no-gate", "ended")

    hosted({"notes": notes.machine}, body)


def test_a_claim_that_ran_out_holds_nothing(settings: Any) -> None:
    settings.JR2_CLAIM_MINUTES = 0.0005  # 30 ms

    async def body(host: Host) -> None:
        run_id = await waiting(host)
        await host.claim(run_id, NOTES_GATE, "claim", "ann")
        await asyncio.sleep(0.1)
        asked = time.time()  # bo's claim runs out 30 ms after it is taken: read it as of then, however slow the host
        took = await host.claim(run_id, NOTES_GATE, "claim", "bo")
        assert took.outcome == "delivered", took
        assert (await host.db(view, run_id)).claim(NOTES_GATE, asked).by == "bo"

    hosted({"notes": notes.machine}, body)


def test_two_claims_at_once_give_exactly_one_holder() -> None:
    async def body(host: Host) -> None:
        for _ in range(3):
            run_id = await waiting(host)
            people = [f"user{i}" for i in range(8)]
            results = await asyncio.gather(*(host.claim(run_id, NOTES_GATE, "claim", who) for who in people))
            took = [who for who, r in zip(people, results, strict=True) if r.outcome == "delivered"]
            assert len(took) == 1, results
            refused = [r for r in results if r.outcome != "delivered"]
            assert all(r.code == "claimed" and f"claimed by {took[0]}" in r.error for r in refused)
            assert (await host.db(view, run_id)).claim(NOTES_GATE, time.time()).by == took[0]
            assert [e["by"] for e in await host.db(claims, run_id)] == took

    hosted({"notes": notes.machine}, body)


def test_two_claims_at_once_from_two_web_processes_give_exactly_one_holder() -> None:
    async def body(web_1: Host, web_2: Host, worker: Host) -> None:
        run_id = await web_1.start_run("notes", NOTES_DOOR)
        await until(worker, status(run_id, "waiting"), what="the run at its Gate")
        results = await asyncio.gather(
            web_1.claim(run_id, NOTES_GATE, "claim", "ann"), web_2.claim(run_id, NOTES_GATE, "claim", "bo")
        )
        assert sorted(r.outcome for r in results) == ["delivered", "refused"], results
        holder = "ann" if results[0].outcome == "delivered" else "bo"
        assert (await worker.db(view, run_id)).claim(NOTES_GATE, time.time()).by == holder
        assert [e["by"] for e in await worker.db(claims, run_id)] == [holder]

    fleet(body, "web", "web", "worker")


def test_a_claim_survives_the_run_being_taken_up_again() -> None:
    made: dict[str, str] = {}

    async def first(host: Host) -> None:
        made["run"] = await waiting(host)
        await host.claim(made["run"], NOTES_GATE, "claim", "ann")

    async def second(host: Host) -> None:
        await until(host, lambda: host.holds(made["run"]), what="the run taken up again")
        refused = await host.deliver(made["run"], "gate", gate=NOTES_GATE, event="reply", params={"text": "x"}, by="bo")
        assert refused.code == "claimed" and "claimed by ann" in refused.error

    hosted({"notes": notes.machine}, first, owner="host-a")
    Run.objects.filter(id=made["run"]).update(lease_owner="", lease_expires=None)
    hosted({"notes": notes.machine}, second, owner="host-b")


def test_an_assigned_gate_records_whom_it_is_assigned_to() -> None:
    async def body(host: Host) -> None:
        run_id = await host.start_run("approval", {"title": "Ship 2.0"})
        await until(host, status(run_id, "waiting"), what="the approval at its Gate")
        record = await host.db(lambda: GateRecord.objects.get(run_id=run_id, closed_at=None))
        assert record.assigned and record.assign == ["user:ann", "group:leads"]
        names = await host.db(lambda: sorted(GateAssignee.objects.filter(record=record).values_list("kind", "name")))
        assert names == [("group", "leads"), ("user", "ann")]
        gate = (await host.db(view, run_id)).gate("review")
        assert gate is not None and gate.assign == ("user:ann", "group:leads")

    hosted({"approval": approval}, body)
