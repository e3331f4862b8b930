"""The pure half of a step (engine/runtime/plan.py): an input applied to the Session and its outputs turned into
the records to commit and, as data, what to do once they are committed. Nothing here starts, awaits or writes
anything: the loops are stand-ins that only say whether they were touched."""

from __future__ import annotations

from typing import Any

import pytest

from engine.core.outputs import Delivery, PickResult, TurnStarted
from engine.core.session import Session
from engine.models import EffectRecord, TurnRecord
from engine.runtime import store
from engine.runtime.conversation import Conversation
from engine.runtime.errors import SeatError
from engine.runtime.plan import (
    Books,
    GiveBack,
    Plan,
    StartLoop,
    StopLoop,
    WakeLoop,
    apply_input,
    ended,
    indexed,
    plan_outputs,
    run_fields,
)
from engine.runtime.players import Player
from engine.runtime.view import build_view, run_status
from workflows import notes

DOOR = {"changes": "Faster start-up."}


@pytest.fixture(autouse=True)
def offline(settings: Any) -> None:
    settings.JR2_SCRIPTED = True


class StandIn:
    """A Turn loop as the plan sees it; a plan must never call it (the driver does, after the commit)."""

    def __init__(self, started: TurnStarted, player: Player, conversation: Conversation, system: str) -> None:
        self.turn, self.player, self.conversation, self.system = started.turn, player, conversation, system
        self.task = None
        self.asking = False

    def start(self) -> None:
        raise AssertionError("a plan started a loop")

    def stop(self) -> None:
        raise AssertionError("a plan stopped a loop")

    def wake(self) -> None:
        raise AssertionError("a plan woke a loop")

    def reads_allowed_later(self) -> bool:
        return self.asking


def begun() -> tuple[Session, Books, Plan]:
    session = Session(notes.machine, DOOR)
    books = Books("notes")
    plan = Plan()
    plan_outputs(session.drain(), session, books, plan, StandIn)
    return session, books, plan


def step(session: Session, books: Books, kind: str, **args: Any) -> tuple[Any, list[dict[str, Any]], Plan]:
    plan = Plan()
    result, entries = apply_input(session, books, kind, args, plan, session.now)
    plan_outputs(session.drain(), session, books, plan, StandIn)
    return result, entries, plan


def test_a_turn_that_opens_is_recorded_with_its_prompt_and_its_loop_starts_only_after_the_commit() -> None:
    session, books, plan = begun()
    opened, prompt = plan.ops
    assert isinstance(opened, store.TurnOpened) and (opened.turn, opened.agent, opened.model, opened.scripted) == (
        "turn-1",
        "writer",
        "script/notes.writer",
        True,
    )
    assert isinstance(prompt, store.Message) and (prompt.kind, prompt.seq, prompt.conversation) == (
        "prompt",
        1,
        "writer@turn-1",
    )
    loop = books.turns["turn-1"].loop
    assert plan.todo == [StartLoop(loop)]
    assert books.conversations["writer@turn-1"] is loop.conversation and books.latest == {"writer": "writer@turn-1"}


def test_an_outstanding_pick_waits_and_its_answer_wakes_the_loop() -> None:
    session, books, _ = begun()
    result, entries, plan = step(
        session,
        books,
        "pick",
        agent="writer",
        event="ask",
        params={"question": "Who reads this?"},
        call="call-1",
        turn="turn-1",
    )
    assert isinstance(result, PickResult) and result.outcome == "outstanding"
    assert [(e.kind, e.call, e.turn, e.player) for e in entries] == [
        ("pick", "call-1", "turn-1", "script/notes.writer")
    ]
    assert plan.ops == [store.TurnChanged("turn-1", pending_call="call-1")] and plan.todo == []
    assert books.turns["turn-1"].pending_call == "call-1"

    result, entries, plan = step(
        session, books, "gate", gate="writing.asking", event="reply", params={"text": "Admins"}, by="ann"
    )
    assert isinstance(result, Delivery) and result.outcome == "delivered"
    assert entries[-1].kind == "gate" and entries[-1].by == "ann"
    answer, changed = plan.ops
    assert isinstance(answer, store.Message) and answer.kind == "tool_result"
    assert answer.content[0]["tool_use_id"] == "call-1"
    assert answer.content[0]["content"].startswith("The editor replied: Admins")
    assert changed == store.TurnChanged("turn-1", pending_call="")
    assert plan.todo == [WakeLoop(books.turns["turn-1"].loop)] and books.turns["turn-1"].pending_call == ""


def test_a_pick_answered_at_once_is_its_tool_result() -> None:
    session, books, _ = begun()
    result, _, plan = step(
        session, books, "pick", agent="writer", event="done", params={"notes": "early"}, call="call-1", turn="turn-1"
    )
    assert result.outcome == "unmoved"
    (answer,) = plan.ops
    assert isinstance(answer, store.Message) and answer.content[0]["tool_use_id"] == "call-1"
    assert answer.content[0]["is_error"] is False and answer.content[0]["content"] == result.text()


def test_a_fault_closes_the_turn_once_and_its_end_stops_the_loop() -> None:
    session, books, _ = begun()
    loop = books.turns["turn-1"].loop
    _, _, plan = step(session, books, "fault", agent="writer", reason="the model failed", turn="turn-1")
    assert plan.ops[0] == store.TurnClosed("turn-1", TurnRecord.Status.FAULTED, "the model failed")
    assert not any(isinstance(op, store.TurnClosed) for op in plan.ops[1:])  # the Turn's end closes nothing more
    assert StopLoop(loop) in plan.todo and "turn-1" not in books.turns


def test_a_cancel_closes_the_open_turn() -> None:
    session, books, _ = begun()
    loop = books.turns["turn-1"].loop
    _, _, plan = step(session, books, "cancel")
    assert plan.ops == [store.TurnClosed("turn-1")] and plan.todo == [StopLoop(loop)]
    assert run_status(session) == "cancelled"
    assert ended(session, "pick") == PickResult("refused", error="the run has ended (cancelled); nothing was delivered")
    assert ended(session, "gate") == Delivery(
        "refused", error="the run has ended (cancelled); nothing was delivered", code="ended"
    )


def test_a_seat_changes_hands_and_is_given_back() -> None:
    session, books, _ = begun()
    result, _, plan = step(session, books, "seat", agent="writer", user=(7, "ann"))
    assert result == "taken" and books.seats == {"writer": (7, "ann")}
    assert plan.ops == [store.SeatChanged("writer", 7), store.TurnChanged("turn-1", model="human/ann")]
    refused, _, plan = step(session, books, "seat", agent="writer", user=(8, "bob"))
    assert isinstance(refused, SeatError) and "ann holds the seat of writer" in str(refused) and plan.ops == []
    result, _, plan = step(session, books, "seat", agent="writer", user=None)
    assert result == "given back" and books.seats == {}
    assert plan.todo == [GiveBack("writer")]
    assert plan.ops == [store.SeatChanged("writer", None), store.TurnChanged("turn-1", model="script/notes.writer")]


def test_an_effect_started_is_the_hosts_own_entry() -> None:
    session, books, _ = begun()
    _, entries, plan = step(session, books, "effect_started", effect="effect-1", slot="build", attempt=2)
    assert [e.to_json() for e in entries] == [
        {"kind": "effect_started", "effect": "effect-1", "slot": "build", "at": session.now, "attempt": 2}
    ]
    assert plan.ops == [store.EffectChanged("effect-1", EffectRecord.Status.STARTED)]


def test_the_run_fields_and_the_index_record_of_a_first_step() -> None:
    session, books, plan = begun()
    view = build_view(session, (), books.players(), books.seats)
    fields = run_fields(session, run_status(session), view)
    assert fields == {"status": "running", "view": view, "output": None, "reason": ""}
    assert view["turns"][0]["model"] == "script/notes.writer (scripted stand-in for anthropic/claude-haiku-5-5)"
    record = indexed("notes", {}, fields, [{"kind": "start"}], plan.ops, door=DOOR)
    assert (record.first, record.agents, record.door, record.after) == (True, ["writer"], DOOR, view)
