"""Eventless (`always`) transitions, ported from xstate's `transient.test.ts`.

Candidate selection order, action ordering across a macrostep, interplay with raised events and
`state_in`, the event seen by eventless guards/actions, and loop protection.
"""

from engine.core.statechart import assign, create_actor, create_machine, raise_, state_in
from tests.statechart.helpers import started


def _greeting_machine():
    return create_machine(
        {
            "id": "greeting",
            "initial": "pending",
            "context": {"hour": 10},
            "states": {
                "pending": {
                    "always": [
                        {"target": "morning", "guard": lambda context: context["hour"] < 12},
                        {"target": "afternoon", "guard": lambda context: context["hour"] < 18},
                        {"target": "evening"},
                    ]
                },
                "morning": {},
                "afternoon": {},
                "evening": {},
            },
            "on": {
                "CHANGE": {"actions": assign({"hour": 20})},
                "RECHECK": "#greeting",
            },
        }
    )


def _g_to_e_machine(data, candidates):
    """G --UPDATE_BUTTON_CLICKED--> E, and E chooses between D and F without an event."""
    return create_machine(
        {
            "context": {"data": data},
            "initial": "G",
            "states": {
                "G": {"on": {"UPDATE_BUTTON_CLICKED": "E"}},
                "E": {"always": candidates},
                "D": {},
                "F": {},
            },
        }
    )


class TestTransientStates:
    def test_first_matching_candidate_wins_over_an_unguarded_one(self):
        machine = _g_to_e_machine(
            False, [{"target": "D", "guard": lambda context: not context["data"]}, {"target": "F"}]
        )
        actor = started(machine)
        actor.send({"type": "UPDATE_BUTTON_CLICKED"})
        assert actor.snapshot.value == "D"

    def test_first_matching_candidate_wins_over_a_later_true_guard(self):
        machine = _g_to_e_machine(
            False,
            [{"target": "D", "guard": lambda context: not context["data"]}, {"target": "F", "guard": lambda: True}],
        )
        actor = started(machine)
        actor.send({"type": "UPDATE_BUTTON_CLICKED"})
        assert actor.snapshot.value == "D"

    def test_unguarded_last_candidate_is_the_fallback(self):
        machine = _g_to_e_machine(
            True, [{"target": "D", "guard": lambda context: not context["data"]}, {"target": "F"}]
        )
        actor = started(machine)
        actor.send({"type": "UPDATE_BUTTON_CLICKED"})
        assert actor.snapshot.value == "F"

    def test_actions_of_the_whole_macrostep_run_in_order(self):
        actual = []
        machine = create_machine(
            {
                "initial": "A",
                "states": {
                    "A": {
                        "exit": lambda: actual.append("exit_A"),
                        "on": {"TIMER": {"target": "T", "actions": lambda: actual.append("timer")}},
                    },
                    "T": {"always": [{"target": "B"}]},
                    "B": {"entry": lambda: actual.append("enter_B")},
                },
            }
        )
        actor = started(machine)
        actor.send({"type": "TIMER"})
        assert actual == ["exit_A", "timer", "enter_B"]

    def test_raised_events_are_processed_one_after_the_other(self):
        machine = create_machine(
            {
                "type": "parallel",
                "states": {
                    "A": {
                        "initial": "A1",
                        "states": {"A1": {"on": {"E": "A2"}}, "A2": {"entry": raise_({"type": "INT1"})}},
                    },
                    "B": {
                        "initial": "B1",
                        "states": {"B1": {"on": {"E": "B2"}}, "B2": {"entry": raise_({"type": "INT2"})}},
                    },
                    "C": {
                        "initial": "C1",
                        "states": {
                            "C1": {"on": {"INT1": "C2", "INT2": "C3"}},
                            "C2": {"on": {"INT2": "C4"}},
                            "C3": {"on": {"INT1": "C4"}},
                            "C4": {},
                        },
                    },
                },
            }
        )
        actor = started(machine)
        actor.send({"type": "E"})
        assert actor.snapshot.value == {"A": "A2", "B": "B2", "C": "C4"}

    def test_eventless_transitions_chain_across_regions(self):
        machine = create_machine(
            {
                "type": "parallel",
                "states": {
                    "A": {
                        "initial": "A1",
                        "states": {
                            "A1": {"on": {"E": "A2"}},
                            "A2": {"always": "A3"},
                            "A3": {"always": {"target": "A4", "guard": state_in({"B": "B3"})}},
                            "A4": {},
                        },
                    },
                    "B": {
                        "initial": "B1",
                        "states": {
                            "B1": {"on": {"E": "B2"}},
                            "B2": {"always": {"target": "B3", "guard": state_in({"A": "A2"})}},
                            "B3": {"always": {"target": "B4", "guard": state_in({"A": "A3"})}},
                            "B4": {},
                        },
                    },
                },
            }
        )
        actor = started(machine)
        actor.send({"type": "E"})
        assert actor.snapshot.value == {"A": "A4", "B": "B4"}

    def test_eventless_transitions_are_checked_after_the_event_microstep(self):
        machine = create_machine(
            {
                "type": "parallel",
                "states": {
                    "A": {"initial": "A1", "states": {"A1": {"on": {"A": "A2"}}, "A2": {}}},
                    "B": {
                        "initial": "B1",
                        "states": {
                            "B1": {"always": {"target": "B2", "guard": state_in({"A": "A2"})}},
                            "B2": {},
                        },
                    },
                    "C": {
                        "initial": "C1",
                        "states": {
                            "C1": {"always": {"target": "C2", "guard": state_in({"A": "A2"})}},
                            "C2": {},
                        },
                    },
                },
            }
        )
        actor = started(machine)
        assert actor.snapshot.value == {"A": "A1", "B": "B1", "C": "C1"}
        actor.send({"type": "A"})
        assert actor.snapshot.value == {"A": "A2", "B": "B2", "C": "C2"}

    def test_initial_snapshot_already_resolves_the_transient_state(self):
        # not started: the actor's first snapshot is computed up front
        assert create_actor(_greeting_machine()).snapshot.value == "morning"

    def test_initial_pure_transition_resolves_the_transient_state(self):
        snapshot, _ = _greeting_machine().initial_transition()
        assert snapshot.value == "morning"

    def test_reentering_the_root_reevaluates_the_transient_state(self):
        actor = started(_greeting_machine())

        actor.send({"type": "CHANGE"})
        assert actor.snapshot.value == "morning"
        assert actor.snapshot.context == {"hour": 20}

        actor.send({"type": "RECHECK"})
        assert actor.snapshot.value == "evening"

    def test_eventless_transition_beats_a_raised_event(self):
        machine = create_machine(
            {
                "initial": "a",
                "states": {
                    "a": {"on": {"FOO": "b"}},
                    "b": {"entry": raise_({"type": "BAR"}), "always": "c", "on": {"BAR": "d"}},
                    "c": {"on": {"BAR": "e"}},
                    "d": {},
                    "e": {},
                },
            }
        )
        actor = started(machine)
        actor.send({"type": "FOO"})
        assert actor.snapshot.value == "e"

    def test_wildcard_is_not_an_eventless_transition(self):
        machine = create_machine(
            {
                "initial": "a",
                "states": {
                    "a": {"on": {"FOO": "b"}},
                    "b": {"always": "pass", "on": {"*": "fail"}},
                    "fail": {},
                    "pass": {},
                },
            }
        )
        actor = started(machine)
        actor.send({"type": "FOO"})
        assert actor.snapshot.value == "pass"

    def test_eventless_transition_on_the_root(self):
        machine = create_machine(
            {
                "id": "machine",
                "initial": "first",
                "context": {"count": 0},
                "states": {
                    "first": {"on": {"ADD": {"actions": assign({"count": lambda context: context["count"] + 1})}}},
                    "success": {"type": "final"},
                },
                "always": [{"target": ".success", "guard": lambda context: context["count"] > 0}],
            }
        )
        actor = started(machine)
        assert actor.snapshot.status == "active"
        actor.send({"type": "ADD"})
        assert actor.snapshot.status == "done"

    def test_invoked_machine_with_an_input_dependent_transient_initial_state(self):
        timer_machine = create_machine(
            {
                "initial": "initial",
                "context": lambda input: {"duration": input["duration"]},
                "states": {
                    "initial": {
                        "always": [
                            {"target": "finished", "guard": lambda context: context["duration"] < 1000},
                            {"target": "active"},
                        ]
                    },
                    "active": {},
                    "finished": {"type": "final"},
                },
            }
        )
        machine = create_machine(
            {
                "initial": "active",
                "context": {"customDuration": 3000},
                "states": {
                    "active": {
                        "invoke": {
                            "src": timer_machine,
                            "input": lambda context: {"duration": context["customDuration"]},
                        }
                    }
                },
            }
        )
        actor = create_actor(machine)
        actor.start()  # must not raise

        assert actor.snapshot.status == "active"
        children = list(actor.snapshot.children.values())
        assert len(children) == 1
        assert children[0].get_snapshot().value == "active"

    def test_eventless_guard_can_use_an_external_event(self):
        machine = create_machine(
            {
                "initial": "a",
                "states": {
                    "a": {"always": {"target": "b", "guard": lambda event: event["type"] == "WHATEVER"}},
                    "b": {},
                },
            }
        )
        actor = started(machine)
        assert actor.snapshot.value == "a"
        actor.send({"type": "WHATEVER"})
        assert actor.snapshot.value == "b"

    def test_following_eventless_transitions_also_run_on_an_unhandled_event(self):
        machine = create_machine(
            {
                "initial": "a",
                "states": {
                    "a": {"always": {"target": "b", "guard": lambda event: event["type"] == "WHATEVER"}},
                    "b": {"always": {"target": "c", "guard": lambda: True}},
                    "c": {},
                },
            }
        )
        actor = started(machine)
        actor.send({"type": "WHATEVER"})
        assert actor.snapshot.value == "c"

    def test_eventless_guards_see_the_triggering_event(self):
        seen_types = []

        def guard(event):
            seen_types.append(event["type"])
            return event["type"] == "EVENT"

        machine = create_machine(
            {
                "initial": "a",
                "states": {
                    "a": {"on": {"EVENT": "b"}},
                    "b": {"always": "c"},
                    "c": {"always": {"guard": guard, "target": "d"}},
                    "d": {"type": "final"},
                },
            }
        )
        actor = started(machine)
        actor.send({"type": "EVENT"})
        assert actor.snapshot.status == "done"
        assert seen_types and all(t == "EVENT" for t in seen_types)

    def test_eventless_actions_see_the_triggering_event(self):
        seen = []

        def record(event):
            seen.append(dict(event))

        machine = create_machine(
            {
                "initial": "a",
                "states": {
                    "a": {"on": {"EVENT": "b"}},
                    "b": {"always": {"target": "c", "actions": record}, "exit": record},
                    "c": {"entry": record},
                },
            }
        )
        actor = started(machine)
        actor.send({"type": "EVENT", "value": 42})
        assert seen == [{"type": "EVENT", "value": 42}] * 3

    def test_cycle_of_eventless_transitions_errors_the_actor(self):
        machine = create_machine(
            {
                "initial": "a",
                "states": {
                    "a": {"always": {"target": "b"}},
                    "b": {"always": {"target": "c"}},
                    "c": {"always": {"target": "a"}},
                },
            },
            # xstate spells this `options: {maxIterations: 100}` inside the config
            max_iterations=100,
        )
        errors = []
        actor = create_actor(machine)
        actor.subscribe(error=errors.append)
        actor.start()

        assert len(errors) == 1
        assert "infinite loop" in str(errors[0]).lower()
        assert actor.snapshot.status == "error"

    def test_cycle_through_a_raised_event_errors_the_actor(self):
        machine = create_machine(
            {
                "initial": "a",
                "states": {
                    "a": {"always": {"target": "b"}},
                    "b": {"entry": raise_({"type": "EVENT"}), "on": {"EVENT": {"target": "c"}}},
                    "c": {"always": {"target": "a"}},
                },
            },
            max_iterations=100,
        )
        errors = []
        actor = create_actor(machine)
        actor.subscribe(error=errors.append)
        actor.start()

        assert len(errors) == 1
        assert "infinite loop" in str(errors[0]).lower()
        assert actor.snapshot.status == "error"

    def test_fallback_child_target_does_not_loop(self):
        machine = create_machine(
            {
                "initial": "idle",
                "states": {
                    "idle": {"on": {"event": "active"}},
                    "active": {
                        "initial": "a",
                        "states": {"a": {}, "b": {}},
                        "always": [{"guard": lambda: False, "target": ".a"}, {"target": ".b"}],
                    },
                },
            }
        )
        actor = started(machine)
        actor.send({"type": "event"})
        assert actor.snapshot.value == {"active": "b"}

    def test_guarded_child_target_does_not_loop(self):
        machine = create_machine(
            {
                "initial": "idle",
                "states": {
                    "idle": {"on": {"event": "active"}},
                    "active": {
                        "initial": "a",
                        "states": {"a": {}, "b": {}},
                        "always": [{"guard": lambda: True, "target": ".a"}, {"target": ".b"}],
                    },
                },
            }
        )
        actor = started(machine)
        actor.send({"type": "event"})
        assert actor.snapshot.value == {"active": "a"}

    def test_action_only_eventless_transition_to_the_current_child_runs_once(self):
        count = 0

        def bump():
            nonlocal count
            count += 1
            if count > 5:
                raise RuntimeError("eventless transition keeps firing")

        machine = create_machine(
            {
                "initial": "idle",
                "states": {
                    "idle": {"on": {"event": "active"}},
                    "active": {"initial": "a", "states": {"a": {}}, "always": [{"actions": bump, "target": ".a"}]},
                },
            }
        )
        actor = started(machine)
        actor.send({"type": "event"})
        assert actor.snapshot.value == {"active": "a"}
        assert count == 1

    def test_assigning_eventless_transition_loops_until_its_guard_fails(self):
        machine = create_machine(
            {
                "context": {"count": 0},
                "initial": "counting",
                "states": {
                    "counting": {
                        "always": {
                            "guard": lambda context: context["count"] < 5,
                            "actions": assign({"count": lambda context: context["count"] + 1}),
                        }
                    }
                },
            }
        )
        actor = started(machine)
        assert actor.snapshot.context["count"] == 5

    def test_eventless_transition_runs_again_after_a_raised_event(self):
        calls = []
        counter = 0

        def bump():
            nonlocal counter
            counter += 1

        machine = create_machine(
            {
                "always": {"actions": lambda: calls.append(counter)},
                "on": {
                    "EV": {"actions": raise_({"type": "RAISED"})},
                    "RAISED": {"actions": bump},
                },
            }
        )
        actor = started(machine)
        calls.clear()
        actor.send({"type": "EV"})
        # once for EV, once more for the raised RAISED
        assert calls == [0, 1]
