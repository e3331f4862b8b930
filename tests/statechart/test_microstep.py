"""Microsteps: every intermediate snapshot of a macrostep, with the actions of each step.

Behaviour ported from xstate's packages/core/test/microstep.test.ts (xstate 5.32.5).

``machine.microsteps(snapshot, event)`` is our ``machine.microstep(...)``. xstate's ``getMicrosteps`` and
``getInitialMicrosteps`` have no counterpart in docs/statechart.md yet; the tests below use the natural
extension ``get_microsteps(machine, snapshot, event)`` / ``get_initial_microsteps(machine, input=None)`` from
``engine.core.statechart``, each returning a list of ``(snapshot, actions)`` pairs. They are imported inside the
tests so that their absence fails only those tests.
"""

from engine.core.statechart import create_machine, raise_


def _values(snapshots):
    return [snapshot.value for snapshot in snapshots]


def _types(actions):
    return [action.type for action in actions]


# ---------------------------------------------------------------------------
# machine.microsteps()


def test_microsteps_lists_the_snapshot_of_every_microstep():
    machine = create_machine(
        {
            "initial": "start",
            "states": {
                "start": {"on": {"GO": "a"}},
                "a": {"entry": raise_({"type": "NEXT"}), "on": {"NEXT": "b"}},
                "b": {"always": "c"},
                "c": {"entry": raise_({"type": "NEXT"}), "on": {"NEXT": "d"}},
                "d": {},
            },
        }
    )
    initial, _ = machine.initial_transition()
    assert _values(machine.microsteps(initial, {"type": "GO"})) == ["a", "b", "c", "d"]


def test_microsteps_include_eventless_steps():
    machine = create_machine(
        {
            "initial": "first",
            "states": {
                "first": {"on": {"TRIGGER": "second"}},
                "second": {"always": "third"},
                "third": {},
            },
        }
    )
    start = machine.resolve_state({"value": "first"})
    assert _values(machine.microsteps(start, {"type": "TRIGGER"})) == ["second", "third"]


def test_microsteps_include_steps_taken_on_raised_events():
    machine = create_machine(
        {
            "initial": "first",
            "states": {
                "first": {"on": {"TRIGGER": {"target": "second", "actions": raise_({"type": "RAISED"})}}},
                "second": {"on": {"RAISED": "third"}},
                "third": {},
            },
        }
    )
    start = machine.resolve_state({"value": "first"})
    assert _values(machine.microsteps(start, {"type": "TRIGGER"})) == ["second", "third"]


def test_a_plain_transition_is_a_single_microstep():
    machine = create_machine(
        {
            "initial": "first",
            "states": {"first": {"on": {"TRIGGER": "second"}}, "second": {}},
        }
    )
    initial, _ = machine.initial_transition()
    assert _values(machine.microsteps(initial, {"type": "TRIGGER"})) == ["second"]


def test_each_raised_event_gets_its_own_microstep_in_order():
    machine = create_machine(
        {
            "initial": "first",
            "states": {
                "first": {
                    "on": {
                        "TRIGGER": {
                            "target": "second",
                            "actions": [raise_({"type": "FOO"}), raise_({"type": "BAR"})],
                        }
                    }
                },
                "second": {"on": {"FOO": {"target": "third"}}},
                "third": {"on": {"BAR": {"target": "fourth"}}},
                "fourth": {"always": "fifth"},
                "fifth": {},
            },
        }
    )
    initial, _ = machine.initial_transition()
    assert _values(machine.microsteps(initial, {"type": "TRIGGER"})) == [
        "second",
        "third",
        "fourth",
        "fifth",
    ]


def test_last_microstep_equals_the_macrostep_result():
    machine = create_machine(
        {
            "initial": "first",
            "context": {"n": 0},
            "states": {
                "first": {"on": {"TRIGGER": {"target": "second", "actions": raise_({"type": "R"})}}},
                "second": {"on": {"R": "third"}},
                "third": {"always": "fourth"},
                "fourth": {},
            },
        }
    )
    initial, _ = machine.initial_transition()
    steps = machine.microsteps(initial, {"type": "TRIGGER"})
    final, _ = machine.transition(initial, {"type": "TRIGGER"})
    assert steps[-1].value == final.value == "fourth"


# ---------------------------------------------------------------------------
# get_microsteps (xstate's getMicrosteps)


def test_get_microsteps_pairs_each_snapshot_with_its_actions():
    from engine.core.statechart import get_microsteps

    def on_go():
        pass

    def enter_b():
        pass

    def on_always():
        pass

    machine = create_machine(
        {
            "initial": "a",
            "states": {
                "a": {"on": {"GO": {"target": "b", "actions": on_go}}},
                "b": {"entry": enter_b, "always": {"target": "c", "actions": on_always}},
                "c": {},
            },
        }
    )
    initial, _ = machine.initial_transition()
    steps = get_microsteps(machine, initial, {"type": "GO"})

    assert len(steps) == 2
    assert steps[0][0].value == "b"
    assert _types(steps[0][1]) == ["on_go", "enter_b"]
    assert steps[1][0].value == "c"
    assert _types(steps[1][1]) == ["on_always"]


def test_get_microsteps_captures_steps_caused_by_raised_events():
    from engine.core.statechart import get_microsteps

    def on_go():
        pass

    def on_next():
        pass

    machine = create_machine(
        {
            "initial": "a",
            "states": {
                "a": {"on": {"GO": {"target": "b", "actions": [on_go, raise_({"type": "NEXT"})]}}},
                "b": {"on": {"NEXT": {"target": "c", "actions": on_next}}},
                "c": {},
            },
        }
    )
    initial, _ = machine.initial_transition()
    steps = get_microsteps(machine, initial, {"type": "GO"})

    assert len(steps) == 2
    assert steps[0][0].value == "b"
    assert "on_go" in _types(steps[0][1])
    assert steps[1][0].value == "c"
    assert _types(steps[1][1]) == ["on_next"]


# ---------------------------------------------------------------------------
# get_initial_microsteps (xstate's getInitialMicrosteps)


def test_get_initial_microsteps_has_the_entry_actions():
    from engine.core.statechart import get_initial_microsteps

    def enter_a():
        pass

    machine = create_machine({"initial": "a", "states": {"a": {"entry": enter_a}}})
    steps = get_initial_microsteps(machine)

    assert len(steps) == 1
    assert steps[0][0].value == "a"
    assert _types(steps[0][1]) == ["enter_a"]


def test_get_initial_microsteps_includes_initial_eventless_steps():
    from engine.core.statechart import get_initial_microsteps

    def enter_a():
        pass

    def on_always():
        pass

    def enter_b():
        pass

    machine = create_machine(
        {
            "initial": "a",
            "states": {
                "a": {"entry": enter_a, "always": {"target": "b", "actions": on_always}},
                "b": {"entry": enter_b},
            },
        }
    )
    steps = get_initial_microsteps(machine)

    assert len(steps) == 2
    assert steps[0][0].value == "a"
    assert _types(steps[0][1]) == ["enter_a"]
    assert steps[1][0].value == "b"
    assert _types(steps[1][1]) == ["on_always", "enter_b"]


def test_get_initial_microsteps_enters_nested_initial_states_in_one_step():
    from engine.core.statechart import get_initial_microsteps

    def enter_parent():
        pass

    def enter_child():
        pass

    machine = create_machine(
        {
            "initial": "parent",
            "states": {
                "parent": {
                    "entry": enter_parent,
                    "initial": "child",
                    "states": {"child": {"entry": enter_child}},
                }
            },
        }
    )
    steps = get_initial_microsteps(machine)

    assert len(steps) == 1
    assert steps[0][0].value == {"parent": "child"}
    assert _types(steps[0][1]) == ["enter_parent", "enter_child"]


def test_get_initial_microsteps_passes_input_to_the_context_factory():
    from engine.core.statechart import get_initial_microsteps

    machine = create_machine(
        {
            "context": lambda input: {"count": input["value"]},
            "initial": "a",
            "states": {"a": {}},
        }
    )
    steps = get_initial_microsteps(machine, {"value": 42})
    assert steps[0][0].context == {"count": 42}
