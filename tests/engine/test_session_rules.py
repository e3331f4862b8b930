"""The run-core rules of SPEC.md 4 ("Allowed picks and delivery") and of the Menu seed's Rules, on a Session.

Each test builds a small Machine inline with jr2_setup(...).create_machine(...) and drives it only through the
Session's inputs (pick, send_gate, effect_done, effect_failed, advance, fault)."""

import pytest

from engine import Session, answer, assign, effect, raise_, sent_by
from engine.core.outputs import (
    EffectCancelled,
    GateClosed,
    NoticeKept,
    PickAnswered,
    PickStopped,
    TurnEnded,
    TurnStarted,
)
from tests.engine.helpers import build, event, frozen, of, started
from workflows import notes

DOOR = {"changes": "Faster start-up.\nA new export button."}


def lookup(query=None):
    return None


# -- a Machine with a mode, a targetless pick, Effects, a timer, and a way out ---------------------------------


def steps_machine(after_outside=None):
    work = {
        "invoke": {"src": "writer", "input": {"prompt": "Do the steps."}},
        "on": {
            "finish": "done",
            "count": {
                "actions": [
                    assign(count=lambda context: context["count"] + 1),
                    answer(lambda context: context["count"]),
                ]
            },
        },
        "initial": "idle",
        "states": {
            "idle": {
                "on": {
                    "note": {"actions": assign(notes=lambda context: context["notes"] + 1)},
                    "polish": "polishing",
                    "run": "running",
                    "run_twice": "first",
                    "wait": "waiting",
                }
            },
            "polishing": {"on": {"back": "idle"}},
            "running": {"invoke": {"src": "job", "onDone": "idle", "onError": "idle"}},
            "first": {"invoke": {"src": "job", "onDone": "second"}},
            "second": {"invoke": {"src": "job", "onDone": "idle", "onError": "idle"}},
            "waiting": {"after": {1000: "idle"}},
        },
    }
    if after_outside is not None:
        work["after"] = {after_outside: "#steps.timed_out"}
    return build(
        [event(n) for n in ("finish", "count", "note", "polish", "back", "run", "run_twice", "wait")],
        {
            "id": "steps",
            "context": {"count": 0, "notes": 0},
            "initial": "work",
            "states": {"work": work, "done": {"type": "final"}, "timed_out": {"type": "final"}},
        },
        job=effect.call(lookup),
    )


def running_effect(session):
    [pending] = session.snapshot["effects"]
    return pending["id"]


# -- the Menu at the door of a pick ---------------------------------------------------------------------------


def test_a_pick_not_on_the_menu_is_refused_and_nothing_is_delivered():
    session = started(notes.machine, DOOR)
    before = frozen(session)
    result = session.pick("writer", "reply", {"text": "I answer myself."})
    assert result.outcome == "refused"
    assert "Menu" in result.error and '"reply"' in result.error
    assert frozen(session) == before
    assert session.drain() == []


def test_an_agent_cannot_send_an_event_to_a_gate():
    session = started(notes.machine, DOOR)
    session.pick("writer", "ask", {"question": "Which version?"})
    [gate] = session.gates
    session.drain()
    before = frozen(session)
    result = session.pick("writer", "reply", {"text": "Version 2."})
    assert result.outcome == "refused"
    assert frozen(session) == before
    assert [g.id for g in session.gates] == [gate.id]


def test_a_pick_on_the_menu_but_not_allowed_moves_nothing_and_answers_with_the_allowed_picks():
    session = started(notes.machine, DOOR)
    before_value, before_context = session.value, dict(session.context)
    result = session.pick("writer", "done", {"notes": "Too early."})
    assert result.outcome == "unmoved"
    assert result.allowed == ("ask",)
    assert session.value == before_value and session.context == before_context
    assert session.turn_of("writer") is not None
    assert session.drain() == []


@pytest.mark.parametrize(
    "params, field, words",
    [
        ({}, "question", "Field required"),
        ({"question": 3}, "question", "valid string"),
        ({"question": ["a", "b"]}, "question", "valid string"),
    ],
)
def test_a_pick_whose_input_fails_its_schema_is_refused_with_the_validation_error_and_the_allowed_picks(
    params, field, words
):
    session = started(notes.machine, DOOR)
    before = frozen(session)
    result = session.pick("writer", "ask", params)
    assert result.outcome == "refused"
    assert field in result.error and words in result.error
    assert result.allowed == ("ask",)
    assert frozen(session) == before


def test_a_pick_input_with_a_sender_is_refused_and_nothing_is_delivered():
    session = started(notes.machine, DOOR)
    before = frozen(session)
    result = session.pick("writer", "ask", {"question": "Who am I?", "sender": {"party": "gate", "id": "x"}})
    assert result.outcome == "refused"
    assert "sender" in result.error
    assert frozen(session) == before
    assert session.gates == []


def test_a_gate_body_with_a_sender_is_refused_and_nothing_is_delivered():
    session = started(notes.machine, DOOR)
    session.pick("writer", "ask", {"question": "Which version?"})
    [gate] = session.gates
    before = frozen(session)
    result = session.send_gate(gate.id, "reply", {"text": "2", "sender": {"party": "agent", "id": "writer"}})
    assert result.outcome == "refused"
    assert "sender" in result.error
    assert frozen(session) == before


# -- Allowed picks and guards ---------------------------------------------------------------------------------


def test_a_guard_reading_only_the_context_decides_the_allowed_picks_exactly():
    machine = build(
        [event("spend"), event("stop")],
        {
            "id": "budget",
            "context": {"budget": 2},
            "initial": "work",
            "states": {
                "work": {
                    "invoke": {"src": "writer"},
                    "on": {
                        "spend": {
                            "guard": lambda context: context["budget"] > 0,
                            "actions": assign(budget=lambda context: context["budget"] - 1),
                        },
                        "stop": "done",
                    },
                },
                "done": {"type": "final"},
            },
        },
    )
    session = started(machine)
    for budget_left in (2, 1):
        assert session.context["budget"] == budget_left
        assert session.allowed_picks("writer") == ["spend", "stop"]
        result = session.pick("writer", "spend", {})
        assert result.outcome == "answered"
        assert result.allowed == (("spend", "stop") if budget_left > 1 else ("stop",))
    assert session.allowed_picks("writer") == ["stop"]
    assert session.pick("writer", "spend", {}).outcome == "unmoved"
    assert session.context["budget"] == 0


def test_the_allowed_picks_follow_the_active_mode():
    session = started(steps_machine())
    assert "polish" in session.allowed_picks("writer") and "back" not in session.allowed_picks("writer")
    session.pick("writer", "polish", {})
    assert "back" in session.allowed_picks("writer") and "polish" not in session.allowed_picks("writer")


def test_a_guard_reading_the_picks_input_keeps_the_pick_allowed_and_decides_when_it_comes():
    machine = build(
        [event("raise_to", level=int), event("stop")],
        {
            "id": "levels",
            "context": {"level": 0},
            "initial": "work",
            "states": {
                "work": {
                    "invoke": {"src": "writer"},
                    "on": {
                        "raise_to": {
                            "guard": lambda event: event.level > 3,
                            "actions": assign(level=lambda event: event.level),
                        },
                        "stop": "done",
                    },
                },
                "done": {"type": "final"},
            },
        },
    )
    session = started(machine)
    assert "raise_to" in session.allowed_picks("writer")
    low = session.pick("writer", "raise_to", {"level": 1})
    assert low.outcome != "ended"
    assert session.context["level"] == 0
    assert "raise_to" in session.allowed_picks("writer")
    high = session.pick("writer", "raise_to", {"level": 5})
    assert high.outcome == "answered"
    assert session.context["level"] == 5


# -- Turns ----------------------------------------------------------------------------------------------------


def test_one_turn_holds_many_picks_a_targetless_pick_and_a_pick_into_a_mode_keep_it_open():
    session = started(steps_machine())
    turn = session.turn_of("writer").id
    assert session.pick("writer", "note", {}).outcome == "answered"
    assert session.pick("writer", "polish", {}).outcome == "answered"
    assert session.pick("writer", "back", {}).outcome == "answered"
    assert session.pick("writer", "note", {}).outcome == "answered"
    assert session.context["notes"] == 2
    assert session.turn_of("writer").id == turn
    assert of(session.drain(), TurnEnded) == []


def test_a_pick_leaving_the_agents_state_ends_the_turn():
    session = started(steps_machine())
    turn = session.turn_of("writer").id
    result = session.pick("writer", "finish", {})
    assert result.outcome == "ended"
    assert [o.turn for o in of(session.drain(), TurnEnded)] == [turn]
    assert session.turn_of("writer") is None
    assert session.status == "done"


def test_an_outstanding_pick_refuses_every_other_pick_until_rest_even_one_that_would_end_the_turn():
    session = started(steps_machine())
    assert session.pick("writer", "run", {}).outcome == "outstanding"
    assert session.allowed_picks("writer") == []
    before = frozen(session)
    for name in ("finish", "note", "count", "run"):
        result = session.pick("writer", name, {})
        assert result.outcome == "refused", name
        assert "outstanding" in result.error
    assert frozen(session) == before
    session.effect_done(running_effect(session), {"rows": 1})
    assert [o.event for o in of(session.drain(), PickAnswered)] == ["run"]
    assert session.pick("writer", "finish", {}).outcome == "ended"


def test_rest_waits_for_a_timer_that_moves_inside_the_agents_state():
    session = started(steps_machine())
    assert session.pick("writer", "wait", {}).outcome == "outstanding"
    assert session.allowed_picks("writer") == []
    assert session.pick("writer", "finish", {}).outcome == "refused"
    session.advance(999)
    assert of(session.drain(), PickAnswered) == []
    assert session.pick("writer", "note", {}).outcome == "refused"
    session.advance(1)
    [answered] = of(session.drain(), PickAnswered)
    assert answered.event == "wait"
    assert "finish" in answered.allowed
    assert session.pick("writer", "note", {}).outcome == "answered"


def test_a_timer_that_would_leave_the_agents_state_does_not_keep_it_from_rest():
    session = started(steps_machine(after_outside=60_000))
    assert "note" in session.allowed_picks("writer")
    assert session.pick("writer", "note", {}).outcome == "answered"


def test_a_gate_event_without_target_keeps_the_agent_from_rest_until_the_gates_state_exits():
    machine = build(
        [event("ask"), event("comment"), event("reply", text=str), event("finish")],
        {
            "id": "sticky",
            "initial": "work",
            "states": {
                "work": {
                    "invoke": {"src": "writer"},
                    "on": {"finish": "done"},
                    "initial": "drafting",
                    "states": {
                        "drafting": {"on": {"ask": "asking"}},
                        "asking": {
                            "invoke": {"src": "gate", "id": "editor"},
                            "on": {"comment": {}, "reply": "drafting"},
                        },
                    },
                },
                "done": {"type": "final"},
            },
        },
    )
    session = started(machine)
    assert session.pick("writer", "ask", {}).outcome == "outstanding"
    assert session.send_gate("editor", "comment", {}).outcome == "delivered"
    assert of(session.drain(), PickAnswered) == []
    assert session.allowed_picks("writer") == []
    assert session.pick("writer", "finish", {}).outcome == "refused"
    session.send_gate("editor", "reply", {"text": "ok"})
    assert [o.event for o in of(session.drain(), PickAnswered)] == ["ask"]
    assert session.pick("writer", "finish", {}).outcome == "ended"


# -- the answer -----------------------------------------------------------------------------------------------


def test_the_route_runs_before_the_answer_and_the_allowed_picks_are_read_after_it():
    machine = build(
        [event("ask"), event("reply", text=str), event("done")],
        {
            "id": "order",
            "context": {"replies": 0},
            "initial": "work",
            "states": {
                "work": {
                    "invoke": {"src": "writer"},
                    "initial": "drafting",
                    "on": {"done": {"guard": lambda context: context["replies"] > 0, "target": "published"}},
                    "states": {
                        "drafting": {"on": {"ask": "asking"}},
                        "asking": {
                            "invoke": {"src": "gate", "id": "editor"},
                            "on": {
                                "reply": {
                                    "target": "drafting",
                                    "actions": [
                                        answer(lambda context, event: f"{event.text} ({context['replies']})"),
                                        assign(replies=lambda context: context["replies"] + 1),
                                    ],
                                }
                            },
                        },
                    },
                },
                "published": {"type": "final"},
            },
        },
    )
    session = started(machine)
    session.pick("writer", "ask", {})
    session.drain()
    session.send_gate("editor", "reply", {"text": "Yes"})
    outputs = session.drain()
    [answered] = of(outputs, PickAnswered)
    assert answered.answer == "Yes (0)"
    assert answered.allowed == ("ask", "done")
    assert outputs.index(of(outputs, GateClosed)[0]) < outputs.index(answered)


def test_the_answer_of_the_notes_workflow_reads_the_editors_reply():
    session = started(notes.machine, DOOR)
    session.pick("writer", "ask", {"question": "Which version?"})
    [gate] = session.gates
    session.send_gate(gate.id, "reply", {"text": "Version 2."})
    [answered] = of(session.drain(), PickAnswered)
    assert answered.answer == "The editor replied: Version 2."
    assert answered.allowed == ("ask", "done")


def test_the_default_answer_is_the_last_reply_an_effects_output():
    session = started(steps_machine())
    session.pick("writer", "run", {})
    session.effect_done(running_effect(session), {"rows": 3})
    [answered] = of(session.drain(), PickAnswered)
    assert answered.answer == {"rows": 3}


def test_the_default_answer_is_the_last_of_several_replies():
    session = started(steps_machine())
    session.pick("writer", "run_twice", {})
    session.effect_done(running_effect(session), {"step": 1})
    assert of(session.drain(), PickAnswered) == []
    session.effect_done(running_effect(session), {"step": 2})
    [answered] = of(session.drain(), PickAnswered)
    assert answered.answer == {"step": 2}


def test_the_default_answer_to_a_pick_that_opened_a_gate_is_the_gates_event():
    machine = build(
        [event("ask"), event("reply", text=str)],
        {
            "id": "plain_reply",
            "initial": "work",
            "states": {
                "work": {
                    "invoke": {"src": "writer"},
                    "initial": "drafting",
                    "states": {
                        "drafting": {"on": {"ask": "asking"}},
                        "asking": {"invoke": {"src": "gate", "id": "editor"}, "on": {"reply": "drafting"}},
                    },
                }
            },
        },
    )
    session = started(machine)
    session.pick("writer", "ask", {})
    session.send_gate("editor", "reply", {"text": "Blue."})
    [answered] = of(session.drain(), PickAnswered)
    assert answered.answer["text"] == "Blue."


def chain_machine(on_error_answer=False):
    second = {
        "invoke": {
            "src": "job",
            "onDone": {"target": "idle", "actions": answer(lambda chain: list(chain))},
            "onError": "idle",
        }
    }
    if on_error_answer:
        second["invoke"]["onError"] = {
            "target": "idle",
            "actions": answer(lambda event: f"the lookup failed: {event.error['message']}"),
        }
    return build(
        [event("run"), event("stop")],
        {
            "id": "chained",
            "initial": "work",
            "states": {
                "work": {
                    "invoke": {"src": "writer"},
                    "on": {"stop": "#chained.done"},
                    "initial": "idle",
                    "states": {
                        "idle": {"on": {"run": "first"}},
                        "first": {"invoke": {"src": "job", "onDone": "second", "onError": "second"}},
                        "second": second,
                    },
                },
                "done": {"type": "final"},
            },
        },
        job=effect.call(lookup),
    )


def test_answer_fn_reads_the_chain_every_reply_since_the_pick_oldest_first():
    session = started(chain_machine())
    session.pick("writer", "run", {})
    session.effect_done(running_effect(session), {"step": 1})
    session.effect_done(running_effect(session), {"step": 2})
    [answered] = of(session.drain(), PickAnswered)
    assert answered.answer == [{"step": 1}, {"step": 2}]


def test_the_chain_starts_again_at_each_pick():
    session = started(chain_machine())
    for round_ in (1, 2):
        session.pick("writer", "run", {})
        session.effect_done(running_effect(session), {"round": round_, "step": 1})
        session.effect_done(running_effect(session), {"round": round_, "step": 2})
        [answered] = of(session.drain(), PickAnswered)
        assert answered.answer == [{"round": round_, "step": 1}, {"round": round_, "step": 2}]


def test_an_effects_error_is_not_a_reply():
    session = started(steps_machine())
    session.pick("writer", "run", {})
    session.effect_failed(running_effect(session), {"message": "connection refused"})
    [answered] = of(session.drain(), PickAnswered)
    assert answered.answer is None


def test_an_effects_error_leaves_the_earlier_reply_as_the_default_answer():
    session = started(steps_machine())
    session.pick("writer", "run_twice", {})
    session.effect_done(running_effect(session), {"step": 1})
    session.effect_failed(running_effect(session), {"message": "disk full"})
    [answered] = of(session.drain(), PickAnswered)
    assert answered.answer == {"step": 1}


def test_an_answer_on_the_on_error_route_tells_the_agent_about_the_error():
    session = started(chain_machine(on_error_answer=True))
    session.pick("writer", "run", {})
    session.effect_done(running_effect(session), {"step": 1})
    session.effect_failed(running_effect(session), {"message": "disk full"})
    [answered] = of(session.drain(), PickAnswered)
    assert answered.answer == "the lookup failed: disk full"


def test_an_answer_on_a_targetless_pick_of_the_agents_own_state_answers_it_at_once():
    session = started(steps_machine())
    first = session.pick("writer", "count", {})
    assert (first.outcome, first.answer) == ("answered", 1)
    second = session.pick("writer", "count", {})
    assert (second.outcome, second.answer) == ("answered", 2)
    assert "count" in second.allowed


def test_an_answer_below_the_agents_state_answers_that_agents_pick_not_the_gate():
    session = started(notes.machine, DOOR)
    session.pick("writer", "ask", {"question": "Which version?"})
    [gate] = session.gates
    result = session.send_gate(gate.id, "reply", {"text": "2"})
    assert result.outcome == "delivered"
    [answered] = of(session.drain(), PickAnswered)
    assert answered.turn == session.turn_of("writer").id and answered.event == "ask"


# -- notices --------------------------------------------------------------------------------------------------


def notice_machine(continues=True, answer_on_route=True):
    """The writer's `finish` (or its Effect's done route) leaves for a Gate's `review`, whose `reply` comes back."""

    def route():
        out = {"target": "#notice.review"}
        if answer_on_route:
            out["actions"] = answer(lambda context: f"sent for review ({context['rounds']})")
        return out

    work = {
        "invoke": {"src": "writer", "input": {"prompt": "Write.", "continue": continues}},
        "entry": assign(rounds=lambda context: context["rounds"] + 1),
        "initial": "idle",
        "states": {
            "idle": {"on": {"check": "checking", "finish": route()}},
            "checking": {"invoke": {"src": "job", "onDone": route()}},
        },
    }
    return build(
        [event("finish"), event("check"), event("reply"), event("stop")],
        {
            "id": "notice",
            "context": {"rounds": 0},
            "initial": "work",
            "states": {
                "work": work,
                "review": {"invoke": {"src": "gate", "id": "editor"}, "on": {"reply": "work", "stop": "closed"}},
                "closed": {"type": "final"},
            },
        },
        job=effect.call(lookup),
    )


def test_a_route_leaving_the_agents_state_keeps_its_answer_as_a_notice_for_the_next_continuing_turn():
    session = started(notice_machine())
    result = session.pick("writer", "finish", {})
    assert result.outcome == "ended"
    outputs = session.drain()
    assert [o.notice for o in of(outputs, NoticeKept)] == ["sent for review (1)"]
    assert of(outputs, PickStopped) == []
    session.send_gate("editor", "reply", {})
    [next_turn] = of(session.drain(), TurnStarted)
    assert next_turn.continues is True
    assert next_turn.notices == ("sent for review (1)",)
    assert session.turn_of("writer").notices == ("sent for review (1)",)


def test_a_notice_is_read_by_the_next_continuing_turn_only_once():
    session = started(notice_machine())
    session.pick("writer", "finish", {})
    session.send_gate("editor", "reply", {})
    session.drain()
    session.pick("writer", "finish", {})
    session.send_gate("editor", "reply", {})
    [third_turn] = of(session.drain(), TurnStarted)
    assert third_turn.notices == ("sent for review (2)",)


def test_a_notice_is_not_read_by_a_turn_that_does_not_continue_the_conversation():
    session = started(notice_machine(continues=False))
    session.pick("writer", "finish", {})
    session.send_gate("editor", "reply", {})
    [next_turn] = of(session.drain(), TurnStarted)
    assert next_turn.continues is False
    assert next_turn.notices == ()


def test_a_finished_effects_route_leaving_the_agents_state_keeps_a_notice_and_is_not_a_stopped_pick():
    session = started(notice_machine())
    assert session.pick("writer", "check", {}).outcome == "outstanding"
    turn = session.turn_of("writer").id
    session.drain()
    session.effect_done(running_effect(session), {"ok": True})
    outputs = session.drain()
    assert of(outputs, PickStopped) == []
    assert [(o.turn, o.notice) for o in of(outputs, NoticeKept)] == [(turn, "sent for review (1)")]
    session.send_gate("editor", "reply", {})
    [next_turn] = of(session.drain(), TurnStarted)
    assert next_turn.notices == ("sent for review (1)",)


def test_the_default_answer_kept_as_a_notice_is_the_last_reply():
    session = started(notice_machine(answer_on_route=False))
    session.pick("writer", "check", {})
    session.effect_done(running_effect(session), {"ok": True})
    outputs = session.drain()
    assert [o.notice for o in of(outputs, NoticeKept)] == [{"ok": True}]
    session.send_gate("editor", "reply", {})
    [next_turn] = of(session.drain(), TurnStarted)
    assert next_turn.notices == ({"ok": True},)


# -- something else leaves the Agent's state ------------------------------------------------------------------


def assert_stopped(outputs, turn, event_name):
    [stopped] = of(outputs, PickStopped)
    assert (stopped.turn, stopped.event) == (turn, event_name)
    assert "did not finish" in stopped.answer
    assert [o.turn for o in of(outputs, TurnEnded)] == [turn]
    assert of(outputs, PickAnswered) == []


def test_a_timer_leaving_the_agents_state_while_a_pick_works_stops_the_pick():
    session = started(steps_machine(after_outside=5_000))
    turn = session.turn_of("writer").id
    session.pick("writer", "run", {})
    session.drain()
    session.advance(5_000)
    outputs = session.drain()
    assert_stopped(outputs, turn, "run")
    assert len(of(outputs, EffectCancelled)) == 1
    assert session.value == "timed_out"


def test_a_gate_leaving_the_agents_state_while_a_pick_works_stops_the_pick():
    machine = build(
        [event("run"), event("abort")],
        {
            "id": "side_gate",
            "initial": "live",
            "states": {
                "live": {
                    "type": "parallel",
                    "states": {
                        "a": {
                            "initial": "work",
                            "states": {
                                "work": {
                                    "invoke": {"src": "writer"},
                                    "initial": "idle",
                                    "states": {
                                        "idle": {"on": {"run": "running"}},
                                        "running": {"invoke": {"src": "job", "onDone": "idle"}},
                                    },
                                }
                            },
                        },
                        "b": {
                            "initial": "desk",
                            "states": {
                                "desk": {"invoke": {"src": "gate", "id": "boss"}, "on": {"abort": "#side_gate.aborted"}}
                            },
                        },
                    },
                },
                "aborted": {"type": "final"},
            },
        },
        job=effect.call(lookup),
    )
    session = started(machine)
    turn = session.turn_of("writer").id
    assert session.pick("writer", "run", {}).outcome == "outstanding"
    session.drain()
    assert session.send_gate("boss", "abort", {}).outcome == "delivered"
    assert_stopped(session.drain(), turn, "run")


def test_an_outside_event_leaving_the_agents_state_while_a_pick_works_stops_the_pick():
    session = started(notes.machine, DOOR)
    turn = session.turn_of("writer").id
    session.pick("writer", "ask", {"question": "Which version?"})
    session.drain()
    session.fault("writer", "the model stopped answering")
    outputs = session.drain()
    assert_stopped(outputs, turn, "ask")
    assert session.status == "failed"


# -- the Sender -----------------------------------------------------------------------------------------------


def sender_machine(first_branch_for="writer"):
    record = lambda event: event.get("sender")
    return build(
        [event("stop"), event("poke"), event("self_poke"), event("self_stop")],
        {
            "id": "senders",
            "context": {},
            "on": {
                "stop": [
                    {"guard": sent_by(first_branch_for), "target": ".first", "actions": assign(by=record)},
                    {"target": ".second", "actions": assign(by=record)},
                ]
            },
            "initial": "live",
            "states": {
                "live": {
                    "type": "parallel",
                    "states": {
                        "a": {
                            "initial": "work",
                            "states": {
                                "work": {
                                    "invoke": {"src": "writer"},
                                    "on": {
                                        "poke": {"actions": assign(poked_by=record)},
                                        "self_poke": {"actions": raise_({"type": "poke"})},
                                        "self_stop": {"actions": raise_({"type": "stop"})},
                                    },
                                }
                            },
                        },
                        "b": {
                            "initial": "desk",
                            "states": {
                                "desk": {
                                    "invoke": {"src": "gate", "id": "editor"},
                                    "on": {"poke": {"actions": assign(poked_by=record)}},
                                }
                            },
                        },
                    },
                },
                "first": {"type": "final"},
                "second": {"type": "final"},
            },
        },
    )


def test_every_event_an_agent_delivers_carries_its_sender():
    session = started(sender_machine())
    session.pick("writer", "poke", {})
    assert session.context["poked_by"] == {"party": "agent", "id": "writer"}


def test_every_event_a_gate_delivers_carries_its_sender():
    session = started(sender_machine())
    assert session.send_gate("editor", "poke", {}).outcome == "delivered"
    assert session.context["poked_by"] == {"party": "gate", "id": "editor"}


def test_an_event_the_machine_sends_itself_has_no_sender():
    session = started(sender_machine())
    session.pick("writer", "poke", {})
    session.pick("writer", "self_poke", {})
    assert session.context["poked_by"] is None


def test_sent_by_is_true_for_an_event_from_that_party():
    session = started(sender_machine("writer"))
    assert "stop" in session.allowed_picks("writer")
    session.pick("writer", "stop", {})
    assert session.value == "first"
    assert session.context["by"] == {"party": "agent", "id": "writer"}


def test_sent_by_is_false_for_another_party_so_the_next_transition_is_tried():
    session = started(sender_machine("writer"))
    assert session.send_gate("editor", "stop", {}).outcome == "delivered"
    assert session.value == "second"
    assert session.context["by"] == {"party": "gate", "id": "editor"}


def test_sent_by_a_gate_id_takes_that_gates_event_and_passes_over_the_agents():
    session = started(sender_machine("editor"))
    session.pick("writer", "stop", {})
    assert session.value == "second"
    session = started(sender_machine("editor"))
    session.send_gate("editor", "stop", {})
    assert session.value == "first"


def test_sent_by_is_true_for_an_event_with_no_sender():
    session = started(sender_machine("editor"))
    session.pick("writer", "self_stop", {})
    assert session.value == "first"
    assert session.context["by"] is None


# -- Gates ----------------------------------------------------------------------------------------------------


def test_a_gate_refuses_an_event_it_does_not_accept_naming_what_it_accepts():
    session = started(notes.machine, DOOR)
    session.pick("writer", "ask", {"question": "Which version?"})
    [gate] = session.gates
    before = frozen(session)
    result = session.send_gate(gate.id, "done", {"notes": "Sneaky."})
    assert result.outcome == "refused"
    assert result.accepts == ("reply",)
    assert '"done"' in result.error and "reply" in result.error
    assert frozen(session) == before


def test_an_event_to_a_gate_that_is_not_open_is_refused_naming_the_open_gates():
    session = started(notes.machine, DOOR)
    session.pick("writer", "ask", {"question": "Which version?"})
    [gate] = session.gates
    before = frozen(session)
    result = session.send_gate("no-such-gate", "reply", {"text": "2"})
    assert result.outcome == "refused"
    assert "no-such-gate" in result.error and gate.id in result.error
    assert frozen(session) == before


def test_a_gate_event_failing_its_schema_is_refused_with_the_validation_error():
    session = started(notes.machine, DOOR)
    session.pick("writer", "ask", {"question": "Which version?"})
    [gate] = session.gates
    before = frozen(session)
    result = session.send_gate(gate.id, "reply", {"txt": "2"})
    assert result.outcome == "refused"
    assert "text" in result.error and "Field required" in result.error
    assert frozen(session) == before


def test_a_gate_lists_its_accepted_events_and_meta_while_its_state_is_active():
    session = started(notes.machine, DOOR)
    assert session.gates == []
    session.pick("writer", "ask", {"question": "Which version?"})
    [gate] = session.gates
    assert gate.accepts == ("reply",)
    assert gate.meta == {"question": "Which version?"}
    session.send_gate(gate.id, "reply", {"text": "2"})
    assert session.gates == []


# -- the journal ----------------------------------------------------------------------------------------------


def test_replaying_the_journal_rebuilds_the_same_finished_run():
    session = started(notes.machine, DOOR)
    session.pick("writer", "done", {"notes": "early"})
    session.pick("writer", "ask", {"question": "Which version?"})
    session.pick("writer", "ask", {"question": "refused while outstanding"})
    session.send_gate(session.gates[0].id, "reply", {"text": "2"})
    session.pick("writer", "done", {"notes": "# Release 2"})
    assert session.status == "done"
    replayed = Session.replay(notes.machine, session.journal)
    assert replayed.snapshot == session.snapshot
    assert replayed.journal == session.journal
    assert replayed.output == {"notes": "# Release 2"}


def test_replaying_the_journal_rebuilds_the_same_live_run_with_effects_and_timers():
    session = started(steps_machine(after_outside=60_000))
    session.pick("writer", "note", {})
    session.pick("writer", "run_twice", {})
    session.effect_done(running_effect(session), {"step": 1})
    session.advance(250)
    session.effect_failed(running_effect(session), {"message": "no"})
    session.pick("writer", "wait", {})
    session.advance(500)
    replayed = Session.replay(steps_machine(after_outside=60_000), session.journal)
    assert replayed.snapshot == session.snapshot
    assert replayed.allowed_picks("writer") == session.allowed_picks("writer")
    session.advance(500)
    replayed.advance(500)
    assert replayed.snapshot == session.snapshot
    assert replayed.drain()[-1] == session.drain()[-1]


# -- a pick is taken only through keys its Agent owns ----------------------------------------------------------


def test_a_pick_never_fires_a_transition_that_belongs_to_another_agent():
    from pydantic import BaseModel

    from engine import Session, agent, define_event, jr2_setup

    class Empty(BaseModel):
        pass

    go = define_event(name="go", input=Empty, description="Move on.")
    machine = jr2_setup(
        events=[go],
        actors={
            "a": agent(model="script/a", instructions="Agent a."),
            "b": agent(model="script/b", instructions="Agent b."),
        },
    ).create_machine(
        {
            "id": "two",
            "type": "parallel",
            "states": {
                "A": {"invoke": {"src": "a"}, "initial": "x", "states": {"x": {"on": {"go": "y"}}, "y": {}}},
                "B": {"invoke": {"src": "b"}, "initial": "x", "states": {"x": {}, "y": {"on": {"go": "x"}}}},
            },
        }
    )
    session = Session(machine)
    assert session.allowed_picks("a") == ["go"]
    assert session.allowed_picks("b") == []
    result = session.pick("b", "go", {})
    assert result.outcome == "unmoved"
    assert session.value == {"A": "x", "B": "x"}
    assert session.pick("a", "go", {}).outcome == "answered"
    assert session.value == {"A": "y", "B": "x"}


def test_replay_names_the_first_journal_entry_whose_outputs_differ():
    import importlib

    import pytest

    from engine import Session, SessionError, answer
    from workflows import notes

    session = Session(notes.machine, input={"changes": "fix a"})
    session.pick("writer", "ask", {"question": "Tone?"})
    gate = session.gates[0].id
    session.send_gate(gate, "reply", {"text": "Warm"})
    session.pick("writer", "done", {"notes": "# Notes"})
    assert Session.replay(notes.machine, session.journal).snapshot == session.snapshot

    changed = importlib.reload(notes).machine
    reply_route = changed.statechart.get_state_node_by_id("#notes.writing.asking").transitions["reply"][0]
    reply_route.actions = tuple(
        answer(lambda event: "Said: " + event.text).bound("writer") if getattr(a, "agent", None) == "writer" else a
        for a in reply_route.actions
    )
    with pytest.raises(SessionError, match="journal entry 2 \\(gate\\) produced different outputs"):
        Session.replay(changed, session.journal)
    importlib.reload(notes)
