"""Six rules of SPEC.md 4 the run core broke in cases its first tests did not reach (issue 6), each with the other
shapes of the same mistake, and the two cases the rules left open."""

import copy

import pytest
from pydantic import BaseModel, ConfigDict, Field, create_model

from engine import (
    EventDefError,
    MachineError,
    Session,
    agent,
    answer,
    assign,
    define_event,
    effect,
    fail,
    jr2_setup,
    raise_,
    send_to,
)
from engine.core.outputs import (
    NoticeKept,
    PickAnswered,
    PickStopped,
    RunEnded,
    TurnEnded,
)
from tests.engine.helpers import event, frozen, of, started


def slot(name):
    return agent(model=f"script/{name}", instructions=f"You are {name}.")


def noop(**_):
    return None


# -- 1. a nested Agent's pick is a reply ------------------------------------------------------------------------


def delegation(hand_back_route=None, lead_route=None, modes=None, helper_continues=False):
    """`lead` in `lead` (modes idle, delegating, and `modes`); `helper` invoked by `delegating` hands a result
    back."""
    hand_back = hand_back_route or {"target": "idle"}
    helper_input = {"prompt": "Help.", "continue": True} if helper_continues else {"prompt": "Help."}
    return jr2_setup(
        events=[event("delegate"), event("hand_back", result=str), event("finish")],
        actors={
            "lead": slot("lead"),
            "helper": slot("helper"),
        },
    ).create_machine(
        {
            "id": "team",
            "initial": "lead",
            "states": {
                "lead": {
                    "invoke": {"src": "lead", "input": {"prompt": "Lead."}},
                    "on": {"finish": "done"},
                    "initial": "idle",
                    "states": {
                        "idle": {"on": {"delegate": lead_route or "delegating"}},
                        "delegating": {
                            "invoke": {"src": "helper", "input": helper_input},
                            "on": {"hand_back": hand_back},
                        },
                        **(modes or {}),
                    },
                },
                "done": {"type": "final"},
            },
        }
    )


def test_a_nested_agents_pick_answers_the_outstanding_pick_above_it():
    session = started(delegation())
    assert session.pick("lead", "delegate", {}).outcome == "outstanding"
    result = session.pick("helper", "hand_back", {"result": "42"})
    assert result.outcome == "ended"
    [answered] = of(session.drain(), PickAnswered)
    assert answered.event == "delegate"
    assert answered.answer == {"result": "42"}
    assert "42" in answered.message


def test_an_answer_on_the_helpers_route_answers_the_helper_and_the_lead_reads_the_last_reply():
    """Placement decides (SPEC.md 4): `hand_back` is taken in `delegating`, which invokes the helper, so its
    `answer` answers the helper's own pick. That route leaves the helper's state, so the answer is the helper's
    notice; the lead's `delegate` gets its default, the last reply: the helper's pick."""
    machine = delegation(hand_back_route={"target": "idle", "actions": answer(lambda event: "TO-HELPER")})
    session = started(machine)
    session.pick("lead", "delegate", {})
    result = session.pick("helper", "hand_back", {"result": "42"})
    outputs = session.drain()
    assert (result.outcome, result.answer) == ("ended", "TO-HELPER")
    assert [(n.agent, n.notice) for n in of(outputs, NoticeKept)] == [("helper", "TO-HELPER")]
    [answered] = of(outputs, PickAnswered)
    assert (answered.event, answered.answer) == ("delegate", {"result": "42"})
    assert session.snapshot["notices"] == {"helper": ["TO-HELPER"]}


def test_the_helpers_next_turn_that_continues_its_conversation_reads_the_notice():
    machine = delegation(
        hand_back_route={"target": "idle", "actions": answer(lambda event: "TO-HELPER")}, helper_continues=True
    )
    session = started(machine)
    session.pick("lead", "delegate", {})
    session.pick("helper", "hand_back", {"result": "42"})
    session.drain()
    session.pick("lead", "delegate", {})
    [turn] = [t for t in session.turns if t.agent == "helper"]
    assert (turn.continues, turn.notices) == (True, ("TO-HELPER",))
    assert session.snapshot["notices"] == {}


def test_an_answer_in_the_leads_own_state_answers_the_lead_from_its_chain():
    """To give the lead a text, write `answer` where the lead's pick is answered: on a route taken in the lead's
    own state once the helper is done (here the eventless route of the mode `reporting`)."""
    seen = []

    def read(chain):
        seen.append(list(chain))
        return f"{len(chain)} repl{'y' if len(chain) == 1 else 'ies'}: " + chain[-1]["result"]

    machine = delegation(
        hand_back_route="reporting", modes={"reporting": {"always": {"target": "idle", "actions": answer(read)}}}
    )
    session = started(machine)
    session.pick("lead", "delegate", {})
    session.pick("helper", "hand_back", {"result": "42"})
    outputs = session.drain()
    [answered] = of(outputs, PickAnswered)
    assert seen == [[{"result": "42"}]]
    assert (answered.event, answered.answer) == ("delegate", "1 reply: 42")
    assert of(outputs, NoticeKept) == []


def test_several_nested_picks_are_the_chain_in_order():
    machine = jr2_setup(
        events=[event("delegate"), event("progress", note=str), event("hand_back", result=str), event("finish")],
        actors={"lead": slot("lead"), "helper": slot("helper")},
    ).create_machine(
        {
            "id": "team",
            "initial": "lead",
            "states": {
                "lead": {
                    "invoke": {"src": "lead"},
                    "on": {"finish": "done"},
                    "initial": "idle",
                    "states": {
                        "idle": {"on": {"delegate": "delegating"}},
                        "delegating": {
                            "invoke": {"src": "helper"},
                            "on": {"progress": {"actions": answer(lambda: "noted")}, "hand_back": "reporting"},
                        },
                        "reporting": {
                            "always": {
                                "target": "idle",
                                "actions": answer(lambda chain: [c.get("note", c.get("result")) for c in chain]),
                            }
                        },
                    },
                },
                "done": {"type": "final"},
            },
        }
    )
    session = started(machine)
    session.pick("lead", "delegate", {})
    progress = session.pick("helper", "progress", {"note": "half"})
    assert (progress.outcome, progress.answer) == ("answered", "noted")
    assert of(session.drain(), PickAnswered) == []
    session.pick("helper", "hand_back", {"result": "all"})
    [answered] = of(session.drain(), PickAnswered)
    assert answered.answer == ["half", "all"]


def test_a_nested_pick_that_leaves_the_lead_state_keeps_the_reply_as_the_leads_notice():
    machine = delegation(hand_back_route={"target": "#team.done"})
    session = started(machine)
    session.pick("lead", "delegate", {})
    session.pick("helper", "hand_back", {"result": "42"})
    outputs = session.drain()
    assert of(outputs, PickStopped) == []
    assert [(n.agent, n.notice) for n in of(outputs, NoticeKept)] == [("lead", {"result": "42"})]
    assert session.status == "done"


# -- 2. an onError route that leaves the Agent's state keeps its answer as a notice ---------------------------


def failing_work(on_error, on_done=None):
    return jr2_setup(
        events=[event("work"), event("finish")],
        actors={
            "writer": slot("writer"),
            "job": effect.call(noop),
        },
    ).create_machine(
        {
            "id": "jobs",
            "initial": "writing",
            "states": {
                "writing": {
                    "invoke": {"src": "writer", "input": {"prompt": "Work.", "continue": True}},
                    "on": {"finish": "done"},
                    "initial": "idle",
                    "states": {
                        "idle": {"on": {"work": "working"}},
                        "working": {"invoke": {"src": "job", "onError": on_error, "onDone": on_done or "idle"}},
                    },
                },
                "recovering": {
                    "invoke": {"src": "writer", "input": {"prompt": "Recover.", "continue": True}},
                    "on": {"finish": "done"},
                },
                "done": {"type": "final"},
            },
        }
    )


def test_an_on_error_route_that_leaves_the_agents_state_keeps_its_answer_as_a_notice_and_stops_nothing():
    machine = failing_work(
        {"target": "#jobs.recovering", "actions": answer(lambda event: "ERR: " + event.error["message"])}
    )
    session = started(machine)
    session.pick("writer", "work", {})
    [pending] = session.snapshot["effects"]
    session.drain()
    session.effect_failed(pending["id"], {"message": "disk full"})
    outputs = session.drain()
    assert of(outputs, PickStopped) == []
    assert [n.notice for n in of(outputs, NoticeKept)] == ["ERR: disk full"]
    [turn] = session.turns
    assert turn.state.endswith("recovering") and turn.notices == ("ERR: disk full",)


def test_an_on_error_route_without_answer_that_leaves_the_state_keeps_no_notice_and_stops_nothing():
    session = started(failing_work({"target": "#jobs.recovering"}))
    session.pick("writer", "work", {})
    [pending] = session.snapshot["effects"]
    session.drain()
    session.effect_failed(pending["id"], {"message": "disk full"})
    outputs = session.drain()
    assert of(outputs, PickStopped) == []
    assert of(outputs, NoticeKept) == []


def test_an_on_done_route_that_leaves_the_agents_state_keeps_the_output_as_a_notice():
    session = started(failing_work({"target": "idle"}, on_done="#jobs.recovering"))
    session.pick("writer", "work", {})
    [pending] = session.snapshot["effects"]
    session.drain()
    session.effect_done(pending["id"], {"rows": 3})
    outputs = session.drain()
    assert of(outputs, PickStopped) == []
    assert [n.notice for n in of(outputs, NoticeKept)] == [{"rows": 3}]


def test_a_child_machines_failure_routed_out_of_the_agents_state_is_not_did_not_finish():
    inner = jr2_setup(events=[event("give_up")], actors={"worker": slot("worker"), "fail": fail()}).create_machine(
        {
            "id": "inner",
            "initial": "trying",
            "states": {
                "trying": {"invoke": {"src": "worker"}, "on": {"give_up": "broken"}},
                "broken": {"invoke": {"src": "fail", "input": {"reason": "could not"}}},
            },
        }
    )
    machine = jr2_setup(
        events=[event("work"), event("finish")],
        actors={
            "writer": slot("writer"),
            "inner": inner,
            "fail": fail(),
        },
    ).create_machine(
        {
            "id": "outer",
            "initial": "writing",
            "states": {
                "writing": {
                    "invoke": {"src": "writer"},
                    "on": {"finish": "done"},
                    "initial": "idle",
                    "states": {
                        "idle": {"on": {"work": "working"}},
                        "working": {
                            "invoke": {
                                "id": "sub",
                                "src": "inner",
                                "onError": {"target": "#outer.done", "actions": answer(lambda event: "sub failed")},
                            }
                        },
                    },
                },
                "done": {"type": "final"},
            },
        }
    )
    session = started(machine)
    session.pick("writer", "work", {})
    session.drain()
    session.pick("sub/worker", "give_up", {})
    outputs = session.drain()
    assert [o for o in of(outputs, PickStopped) if o.turn.startswith("turn")] == []
    assert [n.notice for n in of(outputs, NoticeKept) if n.agent == "writer"] == ["sub failed"]


def test_a_timer_leaving_the_agents_state_while_work_runs_still_says_did_not_finish():
    machine = jr2_setup(
        events=[event("work")], actors={"writer": slot("writer"), "job": effect.call(noop)}
    ).create_machine(
        {
            "id": "slow",
            "initial": "writing",
            "states": {
                "writing": {
                    "invoke": {"src": "writer"},
                    "after": {5000: "late"},
                    "initial": "idle",
                    "states": {
                        "idle": {"on": {"work": "working"}},
                        "working": {"invoke": {"src": "job", "onDone": "idle"}},
                    },
                },
                "late": {"type": "final"},
            },
        }
    )
    session = started(machine)
    session.pick("writer", "work", {})
    session.drain()
    session.advance(5000)
    [stopped] = of(session.drain(), PickStopped)
    assert "did not finish" in stopped.answer


# -- 3. any timer that would move the Agent's state inside it blocks Rest -------------------------------------


def tick_event():
    return define_event(name="tick", input=create_model("TickParams"), description="A tick.")


def ticking_machine(entry, on_tick="idle"):
    events = [event("wait"), event("finish"), tick_event()]
    states = {
        "idle": {"on": {"wait": "pending"}},
        "pending": {"entry": entry, "on": {"tick": on_tick}},
    }
    return jr2_setup(events=events, actors={"writer": slot("writer")}).create_machine(
        {
            "id": "ticks",
            "initial": "work",
            "states": {
                "work": {"invoke": {"src": "writer"}, "on": {"finish": "done"}, "initial": "idle", "states": states},
                "done": {"type": "final"},
            },
        }
    )


@pytest.mark.parametrize(
    "entry",
    [
        raise_({"type": "tick"}, delay=1000),
        send_to(lambda self: self, {"type": "tick"}, delay=1000),
    ],
    ids=["delayed raise_", "delayed send_to self"],
)
def test_a_delayed_event_to_the_machine_that_would_move_the_state_inside_it_blocks_rest(entry):
    session = started(ticking_machine(entry))
    assert session.pick("writer", "wait", {}).outcome == "outstanding"
    before = frozen(session)
    assert session.pick("writer", "finish", {}).outcome == "refused"
    assert frozen(session) == before
    session.advance(999)
    assert session.turn_of("writer").outstanding is not None
    session.advance(1)
    [answered] = of(session.drain(), PickAnswered)
    assert answered.event == "wait" and session.value == {"work": "idle"}
    assert session.pick("writer", "finish", {}).outcome == "ended"


def test_a_delayed_event_that_moves_nothing_inside_does_not_block_rest():
    session = started(ticking_machine(raise_({"type": "tick"}, delay=1000), on_tick="#ticks.done"))
    assert session.pick("writer", "wait", {}).outcome == "answered"


def test_a_delayed_event_taken_by_the_agents_own_state_into_a_mode_blocks_rest():
    events = [event("wait"), event("finish"), tick_event()]
    machine = jr2_setup(events=events, actors={"writer": slot("writer")}).create_machine(
        {
            "id": "ticks",
            "initial": "work",
            "states": {
                "work": {
                    "invoke": {"src": "writer"},
                    "on": {"finish": "done", "tick": ".idle"},
                    "initial": "idle",
                    "states": {
                        "idle": {"on": {"wait": "pending"}},
                        "pending": {"entry": raise_({"type": "tick"}, delay=50)},
                    },
                },
                "done": {"type": "final"},
            },
        }
    )
    session = started(machine)
    assert session.pick("writer", "wait", {}).outcome == "outstanding"
    session.advance(50)
    assert [a.event for a in of(session.drain(), PickAnswered)] == ["wait"]


def test_a_guarded_after_timer_blocks_rest_until_it_has_fired_whatever_its_guard_says():
    machine = jr2_setup(events=[event("wait"), event("finish")], actors={"writer": slot("writer")}).create_machine(
        {
            "id": "guarded",
            "initial": "work",
            "context": {"ready": False},
            "states": {
                "work": {
                    "invoke": {"src": "writer"},
                    "on": {"finish": "done"},
                    "initial": "idle",
                    "states": {
                        "idle": {"on": {"wait": "pending"}},
                        "pending": {"after": {100: {"guard": lambda context: context["ready"], "target": "idle"}}},
                    },
                },
                "done": {"type": "final"},
            },
        }
    )
    session = started(machine)
    assert session.pick("writer", "wait", {}).outcome == "outstanding"
    session.advance(100)
    [answered] = of(session.drain(), PickAnswered)
    assert answered.event == "wait"
    assert session.value == {"work": "pending"}
    assert session.allowed_picks("writer") == ["finish"]


# -- 4. a guard that reads the pick's input through a copy ----------------------------------------------------


@pytest.mark.parametrize(
    "guard",
    [
        lambda event: dict(event).get("n", 0) > 3,
        lambda event: {**event}.get("n", 0) > 3,
        lambda event: dict(event.items()).get("n", 0) > 3,
        lambda event: "n" in list(event.keys()) and event["n"] > 3,
        lambda event: any(key == "n" for key in event) and event["n"] > 3,
        lambda event: event.model_dump().get("n", 0) > 3,
        lambda event: sum(v for v in event.values() if isinstance(v, int)) > 3,
        lambda event: len(event) > 2 and event.get("n") > 3,
        lambda event: (event | {}).get("n", 0) > 3,
        lambda event: copy.copy(event).get("n", 0) > 3,
    ],
    ids=["dict()", "**", "items()", "keys()", "iteration", "model_dump()", "values()", "len()", "|", "copy.copy"],
)
def test_a_guard_that_reads_the_picks_input_through_a_copy_keeps_the_pick_allowed(guard):
    machine = jr2_setup(events=[event("go", n=int), event("stop")], actors={"writer": slot("writer")}).create_machine(
        {
            "id": "copies",
            "initial": "work",
            "states": {
                "work": {"invoke": {"src": "writer"}, "on": {"go": {"guard": guard, "target": "done"}, "stop": "done"}},
                "done": {"type": "final"},
            },
        }
    )
    session = started(machine)
    assert "go" in session.allowed_picks("writer")
    assert session.pick("writer", "go", {"n": 1}).outcome == "unmoved"
    assert session.pick("writer", "go", {"n": 5}).outcome == "ended"
    assert session.status == "done"


def test_a_guard_that_swallows_every_exception_still_keeps_a_pick_that_reads_its_input_allowed():
    def careful(event):
        try:
            return event["n"] > 3
        except Exception:
            return False

    machine = jr2_setup(events=[event("go", n=int), event("stop")], actors={"writer": slot("writer")}).create_machine(
        {
            "id": "careful",
            "initial": "work",
            "states": {
                "work": {
                    "invoke": {"src": "writer"},
                    "on": {"go": {"guard": careful, "target": "done"}, "stop": "done"},
                },
                "done": {"type": "final"},
            },
        }
    )
    session = started(machine)
    assert "go" in session.allowed_picks("writer")
    assert session.pick("writer", "go", {"n": 5}).outcome == "ended"


def test_a_guard_reading_only_type_and_sender_still_decides_exactly():
    machine = jr2_setup(events=[event("go"), event("stop")], actors={"writer": slot("writer")}).create_machine(
        {
            "id": "exact",
            "initial": "work",
            "context": {"open": False},
            "states": {
                "work": {
                    "invoke": {"src": "writer"},
                    "on": {
                        "go": {
                            "guard": lambda context, event: (
                                context["open"] and event.sender["id"] == "writer" and event.type == "go"
                            ),
                            "target": "done",
                        },
                        "stop": "done",
                    },
                },
                "done": {"type": "final"},
            },
        }
    )
    assert started(machine).allowed_picks("writer") == ["stop"]


# -- 5. an input field named `type`, and every other bad pick, is a refusal, never an exception --------------


class Typed(BaseModel):
    type: str = Field(description="A kind.")


class AliasedType(BaseModel):
    kind: str = Field(alias="type", description="A kind.")


@pytest.mark.parametrize("model", [Typed, AliasedType], ids=["field", "alias"])
def test_define_event_refuses_an_input_field_named_type(model):
    with pytest.raises(EventDefError, match="`type`"):
        define_event(name="classify", input=model)


class Loose(BaseModel):
    model_config = ConfigDict(extra="allow")
    text: str = ""


class Picky(BaseModel):
    n: int = 0

    def model_post_init(self, _context):
        if self.n == 13:
            raise RuntimeError("unlucky")


def loose_machine(guard=None):
    return jr2_setup(
        events=[define_event(name="say", input=Loose), define_event(name="count", input=Picky), event("stop")],
        actors={"writer": slot("writer")},
    ).create_machine(
        {
            "id": "loose",
            "initial": "work",
            "states": {
                "work": {
                    "invoke": {"src": "writer"},
                    "on": {
                        "say": {"actions": answer(lambda event: event.text)},
                        "count": {"guard": guard or (lambda event: True), "actions": answer(lambda event: event.n)},
                        "stop": "done",
                    },
                },
                "done": {"type": "final"},
            },
        }
    )


@pytest.mark.parametrize(
    "name, params, words",
    [
        ("say", {"text": "hi", "type": "other"}, "`type`"),
        ("say", {"text": "hi", "sender": {"party": "gate", "id": "g"}}, "`sender`"),
        ("say", {1: "not a string key"}, "keys"),
        ("say", "not an object", "object"),
        ("count", {"n": 13}, "unlucky"),
        ("count", {"n": "many"}, "not valid"),
    ],
    ids=["extra type", "extra sender", "non-string key", "not a mapping", "validator raises", "schema"],
)
def test_every_bad_pick_is_a_refusal_that_changes_nothing(name, params, words):
    session = started(loose_machine())
    before = frozen(session)
    result = session.pick("writer", name, params)
    assert result.outcome == "refused"
    assert words in result.error
    assert frozen(session) == before


def test_a_gate_body_with_a_type_key_is_refused():
    machine = jr2_setup(events=[define_event(name="say", input=Loose)]).create_machine(
        {
            "id": "desk",
            "initial": "open",
            "states": {
                "open": {"invoke": {"id": "desk", "src": "gate"}, "on": {"say": "done"}},
                "done": {"type": "final"},
            },
        }
    )
    session = started(machine)
    before = frozen(session)
    result = session.send_gate("desk", "say", {"text": "hi", "type": "x"})
    assert result.outcome == "refused" and "`type`" in result.error
    assert frozen(session) == before


def test_a_guard_that_raises_on_a_picks_input_is_a_refusal_naming_the_error():
    def strict(event):
        return 10 // event.n > 1

    session = started(loose_machine(guard=strict))
    before = frozen(session)
    result = session.pick("writer", "count", {"n": 0})
    assert result.outcome == "refused"
    assert "ZeroDivisionError" in result.error
    assert frozen(session) == before
    assert session.pick("writer", "count", {"n": 2}).outcome == "answered"


def test_an_action_that_raises_fails_the_run_with_a_reason_naming_it():
    def broken(context):
        raise KeyError("missing")

    machine = jr2_setup(events=[event("go")], actors={"writer": slot("writer")}).create_machine(
        {
            "id": "broken",
            "initial": "work",
            "states": {"work": {"invoke": {"src": "writer"}, "on": {"go": {"actions": assign(x=broken)}}}},
        }
    )
    session = started(machine)
    result = session.pick("writer", "go", {})
    assert result.outcome == "ended"
    assert session.status == "failed"
    assert "KeyError" in session.reason and "missing" in session.reason
    outputs = session.drain()
    [ended] = of(outputs, RunEnded)
    assert ended.status == "failed"
    assert [t.agent for t in of(outputs, TurnEnded)] == ["writer"]


# -- 6. an Effect's error with no onError route fails the run ------------------------------------------------


def unguarded_effect():
    return jr2_setup(
        events=[event("work"), event("finish")],
        actors={
            "writer": slot("writer"),
            "job": effect.call(noop),
        },
    ).create_machine(
        {
            "id": "bare",
            "initial": "writing",
            "states": {
                "writing": {
                    "invoke": {"src": "writer"},
                    "on": {"finish": "done"},
                    "initial": "idle",
                    "states": {
                        "idle": {"on": {"work": "working"}},
                        "working": {"invoke": {"src": "job", "onDone": "idle"}},
                    },
                },
                "done": {"type": "final"},
            },
        }
    )


def test_an_effects_error_with_no_on_error_route_fails_the_run_and_ends_the_turn():
    session = started(unguarded_effect())
    session.pick("writer", "work", {})
    [pending] = session.snapshot["effects"]
    session.drain()
    session.effect_failed(pending["id"], {"message": "disk full"})
    outputs = session.drain()
    assert session.status == "failed"
    assert "bare.writing.working" in session.reason
    assert '"job"' in session.reason and "disk full" in session.reason
    [ended] = of(outputs, RunEnded)
    assert ended.status == "failed" and ended.reason == session.reason
    assert [t.agent for t in of(outputs, TurnEnded)] == ["writer"]
    assert session.turns == [] and session.turn_of("writer") is None
    assert session.pick("writer", "finish", {}).outcome == "refused"


def test_a_child_machines_failure_with_no_on_error_fails_the_run():
    inner = jr2_setup(events=[event("give_up")], actors={"worker": slot("worker"), "fail": fail()}).create_machine(
        {
            "id": "inner",
            "initial": "trying",
            "states": {
                "trying": {"invoke": {"src": "worker"}, "on": {"give_up": "broken"}},
                "broken": {"invoke": {"src": "fail", "input": {"reason": "could not"}}},
            },
        }
    )
    machine = jr2_setup(
        events=[event("work")], actors={"writer": slot("writer"), "inner": inner, "fail": fail()}
    ).create_machine(
        {
            "id": "outer",
            "initial": "writing",
            "states": {
                "writing": {
                    "invoke": {"src": "writer"},
                    "initial": "idle",
                    "states": {
                        "idle": {"on": {"work": "working"}},
                        "working": {"invoke": {"id": "sub", "src": "inner", "onDone": "idle"}},
                    },
                }
            },
        }
    )
    session = started(machine)
    session.pick("writer", "work", {})
    session.pick("sub/worker", "give_up", {})
    assert session.status == "failed"
    assert "could not" in session.reason and '"sub"' in session.reason
    assert session.turns == []


def test_a_failed_run_replays_to_the_same_end():
    session = started(unguarded_effect())
    session.pick("writer", "work", {})
    [pending] = session.snapshot["effects"]
    session.effect_failed(pending["id"], {"message": "disk full"})
    again = Session.replay(session.machine, session.journal)
    assert again.status == "failed" and again.reason == session.reason


# -- the two cases the rules left open -------------------------------------------------------------------------


def test_two_states_in_parallel_regions_invoking_the_same_agent_slot_are_refused():
    with pytest.raises(MachineError) as err:
        jr2_setup(events=[event("go")], actors={"writer": slot("writer")}).create_machine(
            {
                "id": "twice",
                "type": "parallel",
                "states": {
                    "left": {
                        "initial": "a",
                        "states": {"a": {"invoke": {"src": "writer"}, "on": {"go": "b"}}, "b": {}},
                    },
                    "right": {"initial": "a", "states": {"a": {"invoke": {"src": "writer"}}}},
                },
            }
        )
    message = str(err.value)
    assert "twice.left.a" in message and "twice.right.a" in message and '"writer"' in message


def test_the_same_agent_slot_in_states_that_are_never_active_together_is_allowed():
    machine = jr2_setup(events=[event("go"), event("back")], actors={"writer": slot("writer")}).create_machine(
        {
            "id": "turns",
            "type": "parallel",
            "states": {
                "left": {
                    "initial": "a",
                    "states": {
                        "a": {"invoke": {"src": "writer"}, "on": {"go": "b"}},
                        "b": {"invoke": {"src": "writer"}, "on": {"back": "a"}},
                    },
                },
                "right": {},
            },
        }
    )
    session = started(machine)
    assert session.pick("writer", "go", {}).outcome == "ended"
    assert session.turn_of("writer") is not None


def test_a_state_inside_another_that_invokes_the_same_agent_slot_is_refused():
    with pytest.raises(MachineError, match='"nested.outer" and "nested.outer.inner"'):
        jr2_setup(events=[event("go")], actors={"writer": slot("writer")}).create_machine(
            {
                "id": "nested",
                "initial": "outer",
                "states": {
                    "outer": {
                        "invoke": {"src": "writer"},
                        "initial": "inner",
                        "states": {"inner": {"invoke": {"src": "writer"}, "on": {"go": "done"}}, "done": {}},
                    }
                },
            }
        )


def test_an_entry_action_that_raises_as_the_run_starts_fails_the_run_instead_of_raising():
    def broken():
        raise RuntimeError("no config")

    machine = jr2_setup(events=[event("go")], actors={"writer": slot("writer")}).create_machine(
        {
            "id": "early",
            "initial": "work",
            "states": {"work": {"entry": broken, "invoke": {"src": "writer"}, "on": {"go": "work"}}},
        }
    )
    session = Session(machine)
    assert session.status == "failed"
    assert "RuntimeError: no config" in session.reason and "early.work" in session.reason


def test_a_restored_run_keeps_its_timers_with_their_remaining_time():
    import json

    machine = ticking_machine(raise_({"type": "tick"}, delay=1000))
    session = started(machine)
    session.pick("writer", "wait", {})
    session.advance(400)
    restored = Session.restore(machine, json.loads(json.dumps(session.to_json())))
    assert restored.next_due() == session.next_due() == 1000
    restored.advance(599)
    assert restored.turn_of("writer").outstanding is not None
    restored.advance(1)
    assert [a.event for a in of(restored.drain(), PickAnswered)] == ["wait"]


def test_a_run_written_under_another_shape_is_refused_as_drifted():
    import json

    from engine import SessionError

    session = started(ticking_machine(raise_({"type": "tick"}, delay=1000)))
    other = ticking_machine(raise_({"type": "tick"}, delay=1000), on_tick="#ticks.done")
    with pytest.raises(SessionError, match="drifted"):
        Session.restore(other, json.loads(json.dumps(session.to_json())))


# -- ids people type: Gates and child Machines are named by their state's path -------------------------------


def test_a_gates_default_id_is_its_states_dotted_path_and_an_explicit_id_wins():
    from workflows import notes, triage

    session = started(notes.machine, {"changes": "One fix."})
    session.pick("writer", "ask", {"question": "Tone?"})
    assert [g.id for g in session.gates] == ["writing.asking"]
    assert "notes.writing.asking gate: [reply]" in notes.machine.seats_text()
    desk = started(triage.machine, {"title": "Crash", "body": "It crashes."})
    assert [g.id for g in desk.gates] == ["desk"]


def test_a_child_machines_default_id_is_its_states_dotted_path():
    inner = jr2_setup(events=[event("found")], actors={"scout": slot("scout")}).create_machine(
        {
            "id": "inner",
            "initial": "looking",
            "states": {"looking": {"invoke": {"src": "scout"}, "on": {"found": "done"}}, "done": {"type": "final"}},
        }
    )
    machine = jr2_setup(events=[event("go")], actors={"lead": slot("lead"), "inner": inner}).create_machine(
        {
            "id": "outer",
            "initial": "work",
            "states": {
                "work": {
                    "invoke": {"src": "lead"},
                    "initial": "idle",
                    "states": {
                        "idle": {"on": {"go": "scouting"}},
                        "scouting": {"invoke": {"src": "inner", "onDone": "idle"}},
                    },
                }
            },
        }
    )
    session = started(machine)
    session.pick("lead", "go", {})
    assert [t.agent for t in session.turns] == ["lead", "work.scouting/scout"]
    assert session.pick("work.scouting/scout", "found", {}).outcome == "ended"
    assert session.value == {"work": "idle"}


def test_a_fault_the_machine_does_not_route_out_of_the_agents_state_fails_the_run():
    machine = jr2_setup(events=[event("go")], actors={"writer": slot("writer")}).create_machine(
        {
            "id": "unrouted",
            "initial": "work",
            "states": {"work": {"invoke": {"src": "writer"}, "on": {"go": "work"}}},
        }
    )
    session = started(machine)
    session.fault("writer", "provider limit: 429 slow down")
    assert session.status == "failed"
    assert "provider limit: 429 slow down" in session.reason and "unrouted.work" in session.reason
    assert session.turns == []
