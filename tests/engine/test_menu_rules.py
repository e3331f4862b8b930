"""The rules of the Menu made at `create_machine` (SPEC.md 4, "The Menu" seed): Menu derivation, seats, audience,
every refusal (each naming the Machine, the state path and the event), both warnings, and the shape digest."""

import json

import pytest
from pydantic import BaseModel, Field, create_model

from engine import (
    MachineError,
    agent,
    answer,
    assign,
    define_event,
    effect,
    fail,
    from_pick,
    jr2_setup,
    sent_by,
)
from tests.engine.helpers import build, event
from workflows import notes


def reviewer():
    return agent(model="script/reviewer", instructions="You review.")


def lookup(query=None):
    return {"rows": []}


def assert_names(err, machine, state, event_name):
    """A refusal names the Machine, the state path (dotted) and the event."""
    message = str(err.value)
    assert f'"{machine}"' in message, message
    if state is not None:
        assert f'"{state}"' in message, message
    if event_name is not None:
        assert f'"{event_name}"' in message, message


# -- Menu derivation ------------------------------------------------------------------------------------------


def layered_machine():
    """writer in outer.work; below it a mode, an Effect's state, a child Machine's state, a Gate and a reviewer."""
    child = jr2_setup(events=[]).create_machine({"id": "child", "initial": "x", "states": {"x": {"type": "final"}}})
    names = ["own", "above", "in_mode", "in_effect", "in_child", "gate_event", "reviewer_event", "at_root"]
    return build(
        [event(n) for n in names],
        {
            "id": "layers",
            "on": {"at_root": ".finished"},
            "initial": "outer",
            "states": {
                "outer": {
                    "on": {"above": {}},
                    "initial": "work",
                    "states": {
                        "work": {
                            "invoke": {"src": "writer"},
                            "on": {"own": {}},
                            "initial": "idle",
                            "states": {
                                "idle": {"on": {"in_mode": "fetching"}},
                                "fetching": {"invoke": {"src": "lookup"}, "on": {"in_effect": "idle"}},
                                "delegating": {"invoke": {"src": "child"}, "on": {"in_child": "idle"}},
                                "asking": {"invoke": {"src": "gate"}, "on": {"gate_event": "idle"}},
                                "reviewing": {"invoke": {"src": "reviewer"}, "on": {"reviewer_event": "idle"}},
                            },
                        },
                    },
                },
                "finished": {"type": "final"},
            },
        },
        lookup=effect.call(lookup),
        child=child,
        reviewer=reviewer(),
    )


def test_an_agents_menu_has_its_own_states_on_keys():
    assert "own" in layered_machine().menu_names("writer")


def test_an_agents_menu_has_the_on_keys_of_its_states_ancestors():
    machine = layered_machine()
    assert "above" in machine.menu_names("writer")
    assert "at_root" in machine.menu_names("writer")


def test_an_agents_menu_has_the_on_keys_of_its_descendant_modes():
    assert "in_mode" in layered_machine().menu_names("writer")


def test_an_agents_menu_has_the_on_keys_of_descendants_running_an_effect_or_a_child_machine():
    machine = layered_machine()
    assert "in_effect" in machine.menu_names("writer")
    assert "in_child" in machine.menu_names("writer")


def test_a_descendant_invoking_a_gate_or_another_agent_keeps_its_events():
    machine = layered_machine()
    assert "gate_event" not in machine.menu_names("writer")
    assert "reviewer_event" not in machine.menu_names("writer")
    assert machine.menu_names("reviewer") == ("above", "at_root", "reviewer_event")
    gate_seat = machine.seat_of("layers.outer.work.asking")
    assert gate_seat.events == ("above", "at_root", "gate_event")


def test_the_whole_menu_of_an_agent_is_exactly_what_its_seat_gives():
    assert layered_machine().menu_names("writer") == ("above", "at_root", "in_child", "in_effect", "in_mode", "own")


def test_an_ancestors_key_owned_by_another_party_is_not_on_the_menu():
    """The seed's example: the Gate in `asking` does not get `done`, which `writing` gives to the writer."""
    assert notes.machine.seat_of("notes.writing.asking").events == ("reply",)
    assert notes.machine.menu_names("writer") == ("ask", "done")


def test_several_states_invoking_the_same_slot_share_one_menu_the_union():
    machine = build(
        [event("draft"), event("polish"), event("publish")],
        {
            "id": "two_states",
            "initial": "drafting",
            "states": {
                "drafting": {"invoke": {"src": "writer"}, "on": {"draft": {}, "polish": "polishing"}},
                "polishing": {"invoke": {"src": "writer"}, "on": {"publish": "done"}},
                "done": {"type": "final"},
            },
        },
    )
    assert machine.menu_names("writer") == ("draft", "polish", "publish")
    assert machine.seat_of("two_states.drafting").events == ("draft", "polish")
    assert machine.seat_of("two_states.polishing").events == ("publish",)
    assert [tool["name"] for tool in machine.menu("writer")] == ["draft", "polish", "publish"]


def menu_machine(order, state_order):
    events = {"zeta": event("zeta", text=str), "alpha": event("alpha", n=int), "mid": event("mid")}
    on = {"zeta": {}, "alpha": {}, "mid": "done"}
    return build(
        [events[n] for n in order],
        {
            "id": "menu_order",
            "initial": "work",
            "states": {
                "work": {"invoke": {"src": "writer"}, "on": {k: on[k] for k in state_order}},
                "done": {"type": "final"},
            },
        },
    )


def test_the_menu_is_sorted_by_name():
    machine = menu_machine(["zeta", "alpha", "mid"], ["zeta", "mid", "alpha"])
    assert machine.menu_names("writer") == ("alpha", "mid", "zeta")
    assert [tool["name"] for tool in machine.menu("writer")] == ["alpha", "mid", "zeta"]


def test_menu_json_is_byte_stable_across_rebuilds_and_listing_orders():
    first = menu_machine(["zeta", "alpha", "mid"], ["zeta", "mid", "alpha"]).menu_json("writer")
    again = menu_machine(["zeta", "alpha", "mid"], ["zeta", "mid", "alpha"]).menu_json("writer")
    shuffled = menu_machine(["mid", "zeta", "alpha"], ["alpha", "zeta", "mid"]).menu_json("writer")
    assert isinstance(first, str)
    assert first == again == shuffled
    assert [tool["name"] for tool in json.loads(first)] == ["alpha", "mid", "zeta"]


def test_each_tool_has_the_event_description_and_json_schema():
    class Query(BaseModel):
        query: str = Field(description="What to look for.")

    search = define_event(name="search", input=Query, description="Look something up.")
    machine = build(
        [search],
        {"id": "tools", "initial": "work", "states": {"work": {"invoke": {"src": "writer"}, "on": {"search": {}}}}},
    )
    assert machine.menu("writer") == [
        {"name": "search", "description": "Look something up.", "input_schema": Query.model_json_schema()}
    ]


# -- root keys and audience -----------------------------------------------------------------------------------


def root_key_machine(audience):
    return build(
        [event("halt", audience=audience), event("write"), event("check"), event("answer_it")],
        {
            "id": "root_keys",
            "on": {"halt": ".halted"},
            "initial": "work",
            "states": {
                "work": {"invoke": {"src": "writer"}, "on": {"write": "review"}},
                "review": {"invoke": {"src": "reviewer"}, "on": {"check": "human"}},
                "human": {"invoke": {"src": "gate"}, "on": {"answer_it": "work"}},
                "halted": {"type": "final"},
            },
        },
        reviewer=reviewer(),
    )


def test_a_root_key_is_on_every_agents_menu_and_accepted_by_every_gate():
    machine = root_key_machine(None)
    assert "halt" in machine.menu_names("writer")
    assert "halt" in machine.menu_names("reviewer")
    assert "halt" in machine.seat_of("root_keys.human").events


def test_audience_agent_keeps_a_root_key_from_the_gates():
    machine = root_key_machine("agent")
    assert "halt" in machine.menu_names("writer")
    assert "halt" in machine.menu_names("reviewer")
    assert "halt" not in machine.seat_of("root_keys.human").events


def test_audience_external_keeps_a_root_key_from_the_agents():
    machine = root_key_machine("external")
    assert "halt" not in machine.menu_names("writer")
    assert "halt" not in machine.menu_names("reviewer")
    assert "halt" in machine.seat_of("root_keys.human").events


def test_audience_any_on_a_root_key_gives_it_to_both_parties():
    machine = root_key_machine("any")
    assert "halt" in machine.menu_names("writer")
    assert "halt" in machine.seat_of("root_keys.human").events


def audience_machine(skip_audience=None, nudge_audience=None):
    """`skip` is written on the writer's state, `nudge` on the Gate's state below it."""
    return build(
        [event("ask"), event("skip", audience=skip_audience), event("nudge", audience=nudge_audience), event("reply")],
        {
            "id": "audience",
            "initial": "work",
            "states": {
                "work": {
                    "invoke": {"src": "writer"},
                    "on": {"skip": "done"},
                    "initial": "idle",
                    "states": {
                        "idle": {"on": {"ask": "asking"}},
                        "asking": {"invoke": {"src": "gate"}, "on": {"reply": "idle", "nudge": "idle"}},
                    },
                },
                "done": {"type": "final"},
            },
        },
    )


def test_an_agents_key_is_not_given_to_a_gate_below_without_audience():
    machine = audience_machine()
    assert "skip" in machine.menu_names("writer")
    assert "skip" not in machine.seat_of("audience.work.asking").events
    assert "nudge" not in machine.menu_names("writer")


def test_audience_external_gives_an_agents_key_to_the_gate_too():
    machine = audience_machine(skip_audience="external")
    assert "skip" in machine.seat_of("audience.work.asking").events
    assert "skip" in machine.menu_names("writer")


def test_audience_agent_gives_a_gates_key_to_the_agent_too():
    machine = audience_machine(nudge_audience="agent")
    assert "nudge" in machine.menu_names("writer")
    assert "nudge" in machine.seat_of("audience.work.asking").events


def test_audience_any_gives_a_key_to_the_other_party_too():
    machine = audience_machine(skip_audience="any", nudge_audience="any")
    assert "skip" in machine.seat_of("audience.work.asking").events
    assert "nudge" in machine.menu_names("writer")


# -- seats ----------------------------------------------------------------------------------------------------


def test_the_seats_text_of_the_notes_workflow_is_exactly_as_the_spec_prints_it():
    assert notes.machine.seats_text() == (
        'seats: workflow "notes" — who may send what, per state\n'
        "  notes.writing agent:writer: [ask, done]\n"
        "  notes.writing.asking gate: [reply]"
    )


def test_the_seats_text_lists_one_line_per_state_with_a_party_in_document_order():
    machine = layered_machine()
    assert machine.seats_text().splitlines() == [
        'seats: workflow "layers" — who may send what, per state',
        "  layers.outer.work agent:writer: [above, at_root, in_child, in_effect, in_mode, own]",
        "  layers.outer.work.asking gate: [above, at_root, gate_event]",
        "  layers.outer.work.reviewing agent:reviewer: [above, at_root, reviewer_event]",
    ]


def test_a_gate_with_an_explicit_id_is_labelled_by_that_id_in_the_seats():
    machine = build(
        [event("go"), event("approve")],
        {
            "id": "named",
            "initial": "work",
            "states": {
                "work": {"invoke": {"src": "writer"}, "on": {"go": "approval"}},
                "approval": {"invoke": {"src": "gate", "id": "editor"}, "on": {"approve": "work"}},
            },
        },
    )
    assert machine.seats_text().splitlines()[1:] == [
        "  named.work agent:writer: [go]",
        "  named.approval gate:editor: [approve]",
    ]


# -- refusals -------------------------------------------------------------------------------------------------


def test_an_on_key_that_no_listed_event_has_is_refused():
    with pytest.raises(MachineError) as err:
        build(
            [event("write")],
            {
                "id": "unknown_key",
                "initial": "work",
                "states": {
                    "work": {
                        "invoke": {"src": "writer"},
                        "on": {"write": {}},
                        "initial": "idle",
                        "states": {"idle": {"on": {"wirte": "idle"}}},
                    }
                },
            },
        )
    assert_names(err, "unknown_key", "unknown_key.work.idle", "wirte")
    assert (err.value.machine, err.value.state, err.value.event) == ("unknown_key", "unknown_key.work.idle", "wirte")


def test_engine_events_and_done_and_error_events_need_no_listing():
    machine = build(
        [event("run")],
        {
            "id": "engine_events",
            "on": {"agent.fault": ".failed"},
            "initial": "work",
            "states": {
                "work": {"invoke": {"src": "writer"}, "on": {"run": "running"}},
                "running": {
                    "invoke": {"src": "lookup", "id": "look", "onDone": "done", "onError": "failed"},
                    "on": {"xstate.error.actor.look": "failed"},
                },
                "done": {"type": "final"},
                "failed": {"invoke": {"src": "fail", "input": {"reason": "stopped"}}},
            },
        },
        lookup=effect.call(lookup),
        fail=fail(),
    )
    assert machine.menu_names("writer") == ("run",)


def test_a_listed_event_that_no_state_takes_is_refused():
    # No state takes the event, so there is no state to name: the Machine and the event are named.
    with pytest.raises(MachineError) as err:
        build(
            [event("write"), event("orphan")],
            {
                "id": "untaken",
                "initial": "work",
                "states": {"work": {"invoke": {"src": "writer"}, "on": {"write": {}}}},
            },
        )
    assert_names(err, "untaken", None, "orphan")
    assert (err.value.machine, err.value.event) == ("untaken", "orphan")


def test_a_parallel_state_below_an_agents_state_is_refused():
    with pytest.raises(MachineError) as err:
        build(
            [event("write")],
            {
                "id": "par_below",
                "initial": "work",
                "states": {
                    "work": {
                        "invoke": {"src": "writer"},
                        "on": {"write": {}},
                        "initial": "both",
                        "states": {"both": {"type": "parallel", "states": {"x": {}, "y": {}}}},
                    }
                },
            },
        )
    assert_names(err, "par_below", "par_below.work.both", None)
    assert "writer" in str(err.value)
    assert err.value.state == "par_below.work.both"


def test_a_parallel_state_that_itself_invokes_an_agent_is_refused():
    with pytest.raises(MachineError) as err:
        build(
            [event("write")],
            {
                "id": "par_at",
                "initial": "work",
                "states": {
                    "work": {
                        "type": "parallel",
                        "invoke": {"src": "writer"},
                        "on": {"write": {}},
                        "states": {"x": {}, "y": {}},
                    }
                },
            },
        )
    assert_names(err, "par_at", "par_at.work", None)
    assert "writer" in str(err.value)


def test_a_parallel_state_above_an_agents_state_is_accepted():
    machine = build(
        [event("write"), event("approve")],
        {
            "id": "par_above",
            "type": "parallel",
            "states": {
                "a": {"initial": "work", "states": {"work": {"invoke": {"src": "writer"}, "on": {"write": {}}}}},
                "b": {"initial": "desk", "states": {"desk": {"invoke": {"src": "gate"}, "on": {"approve": {}}}}},
            },
        },
    )
    assert machine.menu_names("writer") == ("write",)


def test_sent_by_naming_no_agent_slot_and_no_gate_invoke_id_is_refused():
    with pytest.raises(MachineError) as err:
        build(
            [event("write"), event("approve")],
            {
                "id": "bad_sender",
                "initial": "work",
                "states": {
                    "work": {"invoke": {"src": "writer"}, "on": {"write": "desk"}},
                    "desk": {
                        "invoke": {"src": "gate", "id": "editor"},
                        "on": {"approve": {"guard": sent_by("edtor"), "target": "work"}},
                    },
                },
            },
        )
    assert_names(err, "bad_sender", "bad_sender.desk", "approve")
    assert "edtor" in str(err.value)


def test_sent_by_naming_an_agent_slot_or_a_gate_invoke_id_is_accepted():
    machine = build(
        [event("write"), event("approve")],
        {
            "id": "good_sender",
            "initial": "work",
            "states": {
                "work": {"invoke": {"src": "writer"}, "on": {"write": {"guard": sent_by("writer"), "target": "desk"}}},
                "desk": {
                    "invoke": {"src": "gate", "id": "editor"},
                    "on": {"approve": {"guard": sent_by("editor"), "target": "work"}},
                },
            },
        },
    )
    assert machine.menu_names("writer") == ("write",)


def effect_pick_machine(effect_input=None, actions=None, machine_id="unread"):
    fetch = event("fetch", url=str, reason=str)
    state = {"invoke": {"src": "lookup"}, "on": {"fetched": "idle"}}
    if effect_input is not None:
        state["invoke"]["input"] = effect_input
    transition = {"target": "fetching"}
    if actions is not None:
        transition["actions"] = actions
    return build(
        [fetch, event("fetched")],
        {
            "id": machine_id,
            "initial": "work",
            "states": {
                "work": {
                    "invoke": {"src": "writer"},
                    "initial": "idle",
                    "states": {
                        "idle": {"on": {"fetch": transition}},
                        "fetching": state,
                    },
                }
            },
        },
        lookup=effect.call(lookup),
    )


def test_a_pick_entering_an_effects_state_with_unread_params_is_refused_naming_them():
    with pytest.raises(MachineError) as err:
        effect_pick_machine(effect_input=lambda event: {"url": event.url})
    message = str(err.value)
    assert_names(err, "unread", "unread.work.idle", "fetch")
    assert "reason" in message
    assert "'url'" not in message and '"url"' not in message


def test_a_pick_entering_an_effects_state_with_no_param_read_names_every_param():
    with pytest.raises(MachineError) as err:
        effect_pick_machine()
    assert "reason" in str(err.value) and "url" in str(err.value)


def test_params_read_by_the_effects_input_and_an_assign_are_not_refused():
    machine = effect_pick_machine(
        effect_input=lambda event: {"url": event.url}, actions=assign(reason=lambda event: event.reason)
    )
    assert machine.menu_names("writer") == ("fetch", "fetched")


def test_params_read_by_the_fill_of_from_pick_are_not_refused():
    machine = effect_pick_machine(effect_input=from_pick(fill=lambda params: {"q": params["url"] + params["reason"]}))
    assert machine.menu_names("writer") == ("fetch", "fetched")


def test_an_answer_with_no_agent_at_or_above_its_state_is_refused():
    with pytest.raises(MachineError) as err:
        build(
            [event("write"), event("approve")],
            {
                "id": "lonely_answer",
                "initial": "work",
                "states": {
                    "work": {"invoke": {"src": "writer"}, "on": {"write": "desk"}},
                    "desk": {
                        "invoke": {"src": "gate"},
                        "on": {"approve": {"target": "work", "actions": answer(lambda event: "approved")}},
                    },
                },
            },
        )
    assert_names(err, "lonely_answer", "lonely_answer.desk", "approve")


def test_an_answer_on_a_route_below_an_agents_state_is_accepted():
    assert notes.machine.menu_names("writer") == ("ask", "done")


# -- warnings -------------------------------------------------------------------------------------------------


def codes(machine, code):
    return [w for w in machine.warnings() if w.code == code]


def test_an_agent_state_with_no_agent_fault_route_above_it_is_warned_about():
    bare = build(
        [event("go")],
        {"id": "bare", "initial": "work", "states": {"work": {"invoke": {"src": "writer"}, "on": {"go": "work"}}}},
    )
    [warning] = codes(bare, "no-fault-route")
    assert (warning.state, warning.event) == ("bare.work", "agent.fault") and '"writer"' in warning.message
    routed = build(
        [event("go")],
        {
            "id": "routed",
            "initial": "work",
            "on": {"agent.fault": ".stopped"},
            "states": {"work": {"invoke": {"src": "writer"}, "on": {"go": "work"}}, "stopped": {"type": "final"}},
        },
    )
    assert codes(routed, "no-fault-route") == []


def test_a_mode_that_no_transition_enters_is_warned_about_as_data():
    machine = build(
        [event("write"), event("polish")],
        {
            "id": "lost_mode",
            "initial": "work",
            "states": {
                "work": {
                    "invoke": {"src": "writer"},
                    "initial": "drafting",
                    "states": {
                        "drafting": {"on": {"write": {}}},
                        "polishing": {"on": {"polish": "drafting"}},
                    },
                }
            },
        },
    )
    warnings = codes(machine, "mode-never-entered")
    assert [(w.state, w.event) for w in warnings] == [("lost_mode.work.polishing", None)]
    assert "lost_mode.work.polishing" in warnings[0].message
    assert warnings[0].to_json()["state"] == "lost_mode.work.polishing"
    assert "polish" in machine.menu_names("writer")


def test_a_mode_that_a_transition_enters_is_not_warned_about():
    machine = build(
        [event("write"), event("polish")],
        {
            "id": "found_mode",
            "initial": "work",
            "states": {
                "work": {
                    "invoke": {"src": "writer"},
                    "initial": "drafting",
                    "states": {
                        "drafting": {"on": {"write": "polishing"}},
                        "polishing": {"on": {"polish": "drafting"}},
                    },
                }
            },
        },
    )
    assert codes(machine, "mode-never-entered") == []


def test_a_gate_below_an_agents_state_whose_event_has_no_target_is_warned_about_as_data():
    machine = build(
        [event("ask"), event("comment"), event("reply")],
        {
            "id": "sticky_gate",
            "initial": "work",
            "states": {
                "work": {
                    "invoke": {"src": "writer"},
                    "initial": "drafting",
                    "states": {
                        "drafting": {"on": {"ask": "asking"}},
                        "asking": {
                            "invoke": {"src": "gate"},
                            "on": {"comment": {"actions": assign(comments=1)}, "reply": "drafting"},
                        },
                    },
                }
            },
        },
    )
    warnings = codes(machine, "gate-event-without-target")
    assert [(w.state, w.event) for w in warnings] == [("sticky_gate.work.asking", "comment")]
    assert "comment" in warnings[0].message


def test_a_gate_not_below_an_agents_state_may_take_an_event_without_target_without_warning():
    machine = build(
        [event("write"), event("comment"), event("approve")],
        {
            "id": "free_gate",
            "initial": "work",
            "states": {
                "work": {"invoke": {"src": "writer"}, "on": {"write": "desk"}},
                "desk": {"invoke": {"src": "gate"}, "on": {"comment": {}, "approve": "work"}},
            },
        },
    )
    assert codes(machine, "gate-event-without-target") == []


def test_the_notes_workflow_has_no_warnings():
    assert notes.machine.warnings() == []


# -- the shape digest -----------------------------------------------------------------------------------------


def digest_machine(
    target="published", guard=lambda context: context["replies"] > 0, description="Finish.", transition_description=None
):
    done = define_event(name="done", input=create_model("DoneIn", notes=(str, ...)), description=description)
    transition = {"guard": guard, "target": target}
    if transition_description is not None:
        transition["description"] = transition_description
    return build(
        [done],
        {
            "id": "shape",
            "context": {"replies": 0},
            "initial": "writing",
            "states": {
                "writing": {"invoke": {"src": "writer"}, "on": {"done": transition}},
                "published": {"type": "final"},
                "archived": {"type": "final"},
            },
        },
    )


def test_the_shape_digest_is_stable_across_rebuilds():
    assert digest_machine().digest == digest_machine().digest
    assert isinstance(digest_machine().digest, str) and digest_machine().digest


def test_the_shape_digest_changes_when_a_transitions_target_changes():
    assert digest_machine(target="published").digest != digest_machine(target="archived").digest


def test_the_shape_digest_ignores_guards_and_descriptions():
    base = digest_machine().digest
    assert digest_machine(guard=lambda context: context["replies"] > 3).digest == base
    assert digest_machine(description="Finish, and then stop.").digest == base
    assert digest_machine(transition_description="Publishes the notes.").digest == base
