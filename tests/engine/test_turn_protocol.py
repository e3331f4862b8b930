"""The Turn protocol with a model (SPEC.md 4): what the model reads, and how a stuck or runaway Turn ends."""

from pydantic import BaseModel

from engine import Session, agent, assign, define_event, jr2_setup
from engine.core.outputs import AllowedChanged, PickAnswered, TurnStarted
from engine.core.prompts import BRIEFING, answer_message, system_prompt
from engine.core.turn_policy import TurnPolicy
from workflows import notes


class Empty(BaseModel):
    pass


def start_notes():
    session = Session(notes.machine, input={"changes": "fix the parser"})
    [started] = [o for o in session.drain() if isinstance(o, TurnStarted)]
    return session, started


def test_the_system_prompt_is_the_instructions_then_a_fixed_briefing_about_the_seat_never_the_task():
    _, started = start_notes()
    instructions = notes.machine.agents["writer"].instructions
    assert started.system == system_prompt(instructions)
    assert started.system.startswith(instructions) and started.system.endswith(BRIEFING)
    assert "fix the parser" not in started.system


def test_the_user_message_is_the_states_prompt_then_the_allowed_picks_last():
    _, started = start_notes()
    assert started.message.startswith(started.prompt)
    assert started.message.splitlines()[-1] == "Allowed picks now: ask."


def test_each_answer_to_a_pick_ends_with_the_allowed_picks_read_after_the_route():
    session, _ = start_notes()
    session.pick("writer", "ask", {"question": "Tone?"})
    session.send_gate(session.gates[0].id, "reply", {"text": "Warm"})
    [answered] = [o for o in session.drain() if isinstance(o, PickAnswered)]
    assert answered.message == answer_message("The editor replied: Warm", ("ask", "done"))
    assert answered.message.splitlines()[-1] == "Allowed picks now: ask, done."
    result = session.pick("writer", "ask", {"question": "Length?"})
    assert result.text().splitlines()[-1] == "Allowed picks now: none. Wait: work you started is not finished."


def test_allowed_picks_that_change_while_the_agent_works_are_told_before_its_next_step():
    go = define_event(name="go", input=Empty, description="Go.")
    open_ = define_event(name="open", input=Empty, description="Open the door.")
    machine = jr2_setup(
        events=[go, open_],
        actors={
            "walker": agent(model="script/walker", instructions="You walk."),
        },
    ).create_machine(
        {
            "id": "door",
            "type": "parallel",
            "context": {"open": False},
            "states": {
                "walk": {
                    "invoke": {"src": "walker"},
                    "on": {"go": {"guard": lambda context: context["open"], "actions": assign(gone=lambda: True)}},
                },
                "desk": {
                    "invoke": {"src": "gate", "id": "desk"},
                    "on": {"open": {"actions": assign(open=lambda: True)}},
                },
            },
        }
    )
    session = Session(machine)
    session.drain()
    assert session.allowed_picks("walker") == []
    assert session.send_gate("desk", "open", {}).outcome == "delivered"
    [changed] = [o for o in session.drain() if isinstance(o, AllowedChanged)]
    assert (changed.agent, changed.allowed) == ("walker", ("go",))
    assert changed.message.endswith("Allowed picks now: go.")
    session.send_gate("desk", "open", {})
    assert [o for o in session.drain() if isinstance(o, AllowedChanged)] == []


def test_a_reply_without_a_pick_is_reprompted_at_most_twice_then_the_turn_faults():
    watch = TurnPolicy().watch()
    first, second, third = (watch.reply_without_pick(["ask"]) for _ in range(3))
    assert (first.action, second.action) == ("reprompt", "reprompt")
    assert first.message.endswith("Allowed picks now: ask.")
    assert third.action == "fault" and "without a pick 3 times" in third.reason
    session, _ = start_notes()
    session.fault("writer", third.reason)
    assert session.status == "failed"


def test_a_runaway_turn_repeating_the_same_call_is_rerolled_once_then_faults():
    session, _ = start_notes()
    watch = TurnPolicy(max_repeats=3).watch()
    verdicts = []
    for _ in range(6):
        verdict = watch.call("done", {"notes": "x"})
        if verdict is None:
            watch.result(session.pick("writer", "done", {"notes": "x"}))
        verdicts.append(verdict.action if verdict else "sent")
    assert verdicts == ["sent", "sent", "reroll", "sent", "sent", "fault"]


def test_too_many_tool_calls_is_a_runaway_and_calls_that_move_the_machine_are_not_repeats():
    watch = TurnPolicy(max_tool_calls=5, max_repeats=3).watch()
    from engine.core.outputs import PickResult

    for _ in range(5):
        assert watch.call("spend", {}) is None
        watch.result(PickResult("answered"))
    verdict = watch.call("spend", {})
    assert verdict is not None and verdict.action == "reroll" and "more than 5 tool calls" in verdict.reason


def test_the_answer_to_a_pick_that_ended_the_turn_says_so_instead_of_listing_allowed_picks():
    session = Session(notes.machine, {"changes": "One fix."})
    session.pick("writer", "ask", {"question": "Tone?"})
    session.send_gate("writing.asking", "reply", {"text": "Plain."})
    result = session.pick("writer", "done", {"notes": "- One fix."})
    assert result.outcome == "ended"
    text = result.text()
    assert "ended your Turn" in text and "Allowed picks now" not in text
