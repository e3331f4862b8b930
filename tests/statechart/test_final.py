"""Final states: completion, done events, output, and exit order on completion.

Behaviour ported from xstate's packages/core/test/final.test.ts (xstate 5.32.5).
"""

from engine.core.statechart import assign, create_actor, create_machine, send_parent, spawn_child
from tests.statechart.tracking import track_entries


def _final_child(name="b"):
    return {"initial": "start", "states": {"start": {}, name: {"type": "final"}}}


# ---------------------------------------------------------------------------
# completion of the machine itself


def test_a_machine_whose_root_is_final_is_done_once_started():
    machine = create_machine({"type": "final"})
    actor = create_actor(machine).start()
    assert actor.get_snapshot().status == "done"


def test_root_final_output_mapper_receives_the_root_done_state_event():
    seen = []

    def output(event):
        seen.append(dict(event))

    machine = create_machine({"type": "final", "output": output})
    create_actor(machine, input=42).start()

    assert len(seen) == 1
    assert seen[0]["type"] == "xstate.done.state.(machine)"
    assert seen[0].get("output") is None


def test_parallel_state_raises_done_event_when_every_region_is_final():
    done_types = []
    machine = create_machine(
        {
            "id": "m",
            "initial": "foo",
            "states": {
                "foo": {
                    "type": "parallel",
                    "states": {
                        "first": {
                            "initial": "a",
                            "states": {"a": {"on": {"NEXT_1": "b"}}, "b": {"type": "final"}},
                        },
                        "second": {
                            "initial": "a",
                            "states": {"a": {"on": {"NEXT_2": "b"}}, "b": {"type": "final"}},
                        },
                    },
                    "onDone": {
                        "target": "bar",
                        "actions": lambda event: done_types.append(event["type"]),
                    },
                },
                "bar": {},
            },
        }
    )
    actor = create_actor(machine).start()
    actor.send({"type": "NEXT_1"})
    assert actor.get_snapshot().value == {"foo": {"first": "b", "second": "a"}}
    assert done_types == []
    actor.send({"type": "NEXT_2"})

    assert actor.get_snapshot().value == "bar"
    assert done_types == ["xstate.done.state.m.foo"]


def test_entry_of_the_final_child_runs_before_the_parents_done_handlers():
    order = []
    machine = create_machine(
        {
            "initial": "foo",
            "states": {
                "foo": {
                    "initial": "bar",
                    "onDone": {"actions": lambda: order.append("fooAction")},
                    "states": {
                        "bar": {
                            "initial": "baz",
                            "onDone": "barFinal",
                            "states": {
                                "baz": {
                                    "type": "final",
                                    "entry": lambda: order.append("bazAction"),
                                }
                            },
                        },
                        "barFinal": {
                            "type": "final",
                            "entry": lambda: order.append("barAction"),
                        },
                    },
                }
            },
        }
    )
    create_actor(machine).start()
    assert order == ["bazAction", "barAction", "fooAction"]


def test_output_of_a_nested_final_state_reaches_the_parents_on_done():
    at_completion = []
    machine = create_machine(
        {
            "initial": "secret",
            "context": {"revealed_secret": None},
            "states": {
                "secret": {
                    "initial": "wait",
                    "states": {
                        "wait": {"on": {"REQUEST_SECRET": "reveal"}},
                        "reveal": {"type": "final", "output": lambda: {"secret": "the secret"}},
                    },
                    "onDone": {
                        "target": "success",
                        "actions": assign(revealed_secret=lambda event: event["output"]["secret"]),
                    },
                },
                "success": {"type": "final"},
            },
        }
    )
    actor = create_actor(machine)
    actor.subscribe(complete=lambda: at_completion.append(actor.get_snapshot().context))
    actor.start()
    assert at_completion == []
    actor.send({"type": "REQUEST_SECRET"})

    assert at_completion == [{"revealed_secret": "the secret"}]


def test_root_output_is_computed_only_once_when_reaching_a_top_level_final_state():
    calls = []

    def output():
        calls.append(1)

    machine = create_machine(
        {
            "initial": "start",
            "states": {"start": {"on": {"FINISH": "end"}}, "end": {"type": "final"}},
            "output": output,
        }
    )
    actor = create_actor(machine).start()
    actor.send({"type": "FINISH", "value": 1})
    assert len(calls) == 1
    assert actor.get_snapshot().status == "done"


def test_output_mapper_receives_self():
    machine = create_machine(
        {
            "initial": "done",
            "states": {"done": {"type": "final"}},
            "output": lambda self: {"self_ref": self},
        }
    )
    actor = create_actor(machine).start()
    output = actor.get_snapshot().output
    assert output is not None
    assert callable(getattr(output["self_ref"], "send", None))


def test_final_state_output_sees_context_assigned_by_its_own_entry():
    outputs = []
    machine = create_machine(
        {
            "context": {"count": 0},
            "initial": "a",
            "states": {
                "a": {
                    "initial": "a1",
                    "states": {
                        "a1": {"on": {"NEXT": "a2"}},
                        "a2": {
                            "type": "final",
                            "entry": assign(count=1),
                            "output": lambda context: context["count"],
                        },
                    },
                    "onDone": {"actions": lambda event: outputs.append(event["output"])},
                }
            },
        }
    )
    actor = create_actor(machine).start()
    actor.send({"type": "NEXT"})
    assert outputs == [1]


# ---------------------------------------------------------------------------
# nested parallel completion


def _region(event_type):
    return {
        "initial": "start",
        "states": {"start": {"on": {event_type: "finish"}}, "finish": {"type": "final"}},
    }


def _nested_parallel_machine(beta):
    return create_machine(
        {
            "initial": "first",
            "states": {
                "first": {
                    "type": "parallel",
                    "states": {
                        "alpha": {
                            "type": "parallel",
                            "states": {
                                "one": _region("finish_one_alpha"),
                                "two": _region("finish_two_alpha"),
                            },
                        },
                        "beta": beta,
                    },
                    "onDone": "done",
                },
                "done": {"type": "final"},
            },
        }
    )


def test_parallel_parent_completes_when_its_parallel_children_all_complete():
    machine = _nested_parallel_machine(
        {
            "type": "parallel",
            "states": {
                "third": _region("finish_three_beta"),
                "fourth": _region("finish_four_beta"),
            },
        }
    )
    actor = create_actor(machine).start()
    for event_type in ["finish_one_alpha", "finish_two_alpha", "finish_three_beta"]:
        actor.send({"type": event_type})
        assert actor.get_snapshot().status == "active"
    actor.send({"type": "finish_four_beta"})
    assert actor.get_snapshot().status == "done"


_COMPOUND_BETA = {
    "initial": "three",
    "states": {"three": {"on": {"finish_beta": "finish"}}, "finish": {"type": "final"}},
}


def test_parallel_completes_when_compound_region_finishes_after_parallel_region():
    actor = create_actor(_nested_parallel_machine(_COMPOUND_BETA)).start()
    actor.send({"type": "finish_one_alpha"})
    actor.send({"type": "finish_two_alpha"})
    assert actor.get_snapshot().status == "active"
    actor.send({"type": "finish_beta"})
    assert actor.get_snapshot().status == "done"


def test_parallel_completes_when_parallel_region_finishes_after_compound_region():
    actor = create_actor(_nested_parallel_machine(_COMPOUND_BETA)).start()
    actor.send({"type": "finish_beta"})
    actor.send({"type": "finish_one_alpha"})
    assert actor.get_snapshot().status == "active"
    actor.send({"type": "finish_two_alpha"})
    assert actor.get_snapshot().status == "done"


def _immediately_final_parallel():
    return {
        "initial": "a",
        "states": {
            "a": {
                "type": "parallel",
                "onDone": "b",
                "states": {
                    "a1": {
                        "type": "parallel",
                        "states": {"a1a": {"type": "final"}, "a1b": {"type": "final"}},
                    },
                    "a2": {"initial": "a2a", "states": {"a2a": {"type": "final"}}},
                },
            },
            "b": {"type": "final"},
        },
    }


def test_parallel_final_at_start_leads_to_top_level_final_state():
    actor = create_actor(create_machine(_immediately_final_parallel())).start()
    assert actor.get_snapshot().status == "done"
    assert actor.get_snapshot().value == "b"


def test_parallel_final_at_start_leads_to_top_level_final_state_pure():
    snapshot, _ = create_machine(_immediately_final_parallel()).initial_transition()
    assert snapshot.status == "done"
    assert snapshot.value == "b"


def _root_done_events(config):
    seen = []

    def output(event):
        seen.append(dict(event))

    create_actor(create_machine({**config, "output": output})).start()
    return seen


def test_parallel_root_output_gets_root_done_event_for_a_direct_final_child():
    seen = _root_done_events({"type": "parallel", "states": {"a": {"type": "final"}}})
    assert [event["type"] for event in seen] == ["xstate.done.state.(machine)"]
    assert seen[0].get("output") is None


def test_parallel_root_output_gets_root_done_event_for_final_grandchild():
    seen = _root_done_events(
        {
            "type": "parallel",
            "states": {"a": {"initial": "b", "states": {"b": {"type": "final"}}}},
        }
    )
    assert [event["type"] for event in seen] == ["xstate.done.state.(machine)"]
    assert seen[0].get("output") is None


def test_parallel_root_output_gets_root_done_event_two_parallel_levels_deep():
    seen = _root_done_events(
        {
            "type": "parallel",
            "states": {
                "a": {
                    "type": "parallel",
                    "states": {"b": {"initial": "c", "states": {"c": {"type": "final"}}}},
                }
            },
        }
    )
    assert [event["type"] for event in seen] == ["xstate.done.state.(machine)"]
    assert seen[0].get("output") is None


def test_outer_parallel_on_done_gets_its_own_done_event_when_inner_parallel_completes():
    seen = []
    machine = create_machine(
        {
            "initial": "a",
            "states": {
                "a": {
                    "type": "parallel",
                    "states": {
                        "b": {
                            "type": "parallel",
                            "states": {"c": {"initial": "d", "states": {"d": {"type": "final"}}}},
                        }
                    },
                    "onDone": {"actions": lambda event: seen.append(dict(event))},
                }
            },
        }
    )
    create_actor(machine).start()
    assert [event["type"] for event in seen] == ["xstate.done.state.(machine).a"]
    assert seen[0].get("output") is None


def test_on_done_handlers_do_not_run_when_the_whole_machine_completes():
    calls = []

    def spy():
        calls.append(1)

    machine = create_machine(
        {
            "type": "parallel",
            "states": {
                "a": {
                    "type": "parallel",
                    "states": {
                        "b": {
                            "initial": "c",
                            "states": {"c": {"type": "final"}},
                            "onDone": {"actions": spy},
                        }
                    },
                    "onDone": {"actions": spy},
                }
            },
            "onDone": {"actions": spy},
        }
    )
    actor = create_actor(machine).start()
    assert actor.get_snapshot().status == "done"
    assert calls == []


def test_machine_stays_active_when_a_parallel_child_of_the_root_completes():
    machine = create_machine(
        {
            "initial": "a",
            "states": {
                "a": {
                    "type": "parallel",
                    "states": {"b": {"initial": "c", "states": {"c": {"type": "final"}}}},
                }
            },
        }
    )
    actor = create_actor(machine).start()
    assert actor.get_snapshot().status == "active"


def test_root_output_is_computed_once_when_several_regions_complete_together():
    calls = []

    def output():
        calls.append(1)

    machine = create_machine(
        {
            "type": "parallel",
            "states": {"a": {"type": "final"}, "b": {"type": "final"}},
            "output": output,
        }
    )
    actor = create_actor(machine).start()
    assert actor.get_snapshot().status == "done"
    assert len(calls) == 1


def test_parallel_on_done_runs_once_when_several_regions_complete_together():
    calls = []

    def spy():
        calls.append(1)

    machine = create_machine(
        {
            "initial": "a",
            "states": {
                "a": {
                    "type": "parallel",
                    "states": {"b": {"type": "final"}, "c": {"type": "final"}},
                    "onDone": {"actions": spy},
                }
            },
        }
    )
    create_actor(machine).start()
    assert len(calls) == 1


# ---------------------------------------------------------------------------
# exit order when the machine completes


def test_exits_in_reverse_document_order_on_completion():
    config, flush = track_entries(
        {
            "initial": "a",
            "states": {"a": {"on": {"EV": "b"}}, "b": {"type": "final"}},
        }
    )
    actor = create_actor(create_machine(config)).start()
    flush()
    actor.send({"type": "EV"})
    assert flush() == ["exit: a", "enter: b", "exit: b", "exit: __root__"]


def _two_region_final_config(a_event, b_event):
    return {
        "type": "parallel",
        "states": {
            "a": {
                "initial": "child_a1",
                "states": {
                    "child_a1": {"on": {a_event: "child_a2"}},
                    "child_a2": {"type": "final"},
                },
            },
            "b": {
                "initial": "child_b1",
                "states": {
                    "child_b1": {"on": {b_event: "child_b2"}},
                    "child_b2": {"type": "final"},
                },
            },
        },
    }


_PARALLEL_COMPLETION_EXITS = [
    "exit: b.child_b2",
    "exit: b",
    "exit: a.child_a2",
    "exit: a",
    "exit: __root__",
]


def test_parallel_exit_order_on_completion_after_later_region_moved_first():
    config, flush = track_entries(_two_region_final_config("EV2", "EV1"))
    actor = create_actor(create_machine(config)).start()
    actor.send({"type": "EV1"})
    flush()
    actor.send({"type": "EV2"})
    assert flush() == ["exit: a.child_a1", "enter: a.child_a2", *_PARALLEL_COMPLETION_EXITS]


def test_parallel_exit_order_on_completion_after_earlier_region_moved_first():
    config, flush = track_entries(_two_region_final_config("EV1", "EV2"))
    actor = create_actor(create_machine(config)).start()
    actor.send({"type": "EV2"})
    flush()
    actor.send({"type": "EV1"})
    assert flush() == ["exit: a.child_a1", "enter: a.child_a2", *_PARALLEL_COMPLETION_EXITS]


def test_parallel_exit_order_on_completion_when_all_regions_move_together():
    config, flush = track_entries(_two_region_final_config("EV", "EV"))
    actor = create_actor(create_machine(config)).start()
    flush()
    actor.send({"type": "EV"})
    assert flush() == [
        "exit: b.child_b1",
        "exit: a.child_a1",
        "enter: a.child_a2",
        "enter: b.child_b2",
        *_PARALLEL_COMPLETION_EXITS,
    ]


# ---------------------------------------------------------------------------
# partial completion of a parallel root


def test_parallel_root_not_done_while_a_compound_region_is_not_final():
    machine = create_machine(
        {
            "type": "parallel",
            "states": {
                "A": {"initial": "A1", "states": {"A1": {"type": "final"}}},
                "B": {"initial": "B1", "states": {"B1": {}, "B2": {"type": "final"}}},
            },
        }
    )
    actor = create_actor(machine).start()
    assert actor.get_snapshot().status == "active"


def test_parallel_root_not_done_when_only_a_direct_final_region_is_final():
    machine = create_machine(
        {
            "type": "parallel",
            "states": {
                "A": {"type": "final"},
                "B": {"initial": "B1", "states": {"B1": {}, "B2": {"type": "final"}}},
            },
        }
    )
    actor = create_actor(machine).start()
    assert actor.get_snapshot().status == "active"


def test_output_of_a_final_region_of_a_parallel_state_is_not_resolved():
    calls = []

    def output():
        calls.append(1)

    machine = create_machine(
        {
            "initial": "A",
            "states": {
                "A": {
                    "type": "parallel",
                    "states": {
                        "B": {"type": "final", "output": output},
                        "C": {"initial": "C1", "states": {"C1": {}}},
                    },
                }
            },
        }
    )
    create_actor(machine).start()
    assert calls == []


# ---------------------------------------------------------------------------
# child machines reaching their final state


def _parent_of(child):
    return create_machine(
        {
            "initial": "start",
            "states": {
                "start": {
                    "invoke": {"id": "child", "src": child, "onDone": "completed"},
                    "on": {"CHILD_CANCELED": "canceled"},
                },
                "canceled": {},
                "completed": {},
            },
        }
    )


def test_child_exit_runs_once_when_its_final_event_makes_the_parent_stop_it():
    calls = []

    def child_exit():
        calls.append(1)

    child = create_machine(
        {
            "initial": "start",
            "exit": child_exit,
            "states": {
                "start": {"on": {"CANCEL": "canceled"}},
                "canceled": {"type": "final", "entry": send_parent({"type": "CHILD_CANCELED"})},
            },
        }
    )
    actor = create_actor(_parent_of(child)).start()
    actor.get_snapshot().children["child"].send({"type": "CANCEL"})
    assert len(calls) == 1


def test_events_sent_from_final_entry_reach_parent_before_the_done_actor_event():
    child = create_machine(
        {
            "initial": "start",
            "states": {
                "start": {"on": {"CANCEL": "canceled"}},
                "canceled": {"type": "final", "entry": send_parent({"type": "CHILD_CANCELED"})},
            },
        }
    )
    actor = create_actor(_parent_of(child)).start()
    actor.get_snapshot().children["child"].send({"type": "CANCEL"})
    # the done.actor event would have led to "completed"
    assert actor.get_snapshot().value == "canceled"


def test_events_sent_from_root_exit_reach_parent_before_the_done_actor_event():
    child = create_machine(
        {
            "initial": "start",
            "states": {
                "start": {"on": {"CANCEL": "canceled"}},
                "canceled": {"type": "final"},
            },
            "exit": send_parent({"type": "CHILD_CANCELED"}),
        }
    )
    actor = create_actor(_parent_of(child)).start()
    actor.get_snapshot().children["child"].send({"type": "CANCEL"})
    assert actor.get_snapshot().value == "canceled"


# ---------------------------------------------------------------------------
# null outputs


def test_machine_can_complete_with_a_null_root_output():
    machine = create_machine(
        {
            "initial": "start",
            "states": {"start": {"on": {"NEXT": "end"}}, "end": {"type": "final"}},
            "output": None,
        }
    )
    actor = create_actor(machine).start()
    actor.send({"type": "NEXT"})
    assert actor.get_snapshot().status == "done"
    assert actor.get_snapshot().output is None


def test_machine_can_complete_with_a_null_output_taken_from_the_final_state():
    seen = []

    def output(event):
        seen.append(event["output"])
        return event["output"]

    machine = create_machine(
        {
            "initial": "start",
            "states": {
                "start": {"on": {"NEXT": "end"}},
                "end": {"type": "final", "output": None},
            },
            "output": output,
        }
    )
    actor = create_actor(machine).start()
    actor.send({"type": "NEXT"})
    assert actor.get_snapshot().status == "done"
    assert seen == [None]
    assert actor.get_snapshot().output is None


# A machine that finishes stops its children but, as in xstate, its done snapshot still lists them (a machine that
# is stopped from outside drops them).


def _finishing_with_children():
    kid = create_machine({})
    return create_machine(
        {
            "entry": spawn_child(kid, id="spawned"),
            "initial": "a",
            "states": {
                "a": {"invoke": {"id": "invoked", "src": kid}, "on": {"FINISH": "done"}},
                "done": {"type": "final"},
            },
        }
    )


def test_a_done_machine_keeps_its_stopped_children_listed():
    actor = create_actor(_finishing_with_children()).start()
    actor.send({"type": "FINISH"})

    snapshot = actor.get_snapshot()
    assert snapshot.status == "done"
    assert list(snapshot.children) == ["spawned"]
    assert snapshot.children["spawned"].get_snapshot().status == "stopped"


def test_a_done_pure_transition_keeps_the_children_and_asks_to_stop_them():
    machine = _finishing_with_children()
    snapshot, _ = machine.initial_transition()

    done, actions = machine.transition(snapshot, {"type": "FINISH"})

    assert done.status == "done"
    assert list(done.children) == ["spawned"]
    assert [a.params["actorRef"].id for a in actions if a.type == "xstate.stopChild"] == ["invoked", "spawned"]


def test_a_machine_stopped_from_outside_drops_its_children():
    actor = create_actor(_finishing_with_children()).start()
    actor.stop()
    assert actor.get_snapshot().children == {}
