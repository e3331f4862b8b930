"""Time from a host's clock (`at=` on every input): it reaches the Session as journaled `advance` entries, so
replay needs no clock, and a refused input moves nothing, not even the time."""

import copy

from pydantic import BaseModel, Field

from engine import Session, agent, define_event, jr2_setup
from engine.core.outputs import PickAnswered, TurnEnded
from workflows import notes

DOOR = {"changes": "One fix."}


def test_an_accepted_input_at_a_later_time_journals_the_time_first():
    session = Session(notes.machine, DOOR)
    result = session.pick("writer", "ask", {"question": "Tone?"}, at=1500)
    assert result.outcome == "outstanding"
    assert [(e.kind, getattr(e, "ms", None)) for e in session.journal[1:]] == [("advance", 1500), ("pick", None)]
    assert session.now == 1500 and session.journal[-1].at == 1500
    again = Session.replay(notes.machine, session.journal)
    assert again.to_json() == session.to_json()


def test_a_refused_input_at_a_later_time_changes_nothing_not_even_the_time():
    session = Session(notes.machine, DOOR)
    session.pick("writer", "ask", {"question": "Tone?"})
    before = copy.deepcopy(session.to_json()), len(session.journal)
    for delivery in (
        session.send_gate("writing.asking", "reply", {"text": 3}, at=900),
        session.send_gate("nope", "reply", {"text": "x"}, at=900),
        session.pick("writer", "done", {"notes": "x"}, at=900),
    ):
        assert delivery.outcome == "refused"
    assert (session.to_json(), len(session.journal)) == before


class Empty(BaseModel):
    pass


class Text(BaseModel):
    text: str = Field(description="Words.")


def timed():
    go = define_event(name="go", input=Empty, description="Go.")
    reply = define_event(name="reply", input=Text, description="Reply.")
    return jr2_setup(events=[go, reply], actors={"w": agent(model="script/w", instructions="Work.")}).create_machine(
        {
            "id": "timed",
            "initial": "work",
            "states": {
                "work": {"invoke": {"src": "w"}, "after": {1000: "late"}, "on": {"go": "asking"}},
                "asking": {"invoke": {"src": "gate", "id": "desk"}, "on": {"reply": "work"}},
                "late": {"type": "final"},
            },
        }
    )


def test_a_timer_due_before_the_input_fires_first_even_if_the_input_is_then_refused():
    session = Session(timed())
    session.drain()
    result = session.pick("w", "go", {}, at=1200)
    assert result.outcome == "refused"
    assert session.status == "done" and session.value == "late"
    assert [e.kind for e in session.journal[1:]] == ["advance"]
    assert any(isinstance(o, TurnEnded) for o in session.drain())


def test_timers_started_by_an_input_count_from_the_time_it_came_at():
    session = Session(timed())
    session.pick("w", "go", {}, at=500)
    session.send_gate("desk", "reply", {"text": "back"}, at=5000)
    assert session.value == "work"
    assert session.next_due() == 6000
    assert not any(isinstance(o, PickAnswered) for o in session.drain())
