"""Guard behaviour, ported from xstate's `guards.test.ts`.

Inline guards, named guards, parametrised guards (static and dynamic params), the `and_`/`or_`/`not_`
combinators, `state_in`, guards that refer to other registered guards, and what happens when a named guard
is missing.
"""

import pytest

from engine.core.statechart import (
    StatechartError,
    and_,
    create_actor,
    create_machine,
    enqueue_actions,
    not_,
    or_,
    state_in,
)
from tests.statechart.helpers import started
from tests.statechart.tracking import track_entries


def _light_machine():
    return create_machine(
        {
            "context": lambda input: {"elapsed": (input or {}).get("elapsed", 0)},
            "initial": "green",
            "states": {
                "green": {
                    "on": {
                        "TIMER": [
                            {"target": "green", "guard": lambda context: context["elapsed"] < 100},
                            {"target": "yellow", "guard": lambda context: 100 <= context["elapsed"] < 200},
                        ],
                        "EMERGENCY": {"target": "red", "guard": lambda event: bool(event.get("isEmergency"))},
                    }
                },
                "yellow": {
                    "on": {
                        "TIMER": {"target": "red", "guard": "minTimeElapsed"},
                        "TIMER_COND_OBJ": {"target": "red", "guard": {"type": "minTimeElapsed"}},
                    }
                },
                "red": {"on": {"BAD_COND": {"target": "red", "guard": "doesNotExist"}}},
            },
        },
        guards={"minTimeElapsed": lambda context: 100 <= context["elapsed"] < 200},
    )


def _a_to_b(guard, **implementations):
    """`a --EVENT[guard]--> b`."""
    return create_machine(
        {
            "initial": "a",
            "states": {"a": {"on": {"EVENT": {"target": "b", "guard": guard}}}, "b": {}},
        },
        **implementations,
    )


def _root_guard_spy_machine(guard, guards, event_type="FOO"):
    """A root-level targetless transition on `event_type` guarded by `guard`."""
    return create_machine({"on": {event_type: {"guard": guard}}}, guards=guards)


# --- describe('guard conditions'), the light machine ---------------------------------------------------------


class TestGuardConditions:
    def test_transition_only_when_the_context_guard_holds(self):
        slow = started(_light_machine(), input={"elapsed": 50})
        slow.send({"type": "TIMER"})
        assert slow.snapshot.value == "green"

        fast = started(_light_machine(), input={"elapsed": 120})
        fast.send({"type": "TIMER"})
        assert fast.snapshot.value == "yellow"

    def test_transition_when_the_event_guard_holds(self):
        actor = started(_light_machine(), input={})
        actor.send({"type": "EMERGENCY", "isEmergency": True})
        assert actor.snapshot.value == "red"

    def test_no_transition_when_the_event_guard_fails(self):
        actor = started(_light_machine(), input={})
        actor.send({"type": "EMERGENCY"})
        assert actor.snapshot.value == "green"

    def test_no_transition_and_no_entries_when_no_guard_holds(self):
        config, flush = track_entries(
            {
                "initial": "a",
                "states": {
                    "a": {
                        "on": {
                            "TIMER": [
                                {"target": "b", "guard": lambda event: event["elapsed"] > 200},
                                {"target": "c", "guard": lambda event: event["elapsed"] > 100},
                            ]
                        }
                    },
                    "b": {},
                    "c": {},
                },
            }
        )
        actor = started(create_machine(config))
        assert flush() == ["enter: __root__", "enter: a"]

        actor.send({"type": "TIMER", "elapsed": 10})

        assert actor.snapshot.value == "a"
        assert flush() == []

    def test_named_guard_given_as_a_string(self):
        actor = started(_light_machine(), input={"elapsed": 120})
        actor.send({"type": "TIMER"})
        assert actor.snapshot.value == "yellow"
        actor.send({"type": "TIMER"})
        assert actor.snapshot.value == "red"

    def test_named_guard_given_as_an_object(self):
        actor = started(_light_machine(), input={"elapsed": 150})
        actor.send({"type": "TIMER"})
        assert actor.snapshot.value == "yellow"
        actor.send({"type": "TIMER_COND_OBJ"})
        assert actor.snapshot.value == "red"

    def test_named_guard_given_as_a_string_that_fails(self):
        machine = create_machine(
            {
                "context": {"elapsed": 10},
                "initial": "yellow",
                "states": {
                    "green": {
                        "on": {
                            "TIMER": [
                                {"target": "green", "guard": lambda context: context["elapsed"] < 100},
                                {"target": "yellow", "guard": lambda context: 100 <= context["elapsed"] < 200},
                            ],
                            "EMERGENCY": {"target": "red", "guard": lambda event: bool(event.get("isEmergency"))},
                        }
                    },
                    "yellow": {"on": {"TIMER": {"target": "red", "guard": "minTimeElapsed"}}},
                    "red": {},
                },
            },
            guards={"minTimeElapsed": lambda context: 100 <= context["elapsed"] < 200},
        )
        actor = started(machine)
        actor.send({"type": "TIMER"})
        assert actor.snapshot.value == "yellow"

    def test_missing_named_guard_errors_the_actor(self):
        machine = create_machine({"initial": "foo", "states": {"foo": {"on": {"BAD_COND": {"guard": "doesNotExist"}}}}})
        errors = []
        actor = create_actor(machine)
        actor.subscribe(error=errors.append)
        actor.start()

        # xstate reports the problem to observers; `send` itself does not raise
        actor.send({"type": "BAD_COND"})

        assert len(errors) == 1
        assert isinstance(errors[0], StatechartError)
        assert "doesNotExist" in str(errors[0])
        assert "foo" in str(errors[0])
        assert actor.snapshot.status == "error"

    def test_missing_named_guard_raises_in_a_pure_transition(self):
        machine = _light_machine()
        red = machine.resolve_state({"value": "red", "context": {"elapsed": 0}})
        with pytest.raises(StatechartError) as caught:
            machine.transition(red, {"type": "BAD_COND"})
        assert "doesNotExist" in str(caught.value)
        assert "red" in str(caught.value)


# --- describe('guard conditions'), parallel machines and state_in --------------------------------------------


def _parallel_b_machine(b0_on):
    return create_machine(
        {
            "type": "parallel",
            "states": {
                "A": {"initial": "A2", "states": {"A0": {}, "A2": {}}},
                "B": {
                    "initial": "B0",
                    "states": {
                        "B0": {"always": [{"target": "B4", "guard": lambda: False}], "on": b0_on},
                        "B1": {},
                        "B2": {},
                        "B4": {},
                    },
                },
            },
        }
    )


class TestGuardConditionsParallel:
    def test_failing_guard_blocks_the_transition(self):
        actor = started(_parallel_b_machine({"T1": [{"target": "B1", "guard": lambda: False}]}))
        actor.send({"type": "T1"})
        assert actor.snapshot.value == {"A": "A2", "B": "B0"}

    def test_state_in_guard_allows_a_matching_transition(self):
        actor = started(_parallel_b_machine({"T2": [{"target": "B2", "guard": state_in("A.A2")}]}))
        actor.send({"type": "T2"})
        assert actor.snapshot.value == {"A": "A2", "B": "B2"}

    def test_state_in_guard_fails_when_the_region_is_elsewhere(self):
        actor = started(_parallel_b_machine({"T2": [{"target": "B2", "guard": state_in("A.A0")}]}))
        actor.send({"type": "T2"})
        assert actor.snapshot.value == {"A": "A2", "B": "B0"}

    def test_state_in_sees_interim_states_of_the_same_macrostep(self):
        machine = create_machine(
            {
                "type": "parallel",
                "states": {
                    "A": {
                        "initial": "A2",
                        "states": {
                            "A2": {"on": {"A": "A3"}},
                            "A3": {"always": "A4"},
                            "A4": {"always": "A5"},
                            "A5": {},
                        },
                    },
                    "B": {
                        "initial": "B0",
                        "states": {
                            "B0": {"always": [{"target": "B4", "guard": state_in("A.A4")}]},
                            "B4": {},
                        },
                    },
                },
            }
        )
        actor = started(machine)
        actor.send({"type": "A"})
        assert actor.snapshot.value == {"A": "A5", "B": "B4"}


# --- state_in during the initial entry (checked against xstate 5.32.5) ------------------------------------


def test_state_in_checked_during_the_initial_entry_sees_the_initial_configuration():
    # xstate's pre-initial snapshot lists only the root, and its value is the completed (initial) configuration;
    # a `#id` asks the listed nodes, so it is not yet true
    seen = []

    def ask(check):
        seen.append(
            (
                check(state_in("a.a1")),
                check(state_in({"a": "a1"})),
                check(state_in("a")),
                check(state_in("a.a2")),
                check(state_in("#first")),
            )
        )

    machine = create_machine(
        {
            "initial": "a",
            "states": {
                "a": {"initial": "a1", "states": {"a1": {"id": "first", "entry": enqueue_actions(ask)}, "a2": {}}}
            },
        }
    )
    started(machine)
    machine.initial_transition()
    assert seen and set(seen) == {(True, True, True, False, False)}


# --- describe('custom guards') -------------------------------------------------------------------------------


class TestCustomGuards:
    @staticmethod
    def _machine():
        def custom(context, event, params):
            if params["op"] == "greaterThan":
                return context[params["prop"]] + event["value"] > params["compare"]
            return False

        return create_machine(
            {
                "initial": "inactive",
                "context": {"count": 0},
                "states": {
                    "inactive": {
                        "on": {
                            "EVENT": {
                                "target": "active",
                                "guard": {
                                    "type": "custom",
                                    "params": {"prop": "count", "op": "greaterThan", "compare": 3},
                                },
                            }
                        }
                    },
                    "active": {},
                },
            },
            guards={"custom": custom},
        )

    def test_parametrised_guard_passes(self):
        actor = started(self._machine())
        actor.send({"type": "EVENT", "value": 4})
        assert actor.snapshot.value == "active"

    def test_parametrised_guard_fails(self):
        actor = started(self._machine())
        actor.send({"type": "EVENT", "value": 3})
        assert actor.snapshot.value == "inactive"

    def test_string_reference_gets_no_params(self):
        seen = []

        def my_guard(params):
            seen.append(params)
            return True

        actor = started(_root_guard_spy_machine("myGuard", {"myGuard": my_guard}))
        actor.send({"type": "FOO"})
        assert seen == [None]

    def test_dynamic_params_are_resolved_before_the_call(self):
        seen = []

        def my_guard(params):
            seen.append(params)
            return True

        actor = started(
            _root_guard_spy_machine({"type": "myGuard", "params": lambda: {"stuff": 100}}, {"myGuard": my_guard})
        )
        actor.send({"type": "FOO"})
        assert seen == [{"stuff": 100}]

    def test_dynamic_params_can_read_the_context(self):
        seen = []

        def my_guard(params):
            seen.append(params)
            return True

        machine = create_machine(
            {
                "context": {"secret": 42},
                "on": {"FOO": {"guard": {"type": "myGuard", "params": lambda context: {"secret": context["secret"]}}}},
            },
            guards={"myGuard": my_guard},
        )
        actor = started(machine)
        actor.send({"type": "FOO"})
        assert seen == [{"secret": 42}]

    def test_dynamic_params_can_read_the_event(self):
        seen = []

        def my_guard(params):
            seen.append(params)
            return True

        actor = started(
            _root_guard_spy_machine(
                {"type": "myGuard", "params": lambda event: {"secret": event["secret"]}}, {"myGuard": my_guard}
            )
        )
        actor.send({"type": "FOO", "secret": 77})
        assert seen == [{"secret": 77}]

    def test_inline_predicate_inside_a_registered_not_gets_no_params(self):
        seen = []

        def inner(params):
            seen.append(params)
            return True

        machine = create_machine(
            {"context": {"counter": 0}, "on": {"FOO": {"guard": {"type": "myGuard", "params": "foo"}}}},
            guards={"myGuard": not_(inner)},
        )
        actor = started(machine)
        actor.send({"type": "FOO"})
        assert seen == [None]

    def test_string_inside_a_registered_not_gets_no_params(self):
        seen = []

        def other(params):
            seen.append(params)
            return True

        actor = started(
            _root_guard_spy_machine({"type": "myGuard", "params": "foo"}, {"other": other, "myGuard": not_("other")})
        )
        actor.send({"type": "FOO"})
        assert seen == [None]

    def test_object_inside_a_registered_not_gets_its_own_params(self):
        seen = []

        def other(params):
            seen.append(params)
            return True

        actor = started(
            _root_guard_spy_machine(
                {"type": "myGuard", "params": "foo"},
                {"other": other, "myGuard": not_({"type": "other", "params": 42})},
            )
        )
        actor.send({"type": "FOO"})
        assert seen == [42]

    def test_inline_predicate_inside_a_registered_and_gets_no_params(self):
        seen = []

        def inner(params):
            seen.append(params)
            return True

        actor = started(
            _root_guard_spy_machine(
                {"type": "myGuard", "params": "foo"},
                {"other": lambda: True, "myGuard": and_(["other", inner])},
            )
        )
        actor.send({"type": "FOO"})
        assert seen == [None]

    def test_string_inside_a_registered_and_gets_no_params(self):
        seen = []

        def other(params):
            seen.append(params)
            return True

        actor = started(
            _root_guard_spy_machine(
                {"type": "myGuard", "params": "foo"},
                {"other": other, "myGuard": and_(["other", lambda params: True])},
            )
        )
        actor.send({"type": "FOO"})
        assert seen == [None]

    def test_object_inside_a_registered_and_gets_its_own_params(self):
        seen = []

        def other(params):
            seen.append(params)
            return True

        actor = started(
            _root_guard_spy_machine(
                {"type": "myGuard", "params": "foo"},
                {"other": other, "myGuard": and_([{"type": "other", "params": 42}, lambda params: True])},
            )
        )
        actor.send({"type": "FOO"})
        assert seen == [42]


# --- describe('referencing guards') --------------------------------------------------------------------------


class TestReferencingGuards:
    @pytest.mark.parametrize("reference", ["checkStuff", {"type": "checkStuff"}], ids=["string", "object"])
    def test_referenced_guard_is_checked_only_on_its_event(self, reference):
        calls = []

        def check_stuff(context, event):
            calls.append(event["type"])
            # returns None, which must count as false

        machine = create_machine({"on": {"EV": {"guard": reference}}}, guards={"checkStuff": check_stuff})
        actor = started(machine)
        assert calls == []

        actor.send({"type": "EV"})
        assert calls == ["EV"]

    def test_missing_predicate_errors_the_actor(self):
        machine = create_machine(
            {
                "id": "invalid-predicate",
                "initial": "active",
                "states": {
                    "active": {"on": {"EVENT": {"target": "inactive", "guard": "missing-predicate"}}},
                    "inactive": {},
                },
            }
        )
        errors = []
        actor = create_actor(machine)
        actor.subscribe(error=errors.append)
        actor.start()
        actor.send({"type": "EVENT"})

        assert len(errors) == 1
        assert isinstance(errors[0], StatechartError)
        assert "missing-predicate" in str(errors[0])
        assert "active" in str(errors[0])
        assert actor.snapshot.status == "error"

    def test_registered_composite_of_inline_predicates(self):
        actor = started(_a_to_b("referenced", guards={"referenced": not_(lambda: False)}))
        actor.send({"type": "EVENT"})
        assert actor.snapshot.matches("b")

    def test_registered_composite_referring_to_other_guards(self):
        guards = {
            "truthy": lambda: True,
            "falsy": lambda: False,
            "referenced": or_([lambda: False, not_("truthy"), and_([not_("falsy"), "truthy"])]),
        }
        actor = started(_a_to_b("referenced", guards=guards))
        actor.send({"type": "EVENT"})
        assert actor.snapshot.matches("b")

    def test_registered_composite_that_evaluates_false_blocks(self):
        guards = {
            "truthy": lambda: True,
            "referenced": or_([lambda: False, not_("truthy")]),
        }
        actor = started(_a_to_b("referenced", guards=guards))
        actor.send({"type": "EVENT"})
        assert actor.snapshot.matches("a")

    def test_string_aliases_resolve_through_a_chain(self):
        guards = {"ref1": "ref2", "ref2": "ref3", "ref3": lambda: True}
        actor = started(_a_to_b("ref1", guards=guards))
        actor.send({"type": "EVENT"})
        assert actor.snapshot.matches("b")


# --- describe('guards - other') ------------------------------------------------------------------------------


class TestGuardsOther:
    def test_plain_string_fallback_after_a_failing_guard(self):
        machine = create_machine(
            {
                "initial": "a",
                "states": {
                    "a": {"on": {"EVENT": [{"target": "b", "guard": lambda: False}, "c"]}},
                    "b": {},
                    "c": {},
                },
            }
        )
        actor = started(machine)
        actor.send({"type": "EVENT"})
        assert actor.snapshot.value == "c"

    @pytest.mark.parametrize(
        ("guard_factory", "action_runs"),
        [(lambda: lambda: False, False), (lambda: not_(lambda: False), True)],
        ids=["inline", "builtin"],
    )
    def test_inline_guard_is_not_written_into_the_provided_guards(self, guard_factory, action_runs):
        ran = []
        guards = {}
        machine = create_machine(
            {"on": {"FOO": {"guard": guard_factory(), "actions": lambda: ran.append(True)}}}, guards=guards
        )
        actor = started(machine)
        actor.send({"type": "FOO"})
        assert guards == {}
        assert ran == ([True] if action_runs else [])
        assert actor.snapshot.status == "active"


# --- describe('not() guard'), describe('and() guard'), describe('or() guard') ------------------------------


_TRUTHY_FALSY = {"truthy": lambda: True, "falsy": lambda: False}
_GREATER_THAN_10 = {"greaterThan10": lambda params: params["value"] > 10}


class TestNotGuard:
    def test_inline_function(self):
        actor = started(_a_to_b(not_(lambda: False)))
        actor.send({"type": "EVENT"})
        assert actor.snapshot.matches("b")

    def test_inline_function_that_holds_blocks(self):
        actor = started(_a_to_b(not_(lambda: True)))
        actor.send({"type": "EVENT"})
        assert actor.snapshot.matches("a")

    def test_string(self):
        actor = started(_a_to_b(not_("falsy"), guards=_TRUTHY_FALSY))
        actor.send({"type": "EVENT"})
        assert actor.snapshot.matches("b")

    def test_object(self):
        actor = started(_a_to_b(not_({"type": "greaterThan10", "params": {"value": 5}}), guards=_GREATER_THAN_10))
        actor.send({"type": "EVENT"})
        assert actor.snapshot.matches("b")

    def test_nested_builtins(self):
        actor = started(_a_to_b(not_(and_([not_("truthy"), "truthy"])), guards=_TRUTHY_FALSY))
        actor.send({"type": "EVENT"})
        assert actor.snapshot.matches("b")

    def test_dynamic_params_of_the_wrapped_guard(self):
        seen = []

        def my_guard(params):
            seen.append(params)
            return True

        machine = create_machine(
            {
                "on": {
                    "EV": {
                        "guard": not_({"type": "myGuard", "params": lambda event: {"secret": event["secret"]}}),
                        "actions": lambda: None,
                    }
                }
            },
            guards={"myGuard": my_guard},
        )
        actor = started(machine)
        actor.send({"type": "EV", "secret": 42})
        assert seen == [{"secret": 42}]


class TestAndGuard:
    def test_inline_functions(self):
        actor = started(_a_to_b(and_([lambda: True, lambda: 1 + 1 == 2])))
        actor.send({"type": "EVENT"})
        assert actor.snapshot.matches("b")

    def test_one_false_inline_function_blocks(self):
        actor = started(_a_to_b(and_([lambda: True, lambda: False])))
        actor.send({"type": "EVENT"})
        assert actor.snapshot.matches("a")

    def test_strings(self):
        actor = started(_a_to_b(and_(["truthy", "truthy"]), guards={"truthy": lambda: True}))
        actor.send({"type": "EVENT"})
        assert actor.snapshot.matches("b")

    def test_objects(self):
        guard = and_(
            [{"type": "greaterThan10", "params": {"value": 11}}, {"type": "greaterThan10", "params": {"value": 50}}]
        )
        actor = started(_a_to_b(guard, guards=_GREATER_THAN_10))
        actor.send({"type": "EVENT"})
        assert actor.snapshot.matches("b")

    def test_nested_builtins(self):
        guard = and_([lambda: True, not_("falsy"), and_([not_("falsy"), "truthy"])])
        actor = started(_a_to_b(guard, guards=_TRUTHY_FALSY))
        actor.send({"type": "EVENT"})
        assert actor.snapshot.matches("b")

    def test_dynamic_params_of_a_member_guard(self):
        seen = []

        def my_guard(params):
            seen.append(params)
            return True

        machine = create_machine(
            {
                "on": {
                    "EV": {
                        "guard": and_(
                            [
                                {"type": "myGuard", "params": lambda event: {"secret": event["secret"]}},
                                lambda: True,
                            ]
                        ),
                        "actions": lambda: None,
                    }
                }
            },
            guards={"myGuard": my_guard},
        )
        actor = started(machine)
        actor.send({"type": "EV", "secret": 42})
        assert seen == [{"secret": 42}]


class TestOrGuard:
    def test_inline_functions(self):
        actor = started(_a_to_b(or_([lambda: False, lambda: 1 + 1 == 2])))
        actor.send({"type": "EVENT"})
        assert actor.snapshot.matches("b")

    def test_all_false_inline_functions_block(self):
        actor = started(_a_to_b(or_([lambda: False, lambda: False])))
        actor.send({"type": "EVENT"})
        assert actor.snapshot.matches("a")

    def test_strings(self):
        actor = started(_a_to_b(or_(["falsy", "truthy"]), guards=_TRUTHY_FALSY))
        actor.send({"type": "EVENT"})
        assert actor.snapshot.matches("b")

    def test_objects(self):
        guard = or_(
            [{"type": "greaterThan10", "params": {"value": 4}}, {"type": "greaterThan10", "params": {"value": 50}}]
        )
        actor = started(_a_to_b(guard, guards=_GREATER_THAN_10))
        actor.send({"type": "EVENT"})
        assert actor.snapshot.matches("b")

    def test_nested_builtins(self):
        guard = or_([lambda: False, not_("truthy"), and_([not_("falsy"), "truthy"])])
        actor = started(_a_to_b(guard, guards=_TRUTHY_FALSY))
        actor.send({"type": "EVENT"})
        assert actor.snapshot.matches("b")

    def test_dynamic_params_of_a_member_guard(self):
        seen = []

        def my_guard(params):
            seen.append(params)
            return True

        machine = create_machine(
            {
                "on": {
                    "EV": {
                        "guard": or_(
                            [
                                {"type": "myGuard", "params": lambda event: {"secret": event["secret"]}},
                                lambda: True,
                            ]
                        ),
                        "actions": lambda: None,
                    }
                }
            },
            guards={"myGuard": my_guard},
        )
        actor = started(machine)
        actor.send({"type": "EV", "secret": 42})
        assert seen == [{"secret": 42}]
