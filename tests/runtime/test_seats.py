"""A person plays an Agent's seat through the same Turn loop as a model: picks refused, answered, outstanding or
ending the Turn as a model's are, recorded as that person's; giving the seat back hands the next request to the
model."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User

from engine.models import GateRecord, JournalEntry, ModelCall, Run, Seat, TurnMessage, TurnRecord
from engine.runtime.host import Host, HostError
from engine.runtime.providers import human
from tests.runtime.hosting import hosted, status, until
from workflows import notes

pytestmark = pytest.mark.django_db(transaction=True)

DOOR = {"changes": "Faster start-up."}


@pytest.fixture(autouse=True)
def offline(settings: Any) -> None:
    settings.JR2_SCRIPTED = True


def gate_open(run_id: str) -> Callable[[], bool]:
    """The editor's Gate is open (the run is "waiting" all along while a person holds the writer's seat)."""
    return lambda: GateRecord.objects.filter(run_id=run_id, gate="writing.asking", closed_at=None).exists()


async def waiting_for(run_id: str, agent: str, timeout: float = 5) -> None:
    for _ in range(int(timeout / 0.01)):
        if human.waiting(run_id, agent):
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"the Turn of {agent} never waited for its person")


def test_a_person_plays_the_writer_through_a_whole_run() -> None:
    ann = User.objects.create_user("ann")

    async def body(host: Host) -> None:
        run_id = await host.start_run("notes", DOOR, seats={"writer": (ann.pk, "ann")})
        await waiting_for(run_id, "writer")
        human.offer(run_id, "writer", "done", {"notes": "too early"})
        await waiting_for(run_id, "writer")
        human.offer(run_id, "writer", "ask", {"question": "Who reads this?"})
        await until(host, gate_open(run_id))
        await host.deliver(run_id, "gate", gate="writing.asking", event="reply", params={"text": "Admins"})
        await waiting_for(run_id, "writer")
        human.offer(run_id, "writer", "done", {"notes": "- Faster start-up, for admins."})
        run = await until(host, status(run_id, "done"))
        assert run.output == {"notes": "- Faster start-up, for admins."}

        def records() -> dict[str, Any]:
            return {
                "picks": [
                    (e.entry["event"], e.entry["outcome"], e.entry["player"])
                    for e in JournalEntry.objects.filter(run_id=run_id, kind="pick")
                ],
                "turn": TurnRecord.objects.get(run_id=run_id),
                "calls": list(ModelCall.objects.filter(run_id=run_id).values_list("model", flat=True)),
                "answers": [
                    m.content[0]["content"]
                    for m in TurnMessage.objects.filter(run_id=run_id, kind="tool_result").order_by("seq")
                ],
                "seats": list(Seat.objects.filter(run_id=run_id).values_list("agent", "user__username")),
            }

        found = await host.db(records)
        assert found["picks"] == [
            ("done", "unmoved", "human/ann"),
            ("ask", "outstanding", "human/ann"),
            ("done", "ended", "human/ann"),
        ]
        assert found["turn"].model == "human/ann" and not found["turn"].scripted
        assert set(found["calls"]) == {"human/ann"}
        assert "not allowed now" in found["answers"][0] and found["answers"][1].startswith("The editor replied")
        assert found["seats"] == [("writer", "ann")]

    hosted({"notes": notes.machine}, body)


def test_giving_the_seat_back_hands_the_waiting_request_to_the_model() -> None:
    ann = User.objects.create_user("ann")

    async def body(host: Host) -> None:
        run_id = await host.start_run("notes", DOOR, seats={"writer": (ann.pk, "ann")})
        await waiting_for(run_id, "writer")
        human.offer(run_id, "writer", "ask", {"question": "Tone?"})
        await until(host, gate_open(run_id))
        await host.deliver(run_id, "gate", gate="writing.asking", event="reply", params={"text": "Plain"})
        await waiting_for(run_id, "writer")
        assert await host.take_seat(run_id, "writer", None) == "given back"
        run = await until(host, status(run_id, "done"))
        assert "Plain" in run.output["notes"]

        def records() -> tuple[Any, ...]:
            return (
                list(ModelCall.objects.filter(run_id=run_id).order_by("seq").values_list("model", "status")),
                TurnRecord.objects.get(run_id=run_id).model,
                list(Seat.objects.filter(run_id=run_id).values_list("given_back_at", flat=True)),
            )

        calls, model, seats = await host.db(records)
        assert calls == [("human/ann", "done"), ("human/ann", "interrupted"), ("script/notes.writer", "done")]
        assert model == "script/notes.writer"
        assert seats[0] is not None

    hosted({"notes": notes.machine}, body)


def test_taking_over_a_running_agent_gives_its_next_request_to_the_person() -> None:
    bob = User.objects.create_user("bob")

    async def body(host: Host) -> None:
        run_id = await host.start_run("notes", DOOR)
        await until(host, status(run_id, "waiting"))
        assert await host.take_seat(run_id, "writer", (bob.pk, "bob")) == "taken"
        run = await host.db(lambda: Run.objects.get(id=run_id))
        assert run.view["seats"] == {"writer": "bob"}
        await host.deliver(run_id, "gate", gate="writing.asking", event="reply", params={"text": "Ops"})
        await waiting_for(run_id, "writer")
        human.offer(run_id, "writer", "done", {"notes": "by bob"})
        run = await until(host, status(run_id, "done"))
        assert run.output == {"notes": "by bob"}
        players = await host.db(
            lambda: [e.entry["player"] for e in JournalEntry.objects.filter(run_id=run_id, kind="pick")]
        )
        assert players == ["script/notes.writer", "human/bob"]

    hosted({"notes": notes.machine}, body)


def test_a_seat_held_by_one_person_is_not_taken_by_another_and_unknown_agents_are_refused() -> None:
    ann, bob = User.objects.create_user("ann"), User.objects.create_user("bob")

    async def body(host: Host) -> None:
        run_id = await host.start_run("notes", DOOR, seats={"writer": (ann.pk, "ann")})
        with pytest.raises(HostError, match="ann holds the seat"):
            await host.take_seat(run_id, "writer", (bob.pk, "bob"))
        with pytest.raises(HostError, match='no Agent "editor"'):
            await host.take_seat(run_id, "editor", (bob.pk, "bob"))
        with pytest.raises(HostError, match="no Agent editor"):
            await host.start_run("notes", DOOR, seats={"editor": (bob.pk, "bob")})
        await host.cancel(run_id)

    hosted({"notes": notes.machine}, body)


def test_a_held_seat_survives_a_restart_of_the_host() -> None:
    ann = User.objects.create_user("ann")
    run_ids: list[str] = []

    async def first(host: Host) -> None:
        run_ids.append(await host.start_run("notes", DOOR, seats={"writer": (ann.pk, "ann")}))
        await waiting_for(run_ids[0], "writer")

    async def second(host: Host) -> None:
        await waiting_for(run_ids[0], "writer")
        human.offer(run_ids[0], "writer", "ask", {"question": "Again?"})
        await until(host, status(run_ids[0], "waiting"))
        await host.cancel(run_ids[0])

    hosted({"notes": notes.machine}, first)
    hosted({"notes": notes.machine}, second)
