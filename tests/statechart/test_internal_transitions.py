"""Internal (non-reentering) vs reentering transitions and targetless transitions.

Behaviour ported from xstate's packages/core/test/internalTransitions.test.ts (xstate 5.32.5).
"""

from engine.core.statechart import assign, create_actor, create_machine
from tests.statechart.tracking import track_entries


def test_parent_enters_a_child_without_reentering_itself():
    config, flush = track_entries(
        {
            "initial": "foo",
            "states": {"foo": {"initial": "a", "states": {"a": {}, "b": {}}, "on": {"CLICK": ".b"}}},
        }
    )
    actor = create_actor(create_machine(config)).start()
    flush()
    actor.send({"type": "CLICK"})
    assert actor.get_snapshot().value == {"foo": "b"}
    assert flush() == ["exit: foo.a", "enter: foo.b"]


def test_reentering_transition_to_a_child_reenters_the_parent():
    config, flush = track_entries(
        {
            "initial": "foo",
            "states": {
                "foo": {
                    "initial": "left",
                    "states": {"left": {}, "right": {}},
                    "on": {"NEXT": {"target": ".right", "reenter": True}},
                }
            },
        }
    )
    actor = create_actor(create_machine(config)).start()
    flush()
    actor.send({"type": "NEXT"})
    assert actor.get_snapshot().value == {"foo": "right"}
    assert flush() == ["exit: foo.left", "exit: foo", "enter: foo", "enter: foo.right"]


def test_explicit_reentering_self_transition_exits_and_reenters_the_parent():
    config, flush = track_entries(
        {
            "initial": "foo",
            "states": {
                "foo": {
                    "initial": "a",
                    "states": {"a": {"on": {"NEXT": "b"}}, "b": {}},
                    "on": {"RESET": {"target": "foo", "reenter": True}},
                }
            },
        }
    )
    actor = create_actor(create_machine(config)).start()
    actor.send({"type": "NEXT"})
    flush()
    actor.send({"type": "RESET"})
    assert actor.get_snapshot().value == {"foo": "a"}
    assert flush() == ["exit: foo.b", "exit: foo", "enter: foo", "enter: foo.a"]


def test_explicit_reentering_transition_to_own_child_by_sibling_path():
    config, flush = track_entries(
        {
            "initial": "foo",
            "states": {
                "foo": {
                    "initial": "a",
                    "states": {"a": {}, "b": {}},
                    "on": {"RESET_TO_B": {"target": "foo.b", "reenter": True}},
                }
            },
        }
    )
    actor = create_actor(create_machine(config)).start()
    flush()
    actor.send({"type": "RESET_TO_B"})
    assert actor.get_snapshot().value == {"foo": "b"}
    assert flush() == ["exit: foo.a", "exit: foo", "enter: foo", "enter: foo.b"]


def test_events_declared_on_the_root_are_handled():
    machine = create_machine({"initial": "foo", "on": {"CLICKED": ".bar"}, "states": {"foo": {}, "bar": {}}})
    actor = create_actor(machine).start()
    actor.send({"type": "CLICKED"})
    assert actor.get_snapshot().value == "bar"


def _targetless(on_root, as_list):
    calls = []

    def spy():
        calls.append(1)

    transition = {"actions": [spy]}
    handlers = {"TARGETLESS": [transition] if as_list else transition}
    if on_root:
        config = {"on": handlers, "initial": "foo", "states": {"foo": {}}}
    else:
        config = {"initial": "foo", "states": {"foo": {"on": handlers}}}
    actor = create_actor(create_machine(config)).start()
    actor.send({"type": "TARGETLESS"})
    return calls, actor.get_snapshot().value


def test_targetless_transition_in_a_list():
    calls, value = _targetless(on_root=False, as_list=True)
    assert calls == [1]
    assert value == "foo"


def test_targetless_transition_as_an_object():
    calls, value = _targetless(on_root=False, as_list=False)
    assert calls == [1]
    assert value == "foo"


def test_targetless_transition_on_the_parent_in_a_list():
    calls, value = _targetless(on_root=True, as_list=True)
    assert calls == [1]
    assert value == "foo"


def test_targetless_transition_on_the_parent_as_an_object():
    calls, value = _targetless(on_root=True, as_list=False)
    assert calls == [1]
    assert value == "foo"


def test_targetless_transition_on_the_parent_keeps_the_child_state():
    config, flush = track_entries(
        {"initial": "foo", "on": {"PARENT_EVENT": {"actions": lambda: None}}, "states": {"foo": {}}}
    )
    actor = create_actor(create_machine(config)).start()
    flush()
    actor.send({"type": "PARENT_EVENT"})
    assert actor.get_snapshot().value == "foo"
    assert flush() == []


def test_internal_transition_reenters_proper_descendants_of_its_source():
    def bump(key):
        return assign({key: lambda context: context[key] + 1})

    machine = create_machine(
        {
            "context": {
                "source_state_entries": 0,
                "direct_descendant_entries": 0,
                "deep_descendant_entries": 0,
            },
            "initial": "a1",
            "states": {
                "a1": {
                    "initial": "a11",
                    "entry": bump("source_state_entries"),
                    "states": {
                        "a11": {
                            "initial": "a111",
                            "entry": bump("direct_descendant_entries"),
                            "states": {"a111": {"entry": bump("deep_descendant_entries")}},
                        }
                    },
                    "on": {"REENTER": ".a11.a111"},
                }
            },
        }
    )
    actor = create_actor(machine).start()
    actor.send({"type": "REENTER"})
    assert actor.get_snapshot().context == {
        "source_state_entries": 1,
        "direct_descendant_entries": 2,
        "deep_descendant_entries": 2,
    }


def test_internal_transition_exits_proper_descendants_of_its_source():
    def bump(key):
        return assign({key: lambda context: context[key] + 1})

    machine = create_machine(
        {
            "context": {
                "source_state_exits": 0,
                "direct_descendant_exits": 0,
                "deep_descendant_exits": 0,
            },
            "initial": "a1",
            "states": {
                "a1": {
                    "initial": "a11",
                    "exit": bump("source_state_exits"),
                    "states": {
                        "a11": {
                            "initial": "a111",
                            "exit": bump("direct_descendant_exits"),
                            "states": {"a111": {"exit": bump("deep_descendant_exits")}},
                        }
                    },
                    "on": {"REENTER": ".a11.a111"},
                }
            },
        }
    )
    actor = create_actor(machine).start()
    actor.send({"type": "REENTER"})
    assert actor.get_snapshot().context == {
        "source_state_exits": 0,
        "direct_descendant_exits": 1,
        "deep_descendant_exits": 1,
    }
