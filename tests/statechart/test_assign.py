"""Behaviour of the `assign` action, ported from xstate's `assign.test.ts`.

Only behaviour is ported: each case builds a machine, runs it in an Actor (or through the pure API) and
checks the context that comes out.
"""

import pytest

from engine.core.statechart import assign, create_machine
from tests.statechart.helpers import started


def _counter_machine(**context_overrides):
    """A one-state counter whose events exercise every shape of `assign`."""
    context = {"count": 0, "foo": "bar", **context_overrides}
    return create_machine(
        {
            "initial": "counting",
            "context": context,
            "states": {
                "counting": {
                    "on": {
                        # updater returning a partial dict
                        "INC": [
                            {
                                "target": "counting",
                                "actions": assign(lambda context: {"count": context["count"] + 1}),
                            }
                        ],
                        # per-key updater
                        "DEC": [
                            {
                                "target": "counting",
                                "actions": [assign({"count": lambda context: context["count"] - 1})],
                            }
                        ],
                        # several per-key updaters that ignore their input
                        "WIN_PROP": [
                            {
                                "target": "counting",
                                "actions": [assign({"count": lambda: 100, "foo": lambda: "win"})],
                            }
                        ],
                        # plain values instead of updaters
                        "WIN_STATIC": [
                            {
                                "target": "counting",
                                "actions": [assign({"count": 100, "foo": "win"})],
                            }
                        ],
                        # a mix of updater and plain value
                        "WIN_MIX": [
                            {
                                "target": "counting",
                                "actions": [assign({"count": lambda: 100, "foo": "win"})],
                            }
                        ],
                        # a whole-context updater taking no arguments
                        "WIN": [
                            {
                                "target": "counting",
                                "actions": [assign(lambda: {"count": 100, "foo": "win"})],
                            }
                        ],
                        # introduces a key the initial context lacks (targetless)
                        "SET_MAYBE": [{"actions": [assign({"maybe": "defined"})]}],
                    }
                }
            },
        }
    )


# --- describe('assign') -------------------------------------------------------------------------------------


class TestAssign:
    def test_per_key_updater_is_applied_on_each_event(self):
        actor = started(_counter_machine())

        actor.send({"type": "DEC"})
        first = actor.snapshot
        assert first.value == "counting"
        assert first.context == {"count": -1, "foo": "bar"}

        actor.send({"type": "DEC"})
        second = actor.snapshot
        assert second.value == "counting"
        assert second.context == {"count": -2, "foo": "bar"}

    def test_whole_context_updater_is_applied_on_each_event(self):
        actor = started(_counter_machine())

        actor.send({"type": "INC"})
        assert actor.snapshot.value == "counting"
        assert actor.snapshot.context == {"count": 1, "foo": "bar"}

        actor.send({"type": "INC"})
        assert actor.snapshot.value == "counting"
        assert actor.snapshot.context == {"count": 2, "foo": "bar"}

    def test_several_per_key_updaters(self):
        actor = started(_counter_machine())
        actor.send({"type": "WIN_PROP"})
        assert actor.snapshot.context == {"count": 100, "foo": "win"}

    def test_several_static_values(self):
        actor = started(_counter_machine())
        actor.send({"type": "WIN_STATIC"})
        assert actor.snapshot.context == {"count": 100, "foo": "win"}

    def test_static_values_mixed_with_updaters(self):
        actor = started(_counter_machine())
        actor.send({"type": "WIN_MIX"})
        assert actor.snapshot.context == {"count": 100, "foo": "win"}

    def test_whole_context_updater_setting_several_keys(self):
        actor = started(_counter_machine())
        actor.send({"type": "WIN"})
        assert actor.snapshot.context == {"count": 100, "foo": "win"}

    def test_per_key_updater_starts_from_the_given_initial_context(self):
        actor = started(_counter_machine(count=50, foo="bar"))

        actor.send({"type": "DEC"})
        assert actor.snapshot.value == "counting"
        assert actor.snapshot.context == {"count": 49, "foo": "bar"}

        actor.send({"type": "DEC"})
        assert actor.snapshot.value == "counting"
        assert actor.snapshot.context == {"count": 48, "foo": "bar"}

        other = started(_counter_machine(count=100, foo="bar"))
        other.send({"type": "DEC"})
        assert other.snapshot.value == "counting"
        assert other.snapshot.context == {"count": 99, "foo": "bar"}

    def test_whole_context_updater_starts_from_the_given_initial_context(self):
        actor = started(_counter_machine(count=50, foo="bar"))

        actor.send({"type": "INC"})
        assert actor.snapshot.value == "counting"
        assert actor.snapshot.context == {"count": 51, "foo": "bar"}

        actor.send({"type": "INC"})
        assert actor.snapshot.value == "counting"
        assert actor.snapshot.context == {"count": 52, "foo": "bar"}

        other = started(_counter_machine(count=102, foo="bar"))
        other.send({"type": "INC"})
        assert other.snapshot.value == "counting"
        assert other.snapshot.context == {"count": 103, "foo": "bar"}

    def test_unhandled_event_leaves_context_alone(self):
        actor = started(_counter_machine())
        actor.send({"type": "FAKE_EVENT"})
        assert actor.snapshot.context is not None
        assert actor.snapshot.context == {"count": 0, "foo": "bar"}

    def test_assign_adds_a_key_missing_from_the_initial_context(self):
        actor = started(_counter_machine())
        actor.send({"type": "SET_MAYBE"})
        assert actor.snapshot.context.get("maybe") is not None
        assert actor.snapshot.context == {"count": 0, "foo": "bar", "maybe": "defined"}

    def test_updater_can_read_the_event(self):
        machine = create_machine(
            {
                "initial": "active",
                "context": {"count": 0},
                "states": {
                    "active": {
                        "on": {"INC": {"actions": assign({"count": lambda event: event["value"]})}},
                    }
                },
            }
        )
        actor = started(machine)
        actor.send({"type": "INC", "value": 30})
        assert actor.snapshot.context["count"] == 30


# --- describe('assign meta') --------------------------------------------------------------------------------


class TestAssignParams:
    def test_whole_context_updater_of_a_named_action_gets_its_params(self):
        machine = create_machine(
            {"context": {"count": 1}, "entry": {"type": "inc", "params": {"by": 10}}},
            actions={"inc": assign(lambda context, params: {"count": context["count"] + params["by"]})},
        )
        actor = started(machine)
        assert actor.snapshot.context["count"] == 11

    def test_per_key_updater_of_a_named_action_gets_its_params(self):
        machine = create_machine(
            {"context": {"count": 1}, "entry": {"type": "inc", "params": {"by": 10}}},
            actions={"inc": assign({"count": lambda context, params: context["count"] + params["by"]})},
        )
        actor = started(machine)
        assert actor.snapshot.context["count"] == 11

    def test_named_assign_used_in_a_transition_sees_the_params(self):
        seen_params = []

        def updater(context, params):
            seen_params.append(params)
            return context

        machine = create_machine(
            {"on": {"EVENT": {"actions": {"type": "inc", "params": {"value": 5}}}}},
            actions={"inc": assign(updater)},
        )
        actor = started(machine)
        assert seen_params == []

        actor.send({"type": "EVENT"})
        assert seen_params == [{"value": 5}]


# --- extras: our API's own spellings of the same behaviour --------------------------------------------------


class TestAssignApiForms:
    def test_keyword_form_mixes_values_and_updaters(self):
        machine = create_machine(
            {
                "context": {"count": 3, "foo": "bar"},
                "on": {"GO": {"actions": assign(count=lambda context: context["count"] * 2, foo="baz")}},
            }
        )
        actor = started(machine)
        actor.send({"type": "GO"})
        assert actor.snapshot.context == {"count": 6, "foo": "baz"}

    def test_string_event_is_accepted_and_assigns(self):
        actor = started(_counter_machine())
        actor.send("INC")
        assert actor.snapshot.context == {"count": 1, "foo": "bar"}

    def test_pure_transition_does_not_mutate_the_previous_context(self):
        machine = _counter_machine()
        start, _ = machine.initial_transition()
        before = dict(start.context)

        after, _ = machine.transition(start, {"type": "INC"})

        assert after.context == {"count": 1, "foo": "bar"}
        assert start.context == before
        assert after.context is not start.context

    def test_successive_assigns_in_one_transition_see_each_other(self):
        machine = create_machine(
            {
                "context": {"count": 0},
                "on": {
                    "GO": {
                        "actions": [
                            assign({"count": lambda context: context["count"] + 1}),
                            assign({"count": lambda context: context["count"] * 10}),
                        ]
                    }
                },
            }
        )
        actor = started(machine)
        actor.send({"type": "GO"})
        assert actor.snapshot.context == {"count": 10}

    @pytest.mark.parametrize("event_type", ["WIN_PROP", "WIN_STATIC", "WIN_MIX", "WIN"])
    def test_every_form_gives_the_same_pure_result(self, event_type):
        machine = _counter_machine()
        start, _ = machine.initial_transition()
        after, _ = machine.transition(start, {"type": event_type})
        assert after.value == "counting"
        assert after.context == {"count": 100, "foo": "win"}
