"""Entry/exit action order, initial-transition actions and stopping behaviour.

Behaviour ported from xstate's packages/core/test/actions.test.ts (the
``entry/exit actions``, ``initial actions`` and ``actions on invalid
transition`` groups).
"""

from engine.core.statechart import (
    assign,
    create_actor,
    create_machine,
    send_parent,
    send_to,
)
from tests.statechart.helpers import started
from tests.statechart.tracking import instrumented, track_entries


def _nothing():
    return None


def tracked_named_machine(config, **implementations):
    """A machine whose states enter/exit *named* tracker actions.

    Used with the pure API: the returned ExecutableAction list then carries the
    tracker names in order, and ``tracker_types`` extracts them.
    """
    names = {}

    def named(text):
        names[text] = _nothing
        return text

    tracked = instrumented(config, lambda p: named(f"enter: {p}"), lambda p: named(f"exit: {p}"))
    actions = {**names, **implementations.pop("actions", {})}
    return create_machine(tracked, actions=actions, **implementations)


def tracker_types(actions):
    return [a.type for a in actions if a.type.startswith(("enter: ", "exit: "))]


# --------------------------------------------------------------------------
# "State.actions": the actions a transition yields, read from the pure API.
# --------------------------------------------------------------------------


class TestTransitionActionLists:
    def test_initial_state_entry_actions(self):
        machine = tracked_named_machine({"initial": "green", "states": {"green": {}}})
        _, actions = machine.initial_transition()
        assert tracker_types(actions) == ["enter: __root__", "enter: green"]

    def test_initial_state_entry_actions_deep(self):
        machine = tracked_named_machine(
            {
                "initial": "a",
                "states": {
                    "a": {
                        "initial": "a1",
                        "states": {"a1": {"on": {"NEXT": "a2"}}, "a2": {}},
                        "on": {"CHANGE": "b"},
                    },
                    "b": {},
                },
            }
        )
        _, actions = machine.initial_transition()
        assert tracker_types(actions) == ["enter: __root__", "enter: a", "enter: a.a1"]

    def test_initial_state_entry_actions_parallel(self):
        machine = tracked_named_machine(
            {
                "type": "parallel",
                "states": {
                    "a": {"initial": "a1", "states": {"a1": {}}},
                    "b": {"initial": "b1", "states": {"b1": {}}},
                },
            }
        )
        _, actions = machine.initial_transition()
        assert tracker_types(actions) == [
            "enter: __root__",
            "enter: a",
            "enter: a.a1",
            "enter: b",
            "enter: b.b1",
        ]

    def test_transition_exits_then_enters(self):
        machine = tracked_named_machine(
            {"initial": "green", "states": {"green": {"on": {"TIMER": "yellow"}}, "yellow": {}}}
        )
        snapshot, _ = machine.initial_transition()
        snapshot, actions = machine.transition(snapshot, {"type": "TIMER"})
        assert snapshot.value == "yellow"
        assert tracker_types(actions) == ["exit: green", "enter: yellow"]

    def test_deep_transition_enters_initial_child(self):
        machine = tracked_named_machine(
            {
                "initial": "green",
                "states": {
                    "green": {"on": {"TIMER": "yellow"}},
                    "yellow": {"initial": "speed_up", "states": {"speed_up": {}}},
                },
            }
        )
        snapshot, _ = machine.initial_transition()
        _, actions = machine.transition(snapshot, {"type": "TIMER"})
        assert tracker_types(actions) == ["exit: green", "enter: yellow", "enter: yellow.speed_up"]

    def test_nested_transition_leaves_parent_alone(self):
        machine = tracked_named_machine(
            {
                "initial": "green",
                "states": {
                    "green": {
                        "initial": "walk",
                        "states": {"walk": {"on": {"PED_COUNTDOWN": "wait"}}, "wait": {}},
                    }
                },
            }
        )
        snapshot, _ = machine.initial_transition()
        _, actions = machine.transition(snapshot, {"type": "PED_COUNTDOWN"})
        assert tracker_types(actions) == ["exit: green.walk", "enter: green.wait"]

    def test_unhandled_event_yields_no_actions_shallow(self):
        machine = tracked_named_machine({"initial": "green", "states": {"green": {}}})
        snapshot, _ = machine.initial_transition()
        after, actions = machine.transition(snapshot, {"type": "FAKE"})
        assert tracker_types(actions) == []
        assert after.value == "green"

    def test_unhandled_event_yields_no_actions_deep(self):
        machine = tracked_named_machine(
            {
                "initial": "green",
                "states": {"green": {"initial": "walk", "states": {"walk": {}, "wait": {}, "stop": {}}}},
            }
        )
        snapshot, _ = machine.initial_transition()
        after, actions = machine.transition(snapshot, {"type": "FAKE"})
        assert tracker_types(actions) == []
        assert after.value == {"green": "walk"}

    def test_reentering_self_transition_shallow(self):
        machine = tracked_named_machine(
            {
                "initial": "green",
                "states": {"green": {"on": {"RESTART": {"target": "green", "reenter": True}}}},
            }
        )
        snapshot, _ = machine.initial_transition()
        _, actions = machine.transition(snapshot, {"type": "RESTART"})
        assert tracker_types(actions) == ["exit: green", "enter: green"]

    def test_reentering_self_transition_deep(self):
        machine = tracked_named_machine(
            {
                "initial": "green",
                "states": {
                    "green": {
                        "on": {"RESTART": {"target": "green", "reenter": True}},
                        "initial": "walk",
                        "states": {"walk": {}, "wait": {}, "stop": {}},
                    }
                },
            }
        )
        snapshot, _ = machine.initial_transition()
        _, actions = machine.transition(snapshot, {"type": "RESTART"})
        assert tracker_types(actions) == [
            "exit: green.walk",
            "exit: green",
            "enter: green",
            "enter: green.walk",
        ]

    def test_nested_exits_run_child_before_parent(self):
        machine = tracked_named_machine(
            {
                "initial": "a",
                "states": {
                    "a": {"initial": "a1", "states": {"a1": {}}, "on": {"CHANGE": "b"}},
                    "b": {"initial": "b1", "states": {"b1": {}}},
                },
            }
        )
        snapshot, _ = machine.initial_transition()
        _, actions = machine.transition(snapshot, {"type": "CHANGE"})
        assert tracker_types(actions) == ["exit: a.a1", "exit: a", "enter: b", "enter: b.b1"]

    def test_same_parent_substates_skip_parent_actions(self):
        machine = tracked_named_machine(
            {
                "initial": "a",
                "states": {"a": {"initial": "a1", "states": {"a1": {"on": {"NEXT": "a2"}}, "a2": {}}}},
            }
        )
        snapshot, _ = machine.initial_transition()
        _, actions = machine.transition(snapshot, {"type": "NEXT"})
        assert tracker_types(actions) == ["exit: a.a1", "enter: a.a2"]

    def test_leaving_parallel_state_exits_regions_in_reverse_document_order(self):
        machine = tracked_named_machine(
            {
                "initial": "B",
                "states": {
                    "A": {"on": {"to-B": "B"}},
                    "B": {
                        "type": "parallel",
                        "on": {"to-A": "A"},
                        "states": {
                            "C": {"initial": "C1", "states": {"C1": {}}},
                            "D": {"initial": "D1", "states": {"D1": {}}},
                        },
                    },
                },
            }
        )
        snapshot, _ = machine.initial_transition()
        _, actions = machine.transition(snapshot, {"type": "to-A"})
        assert tracker_types(actions) == [
            "exit: B.D.D1",
            "exit: B.D",
            "exit: B.C.C1",
            "exit: B.C",
            "exit: B",
            "enter: A",
        ]

    def test_targeting_an_ancestor_by_id_reenters_it(self):
        machine = tracked_named_machine(
            {
                "initial": "loaded",
                "states": {
                    "loaded": {
                        "id": "loaded",
                        "initial": "idle",
                        "states": {"idle": {"on": {"UPDATE": "#loaded"}}},
                    }
                },
            }
        )
        snapshot, _ = machine.initial_transition()
        _, actions = machine.transition(snapshot, {"type": "UPDATE"})
        assert tracker_types(actions) == [
            "exit: loaded.idle",
            "exit: loaded",
            "enter: loaded",
            "enter: loaded.idle",
        ]

    def test_sparse_relative_transition_skips_parent(self):
        machine = tracked_named_machine(
            {
                "initial": "ping",
                "states": {
                    "ping": {
                        "initial": "foo",
                        "states": {"foo": {"on": {"TACK": "bar"}}, "bar": {}},
                    }
                },
            }
        )
        snapshot, _ = machine.initial_transition()
        _, actions = machine.transition(snapshot, {"type": "TACK"})
        assert tracker_types(actions) == ["exit: ping.foo", "enter: ping.bar"]

    def test_sparse_absolute_transition_skips_parent(self):
        machine = tracked_named_machine(
            {
                "id": "root",
                "initial": "ping",
                "states": {
                    "ping": {
                        "initial": "foo",
                        "states": {"foo": {"on": {"ABSOLUTE_TACK": "#root.ping.bar"}}, "bar": {}},
                    },
                    "pong": {},
                },
            }
        )
        snapshot, _ = machine.initial_transition()
        _, actions = machine.transition(snapshot, {"type": "ABSOLUTE_TACK"})
        assert tracker_types(actions) == ["exit: ping.foo", "enter: ping.bar"]


class TestActionOrderInRunningActors:
    def test_parallel_machine_orders_exits_transitions_entries(self):
        seen = []

        def rec(text):
            return lambda: seen.append(text)

        machine = create_machine(
            {
                "type": "parallel",
                "states": {
                    "a": {
                        "initial": "a1",
                        "states": {
                            "a1": {
                                "on": {
                                    "CHANGE": {
                                        "target": "a2",
                                        "actions": [rec("do_a2"), rec("another_do_a2")],
                                    }
                                },
                                "entry": rec("enter_a1"),
                                "exit": rec("exit_a1"),
                            },
                            "a2": {"entry": rec("enter_a2"), "exit": rec("exit_a2")},
                        },
                        "entry": rec("enter_a"),
                        "exit": rec("exit_a"),
                    },
                    "b": {
                        "initial": "b1",
                        "states": {
                            "b1": {
                                "on": {"CHANGE": {"target": "b2", "actions": rec("do_b2")}},
                                "entry": rec("enter_b1"),
                                "exit": rec("exit_b1"),
                            },
                            "b2": {"entry": rec("enter_b2"), "exit": rec("exit_b2")},
                        },
                        "entry": rec("enter_b"),
                        "exit": rec("exit_b"),
                    },
                },
            }
        )
        actor = started(machine)
        assert seen == ["enter_a", "enter_a1", "enter_b", "enter_b1"]
        seen.clear()

        actor.send({"type": "CHANGE"})

        # exits run in reverse document order, transition actions and entries in document order
        assert seen == ["exit_b1", "exit_a1", "do_a2", "another_do_a2", "do_b2", "enter_a2", "enter_b2"]

    def test_function_actions_run_on_entry_exit_and_transition(self):
        calls = {"entry": 0, "exit": 0, "transition": 0}

        def on_entry():
            calls["entry"] += 1

        def on_exit():
            calls["exit"] += 1

        def on_transition():
            calls["transition"] += 1

        config, flush = track_entries(
            {
                "initial": "a",
                "states": {
                    "a": {
                        "initial": "a1",
                        "states": {
                            "a1": {"on": {"NEXT_FN": "a3"}},
                            "a2": {},
                            "a3": {
                                "on": {"NEXT": {"target": "a2", "actions": [on_transition]}},
                                "entry": on_entry,
                                "exit": on_exit,
                            },
                        },
                    }
                },
            }
        )
        actor = started(create_machine(config))
        flush()

        actor.send({"type": "NEXT_FN"})
        assert flush() == ["exit: a.a1", "enter: a.a3"]
        assert calls == {"entry": 1, "exit": 0, "transition": 0}

        actor.send({"type": "NEXT"})
        assert flush() == ["exit: a.a3", "enter: a.a2"]
        assert calls == {"entry": 1, "exit": 1, "transition": 1}

    def test_registered_action_named_like_builtin_does_not_replace_assign(self):
        spy_calls = []
        machine = create_machine(
            {"context": {"assigned": False}, "on": {"EV": {"actions": assign({"assigned": True})}}},
            actions={"xstate.assign": lambda: spy_calls.append(1)},
        )
        actor = started(machine)
        actor.send({"type": "EV"})
        assert spy_calls == []
        assert actor.snapshot.context["assigned"] is True

    def test_registered_action_does_not_replace_inline_function_of_same_name(self):
        registered_calls = []
        inline_calls = []

        def my_fn():
            inline_calls.append(1)

        machine = create_machine(
            {"on": {"EV": {"actions": my_fn}}},
            actions={"my_fn": lambda: registered_calls.append(1)},
        )
        actor = started(machine)
        actor.send({"type": "EV"})
        assert registered_calls == []
        assert inline_calls == [1]

    def test_root_entry_and_exit_run_on_root_reentering_transition(self):
        calls = []
        machine = create_machine(
            {
                "id": "root",
                "entry": lambda: calls.append("entry"),
                "exit": lambda: calls.append("exit"),
                "on": {"EVENT": {"target": "#two", "reenter": True}},
                "initial": "one",
                "states": {"one": {}, "two": {"id": "two"}},
            }
        )
        actor = started(machine)
        assert calls == ["entry"]
        calls.clear()

        actor.send({"type": "EVENT"})

        assert calls == ["exit", "entry"]
        assert actor.snapshot.value == "two"


# --------------------------------------------------------------------------
# "entry/exit actions": the same questions answered by a running actor.
# --------------------------------------------------------------------------


def _run_tracked(config, *events):
    """Start an actor on a tracked copy of config, send the setup events, flush."""
    tracked, flush = track_entries(config)
    actor = started(create_machine(tracked))
    for event in events:
        actor.send({"type": event})
    flush()
    return actor, flush


class TestEntryExitWithActor:
    def test_initial_state_entries(self):
        tracked, flush = track_entries({"initial": "green", "states": {"green": {}}})
        started(create_machine(tracked))
        assert flush() == ["enter: __root__", "enter: green"]

    def test_entries_and_exits_of_a_transition(self):
        actor, flush = _run_tracked(
            {"initial": "green", "states": {"green": {"on": {"TIMER": "yellow"}}, "yellow": {}}}
        )
        actor.send({"type": "TIMER"})
        assert flush() == ["exit: green", "enter: yellow"]

    def test_entries_and_exits_of_a_deep_transition(self):
        actor, flush = _run_tracked(
            {
                "initial": "green",
                "states": {
                    "green": {"on": {"TIMER": "yellow"}},
                    "yellow": {"initial": "speed_up", "states": {"speed_up": {}}},
                },
            }
        )
        actor.send({"type": "TIMER"})
        assert flush() == ["exit: green", "enter: yellow", "enter: yellow.speed_up"]

    def test_entries_and_exits_of_a_nested_transition(self):
        actor, flush = _run_tracked(
            {
                "initial": "green",
                "states": {
                    "green": {
                        "initial": "walk",
                        "states": {"walk": {"on": {"PED_COUNTDOWN": "wait"}}, "wait": {}},
                    }
                },
            }
        )
        actor.send({"type": "PED_COUNTDOWN"})
        assert flush() == ["exit: green.walk", "enter: green.wait"]

    def test_unhandled_event_runs_nothing_shallow(self):
        actor, flush = _run_tracked({"initial": "green", "states": {"green": {}}})
        actor.send({"type": "FAKE"})
        assert flush() == []
        assert actor.snapshot.value == "green"

    def test_unhandled_event_runs_nothing_deep(self):
        actor, flush = _run_tracked(
            {"initial": "green", "states": {"green": {"initial": "walk", "states": {"walk": {}}}}}
        )
        actor.send({"type": "FAKE"})
        assert flush() == []
        assert actor.snapshot.value == {"green": "walk"}

    def test_reentering_self_transition_shallow(self):
        actor, flush = _run_tracked(
            {
                "initial": "green",
                "states": {"green": {"on": {"RESTART": {"target": "green", "reenter": True}}}},
            }
        )
        actor.send({"type": "RESTART"})
        assert flush() == ["exit: green", "enter: green"]

    def test_reentering_self_transition_deep(self):
        actor, flush = _run_tracked(
            {
                "initial": "green",
                "states": {
                    "green": {
                        "on": {"RESTART": {"target": "green", "reenter": True}},
                        "initial": "walk",
                        "states": {"walk": {}},
                    }
                },
            }
        )
        actor.send({"type": "RESTART"})
        assert flush() == ["exit: green.walk", "exit: green", "enter: green", "enter: green.walk"]

    def test_target_neither_ancestor_nor_descendant(self):
        actor, flush = _run_tracked(
            {
                "initial": "A",
                "states": {
                    "A": {
                        "initial": "A1",
                        "states": {
                            "A1": {"on": {"NEXT": "#sibling_descendant"}},
                            "A2": {
                                "initial": "A2_child",
                                "states": {"A2_child": {"id": "sibling_descendant"}},
                            },
                        },
                    }
                },
            }
        )
        actor.send({"type": "NEXT"})
        assert flush() == ["exit: A.A1", "enter: A.A2", "enter: A.A2.A2_child"]

    def test_target_is_ancestor_of_current(self):
        actor, flush = _run_tracked(
            {
                "initial": "A",
                "states": {
                    "A": {
                        "id": "ancestor",
                        "initial": "A1",
                        "states": {
                            "A1": {"on": {"NEXT": "A2"}},
                            "A2": {
                                "initial": "A2_child",
                                "states": {"A2_child": {"on": {"NEXT": "#ancestor"}}},
                            },
                        },
                    }
                },
            },
            "NEXT",
        )
        actor.send({"type": "NEXT"})
        assert flush() == [
            "exit: A.A2.A2_child",
            "exit: A.A2",
            "exit: A",
            "enter: A",
            "enter: A.A1",
        ]

    def test_reentering_transition_to_own_descendant_reenters_source(self):
        actor, flush = _run_tracked(
            {
                "initial": "A",
                "states": {
                    "A": {
                        "initial": "A1",
                        "on": {"NEXT": {"reenter": True, "target": ".A2"}},
                        "states": {
                            "A1": {},
                            "A2": {"initial": "A2a", "states": {"A2a": {}}},
                        },
                    }
                },
            }
        )
        actor.send({"type": "NEXT"})
        assert flush() == [
            "exit: A.A1",
            "exit: A",
            "enter: A",
            "enter: A.A2",
            "enter: A.A2.A2a",
        ]

    def test_default_self_transition_exits_deep_descendants(self):
        actor, flush = _run_tracked(
            {
                "initial": "a",
                "states": {
                    "a": {
                        "on": {"EV": "a"},
                        "initial": "a1",
                        "states": {"a1": {"initial": "a11", "states": {"a11": {}}}},
                    }
                },
            }
        )
        actor.send({"type": "EV"})
        assert flush() == ["exit: a.a1.a11", "exit: a.a1", "enter: a.a1", "enter: a.a1.a11"]

    def test_reentering_self_transition_exits_deep_descendants_and_self(self):
        actor, flush = _run_tracked(
            {
                "initial": "a",
                "states": {
                    "a": {
                        "on": {"EV": {"target": "a", "reenter": True}},
                        "initial": "a1",
                        "states": {"a1": {"initial": "a11", "states": {"a11": {}}}},
                    }
                },
            }
        )
        actor.send({"type": "EV"})
        assert flush() == [
            "exit: a.a1.a11",
            "exit: a.a1",
            "exit: a",
            "enter: a",
            "enter: a.a1",
            "enter: a.a1.a11",
        ]

    def test_leaf_default_self_transition_does_not_reenter(self):
        actor, flush = _run_tracked(
            {"initial": "a", "states": {"a": {"initial": "a1", "states": {"a1": {"on": {"EV": "a1"}}}}}}
        )
        actor.send({"type": "EV"})
        assert flush() == []

    def test_leaf_reentering_self_transition_reenters(self):
        actor, flush = _run_tracked(
            {
                "initial": "a",
                "states": {
                    "a": {
                        "initial": "a1",
                        "states": {"a1": {"on": {"EV": {"target": "a1", "reenter": True}}}},
                    }
                },
            }
        )
        actor.send({"type": "EV"})
        assert flush() == ["exit: a.a1", "enter: a.a1"]

    def test_ancestor_target_picks_initial_child_not_former_state(self):
        actor, flush = _run_tracked(
            {
                "initial": "a",
                "states": {
                    "a": {
                        "id": "parent",
                        "initial": "a1",
                        "states": {"a1": {"on": {"EV": "a2"}}, "a2": {"on": {"EV": "#parent"}}},
                    }
                },
            },
            "EV",
        )
        actor.send({"type": "EV"})
        assert flush() == ["exit: a.a2", "exit: a", "enter: a", "enter: a.a1"]

    def test_ancestor_target_picks_latter_initial_child(self):
        actor, flush = _run_tracked(
            {
                "initial": "a",
                "states": {
                    "a": {
                        "id": "parent",
                        "initial": "a2",
                        "states": {"a1": {"on": {"EV": "#parent"}}, "a2": {"on": {"EV": "a1"}}},
                    }
                },
            },
            "EV",
        )
        actor.send({"type": "EV"})
        assert flush() == ["exit: a.a1", "exit: a", "enter: a", "enter: a.a2"]


class TestParallelEntryExit:
    def test_entering_parallel_state_runs_its_entry(self):
        actor, flush = _run_tracked(
            {
                "initial": "start",
                "states": {
                    "start": {"on": {"ENTER_PARALLEL": "p1"}},
                    "p1": {
                        "type": "parallel",
                        "states": {"nested": {"initial": "inner", "states": {"inner": {}}}},
                    },
                },
            }
        )
        actor.send({"type": "ENTER_PARALLEL"})
        assert flush() == ["exit: start", "enter: p1", "enter: p1.nested", "enter: p1.nested.inner"]

    def test_reentering_parallel_state_targeting_one_region_reenters_all(self):
        actor, flush = _run_tracked(
            {
                "initial": "ready",
                "states": {
                    "ready": {
                        "type": "parallel",
                        "on": {"FOO": {"target": "#cameraOff", "reenter": True}},
                        "states": {
                            "devicesInfo": {},
                            "camera": {
                                "initial": "on",
                                "states": {"on": {}, "off": {"id": "cameraOff"}},
                            },
                        },
                    }
                },
            }
        )
        actor.send({"type": "FOO"})
        assert flush() == [
            "exit: ready.camera.on",
            "exit: ready.camera",
            "exit: ready.devicesInfo",
            "exit: ready",
            "enter: ready",
            "enter: ready.devicesInfo",
            "enter: ready.camera",
            "enter: ready.camera.off",
        ]
        assert actor.snapshot.value == {"ready": {"devicesInfo": {}, "camera": "off"}}

    def test_reentering_parallel_state_pure(self):
        # the same chart again, this time through the pure API's action list
        machine = tracked_named_machine(
            {
                "initial": "ready",
                "states": {
                    "ready": {
                        "type": "parallel",
                        "on": {"FOO": {"target": "#cameraOff", "reenter": True}},
                        "states": {
                            "devicesInfo": {},
                            "camera": {
                                "initial": "on",
                                "states": {"on": {}, "off": {"id": "cameraOff"}},
                            },
                        },
                    }
                },
            }
        )
        snapshot, _ = machine.initial_transition()
        _, actions = machine.transition(snapshot, {"type": "FOO"})
        assert tracker_types(actions) == [
            "exit: ready.camera.on",
            "exit: ready.camera",
            "exit: ready.devicesInfo",
            "exit: ready",
            "enter: ready",
            "enter: ready.devicesInfo",
            "enter: ready.camera",
            "enter: ready.camera.off",
        ]


class TestTargetlessTransitions:
    def test_parent_targetless_transition_does_not_exit_child(self):
        ran = []
        actor, flush = _run_tracked(
            {
                "initial": "one",
                "on": {"WHATEVER": {"actions": lambda: ran.append(1)}},
                "states": {"one": {}},
            }
        )
        actor.send({"type": "WHATEVER"})
        assert flush() == []
        assert ran == [1]

    def test_targetless_delayed_transition_does_not_exit(self):
        from engine.core.statechart import SimulatedClock

        ran = []
        clock = SimulatedClock()
        tracked, flush = track_entries(
            {
                "initial": "one",
                "states": {"one": {"after": {10: {"actions": lambda: ran.append(1)}}}},
            }
        )
        actor = started(create_machine(tracked), clock=clock)
        flush()

        clock.increment(50)

        assert flush() == []
        assert ran == [1]
        assert actor.snapshot.value == "one"


class TestFinalStateExit:
    def test_invoked_machine_runs_exit_actions_when_it_finishes(self):
        flags = {"exit": False, "child_exit": False, "completed_with": None}
        child = create_machine(
            {
                "exit": lambda: flags.__setitem__("exit", True),
                "initial": "a",
                "states": {"a": {"type": "final", "exit": lambda: flags.__setitem__("child_exit", True)}},
            }
        )
        parent = create_machine(
            {
                "initial": "active",
                "states": {
                    "active": {"invoke": {"src": child, "onDone": "finished"}},
                    "finished": {"type": "final"},
                },
            }
        )
        actor = create_actor(parent)

        def on_complete():
            flags["completed_with"] = (flags["exit"], flags["child_exit"])

        actor.subscribe(complete=on_complete)
        actor.start()

        assert actor.snapshot.status == "done"
        assert flags["completed_with"] == (True, True)


class TestWhenStopped:
    def test_stop_does_not_run_exit_actions(self):
        calls = []
        machine = create_machine(
            {
                "exit": lambda: calls.append("root"),
                "initial": "a",
                "states": {"a": {"exit": lambda: calls.append("a")}},
            }
        )
        actor = started(machine)
        actor.stop()
        assert calls == []
        assert actor.snapshot.status == "stopped"

    def test_root_exit_on_reaching_final_gets_last_event(self):
        received = []
        machine = create_machine(
            {
                "initial": "a",
                "states": {"a": {"on": {"NEXT": "b"}}, "b": {"type": "final"}},
                "exit": lambda event: received.append(event),
            }
        )
        actor = started(machine)
        actor.send({"type": "NEXT"})
        assert received == [{"type": "NEXT"}]
        assert actor.snapshot.status == "done"

    def test_stopping_parent_whose_child_sends_from_exit_does_not_raise(self):
        child = create_machine(
            {"id": "child", "initial": "idle", "states": {"idle": {"exit": send_parent({"type": "EXIT"})}}}
        )
        got = []
        parent = create_machine(
            {"id": "parent", "invoke": {"src": child}, "on": {"EXIT": {"actions": lambda: got.append(1)}}}
        )
        actor = started(parent)
        actor.stop()  # must not raise
        assert actor.snapshot.status == "stopped"
        assert got == []

    def test_done_child_exit_events_reach_parent(self):
        received = []
        child = create_machine(
            {
                "id": "child",
                "initial": "active",
                "states": {"active": {"on": {"FINISH": "done"}}, "done": {"type": "final"}},
                "exit": send_parent({"type": "CHILD_DONE"}),
            }
        )
        parent = create_machine(
            {
                "id": "parent",
                "context": lambda spawn: {"child": spawn(child)},
                "on": {
                    "FINISH_CHILD": {"actions": send_to(lambda context: context["child"], {"type": "FINISH"})},
                    "CHILD_DONE": {"actions": lambda: received.append(True)},
                },
            }
        )
        actor = started(parent)
        actor.send({"type": "FINISH_CHILD"})
        assert received == [True]

    def test_stopped_child_exit_events_do_not_reach_grandchild(self):
        received = []
        grandchild = create_machine({"id": "grandchild", "on": {"STOPPED": {"actions": lambda: received.append(1)}}})
        child = create_machine(
            {
                "id": "child",
                "invoke": {"id": "myChild", "src": grandchild},
                "exit": send_to("myChild", {"type": "STOPPED"}),
            }
        )
        parent = create_machine(
            {
                "id": "parent",
                "initial": "a",
                "states": {"a": {"invoke": {"src": child}, "on": {"NEXT": "b"}}, "b": {}},
            }
        )
        actor = started(parent)
        actor.send({"type": "NEXT"})
        assert actor.snapshot.value == "b"
        assert received == []

    def test_done_child_exit_events_reach_grandchild(self):
        received = []
        grandchild = create_machine({"id": "grandchild", "on": {"STOPPED": {"actions": lambda: received.append(1)}}})
        child = create_machine(
            {
                "id": "child",
                "initial": "a",
                "invoke": {"id": "myChild", "src": grandchild},
                "states": {"a": {"on": {"FINISH": "b"}}, "b": {"type": "final"}},
                "exit": send_to("myChild", {"type": "STOPPED"}),
            }
        )
        parent = create_machine(
            {
                "id": "parent",
                "invoke": {"id": "myChild", "src": child},
                "on": {"NEXT": {"actions": send_to("myChild", {"type": "FINISH"})}},
            }
        )
        actor = started(parent)
        actor.send({"type": "NEXT"})
        assert received == [1]

    def test_actors_spawned_in_exit_on_stop_are_not_started(self):
        grandchild_entries = []
        grandchild = create_machine({"id": "grandchild", "entry": lambda: grandchild_entries.append(1)})
        parent = create_machine(
            {
                "id": "parent",
                "context": {},
                "exit": assign({"actor_ref": lambda spawn: spawn(grandchild)}),
            }
        )
        actor = started(parent)
        actor.stop()
        assert grandchild_entries == []
        assert "actor_ref" not in actor.snapshot.context

    def test_stop_does_not_run_referenced_exit_action(self):
        calls = []
        parent = create_machine(
            {"id": "parent", "context": {}, "exit": "referencedAction"},
            actions={"referencedAction": lambda: calls.append(1)},
        )
        actor = started(parent)
        actor.stop()
        assert calls == []

    def test_stop_does_not_run_builtin_exit_actions(self):
        machine = create_machine(
            {
                "context": {"executed_assigns": []},
                "exit": [
                    "referencedAction",
                    assign({"executed_assigns": lambda context: [*context["executed_assigns"], "inline"]}),
                ],
            },
            actions={
                "referencedAction": assign(
                    {"executed_assigns": lambda context: [*context["executed_assigns"], "referenced"]}
                )
            },
        )
        actor = started(machine)
        actor.stop()
        assert actor.snapshot.context["executed_assigns"] == []

    def test_stop_inside_an_action_drops_events_queued_by_it(self):
        late = []

        def kick_off():
            service.send({"type": "SOME_EVENT"})
            service.send({"type": "SOME_EVENT"})
            service.stop()

        machine = create_machine(
            {
                "on": {
                    "INITIALIZE_SYNC_SEQUENCE": {"actions": kick_off},
                    "SOME_EVENT": {"actions": lambda: late.append(1)},
                }
            }
        )
        service = started(machine)
        service.send({"type": "INITIALIZE_SYNC_SEQUENCE"})
        assert late == []
        assert service.snapshot.status == "stopped"

    def test_stop_mid_microstep_does_not_run_exit_of_new_state(self):
        exits = []

        def stop_now():
            service.stop()

        machine = create_machine(
            {
                "initial": "foo",
                "states": {
                    "foo": {
                        "exit": lambda: exits.append("foo action"),
                        "on": {
                            "INITIALIZE_SYNC_SEQUENCE": {
                                "target": "bar",
                                "actions": [stop_now, lambda: None],
                            }
                        },
                    },
                    "bar": {"exit": lambda: exits.append("bar action")},
                },
            }
        )
        service = started(machine)
        service.send({"type": "INITIALIZE_SYNC_SEQUENCE"})
        assert exits == ["foo action"]

    def test_stop_mid_microstep_still_finishes_that_microsteps_actions(self):
        executed = []

        def stop_now():
            service.stop()

        machine = create_machine(
            {
                "initial": "foo",
                "states": {
                    "foo": {
                        "exit": lambda: executed.append("foo exit action"),
                        "on": {
                            "INITIALIZE_SYNC_SEQUENCE": {
                                "target": "bar",
                                "actions": [stop_now, lambda: executed.append("foo transition action")],
                            }
                        },
                    },
                    "bar": {"exit": lambda: executed.append("bar exit action")},
                },
            }
        )
        service = started(machine)
        service.send({"type": "INITIALIZE_SYNC_SEQUENCE"})
        assert executed == ["foo exit action", "foo transition action"]


# --------------------------------------------------------------------------
# "initial actions": actions on an `initial` transition object.
# --------------------------------------------------------------------------


class TestInitialActions:
    def test_root_initial_transition_actions_run_before_entry(self):
        seen = []
        machine = create_machine(
            {
                "initial": {"target": "a", "actions": lambda: seen.append("initialA")},
                "states": {"a": {"entry": lambda: seen.append("entryA")}},
            }
        )
        actor = started(machine)
        assert seen == ["initialA", "entryA"]
        assert actor.snapshot.value == "a"

    def test_nested_initial_transition_actions_run_between_entries(self):
        seen = []
        machine = create_machine(
            {
                "initial": "a",
                "states": {
                    "a": {"on": {"NEXT": "b"}},
                    "b": {
                        "entry": lambda: seen.append("entryB"),
                        "initial": {"target": "foo", "actions": lambda: seen.append("initialFoo")},
                        "states": {"foo": {"entry": lambda: seen.append("entryFoo")}},
                    },
                },
            }
        )
        actor = started(machine)
        actor.send({"type": "NEXT"})
        assert seen == ["entryB", "initialFoo", "entryFoo"]
        assert actor.snapshot.value == {"b": "foo"}

    def test_initial_transition_actions_run_once_per_explicit_entry(self):
        seen = []
        machine = create_machine(
            {
                "initial": "a",
                "states": {
                    "a": {"on": {"NEXT": "b"}},
                    "b": {
                        "initial": {"target": "b_child", "actions": lambda: seen.append("initial in b")},
                        "states": {
                            "b_child": {
                                "initial": {
                                    "target": "b_granchild",
                                    "actions": lambda: seen.append("initial in b_child"),
                                },
                                "states": {"b_granchild": {}},
                            }
                        },
                    },
                },
            }
        )
        actor = started(machine)
        actor.send({"type": "NEXT"})
        assert seen == ["initial in b", "initial in b_child"]

    def test_all_initial_transitions_to_initial_value_run(self):
        seen = []
        machine = create_machine(
            {
                "initial": {"target": "a", "actions": lambda: seen.append("root")},
                "states": {
                    "a": {
                        "initial": {"target": "a1", "actions": lambda: seen.append("inner")},
                        "states": {"a1": {}},
                    }
                },
            }
        )
        started(machine)
        assert seen == ["root", "inner"]

    def test_root_reentering_self_transition_runs_root_initial_actions(self):
        seen = []
        machine = create_machine(
            {
                "id": "root",
                "initial": {"target": "a", "actions": lambda: seen.append(1)},
                "states": {"a": {"on": {"NEXT": "b"}}, "b": {}},
                "on": {"REENTER": {"target": "#root", "reenter": True}},
            }
        )
        actor = started(machine)
        actor.send({"type": "NEXT"})
        seen.clear()

        actor.send({"type": "REENTER"})

        assert seen == [1]
        assert actor.snapshot.value == "a"


class TestActionsOnInvalidTransition:
    def test_unhandled_event_does_not_rerun_previous_actions(self):
        calls = []
        machine = create_machine(
            {
                "initial": "idle",
                "states": {
                    "idle": {"on": {"STOP": {"target": "stop", "actions": [lambda: calls.append(1)]}}},
                    "stop": {},
                },
            }
        )
        actor = started(machine)
        actor.send({"type": "STOP"})
        assert len(calls) == 1

        actor.send({"type": "INVALID"})
        assert len(calls) == 1
