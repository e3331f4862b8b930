"""The view a step commits on the Run row (engine/runtime/view.py), the run's status beside it, and the typed
reader the API and the Console can read it with: it reads back exactly what was written, and a view that lacks
keys reads as empty."""

from __future__ import annotations

import json

from engine.core.session import Session
from engine.models import Run
from engine.runtime.players import Player
from engine.runtime.view import EffectNow, GateView, Outstanding, RunView, TurnNow, build_view, run_status
from workflows import notes

DOOR = {"changes": "Faster start-up."}


def started() -> Session:
    session = Session(notes.machine, DOOR)
    session.drain()
    return session


def test_the_reader_reads_back_what_the_builder_wrote_at_every_step() -> None:
    session = started()
    writer = Player("script/notes.writer", "anthropic/claude-haiku-5-5", True)
    views = [build_view(session, (), {"turn-1": writer}, {})]
    session.pick("writer", "ask", {"question": "Who reads this?"})
    views.append(build_view(session, views[-1]["visited"], {"turn-1": writer}, {"writer": (7, "ann")}))
    session.send_gate("writing.asking", "reply", {"text": "Admins"})
    views.append(build_view(session, views[-1]["visited"], {}, {}))
    for view in views:
        assert RunView.of(view).to_json() == view
        assert RunView.of(json.loads(json.dumps(view))).to_json() == view  # as read from the row's JSON


def test_an_open_gate_and_a_turn_waiting_on_its_pick_read_as_typed_values() -> None:
    session = started()
    session.pick("writer", "ask", {"question": "Who reads this?"})
    writer = Player("human/ann", "anthropic/claude-haiku-5-5", False)
    view = RunView.of(build_view(session, ["writing.drafting"], {"turn-1": writer}, {"writer": (7, "ann")}))
    assert view.active == ("writing", "writing.asking")
    assert view.visited == ("writing", "writing.asking", "writing.drafting")
    assert view.gate_ids == ("writing.asking",)
    assert view.gate("writing.asking") == GateView(
        "writing.asking", "notes.writing.asking", "notes.writing.asking", ("reply",), {"question": "Who reads this?"}
    )
    assert view.gate("writing.drafting") is None
    turn = view.turn_of("writer")
    assert turn is not None and turn.prompt.startswith("Write the release notes")
    assert turn == TurnNow(
        "turn-1",
        "writer",
        "notes.writing",
        turn.prompt,
        Outstanding("pick-1", "ask"),
        (),
        "ann (a person, in the seat of anthropic/claude-haiku-5-5)",
        False,
    )
    assert view.turn_of("editor") is None
    assert view.holder("writer") == "ann" and view.holder("editor") is None
    assert view.context == {"changes": "Faster start-up.", "replies": 0, "question": "Who reads this?"}
    assert view.effects == () and view.next_due is None


def test_a_view_that_lacks_keys_reads_as_empty() -> None:
    for empty in (None, {}):
        view = RunView.of(empty)
        assert (view.value, view.active, view.gates, view.turns, view.effects, dict(view.seats)) == (
            None,
            (),
            (),
            (),
            (),
            {},
        )
        assert view.gate("writing.asking") is None and view.turn_of("writer") is None and view.holder("writer") is None
    old = RunView.of(
        {
            "gates": [{"id": "writing.asking"}],
            "turns": [{"id": "turn-1", "agent": "writer"}],
            "effects": [{"id": "effect-1"}],
        }
    )
    assert old.gates == (GateView("writing.asking", "", "", (), {}),)
    assert old.turns == (TurnNow("turn-1", "writer", "", "", None, (), "", False),)
    assert old.effects == (EffectNow("effect-1", "", "", ""),)


def test_the_status_is_a_string_enum_with_the_stored_values() -> None:
    session = started()
    assert run_status(session) == "running" and run_status(session) is Run.Status.RUNNING
    assert run_status(session, seated=["writer"]) is Run.Status.WAITING  # only the person in the seat moves it
    session.pick("writer", "ask", {"question": "Who reads this?"})
    assert run_status(session) is Run.Status.WAITING  # only the Gate moves it
    assert json.dumps({"status": run_status(session)}) == '{"status": "waiting"}'
    assert str(run_status(session)) == "waiting" and type(str(run_status(session))) is str
    session.cancel()
    assert run_status(session) is Run.Status.CANCELLED
