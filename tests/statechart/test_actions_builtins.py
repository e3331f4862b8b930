"""Built-in actions: forward_to, log, enqueue_actions, send_parent, send_to, raise_, cancel.

Behaviour ported from xstate's packages/core/test/actions.test.ts (the
``forwardTo()``, ``log()``, ``enqueueActions``, ``sendParent``, ``sendTo``,
``raise`` and ``cancel`` groups). Timers run on a SimulatedClock instead of
real sleeps.

The last class, ``TestOtherBuiltins``, covers built-ins that actions.test.ts
barely touches (emit, spawn_child, stop_child, thrown errors, the pure action
list); each expectation there was checked against xstate 5.32.5 in Node.
"""

import pytest

from engine.core.statechart import (
    SimulatedClock,
    StatechartError,
    assign,
    cancel,
    create_actor,
    create_machine,
    emit,
    enqueue_actions,
    forward_to,
    from_callback,
    log,
    raise_,
    send_parent,
    send_to,
    spawn_child,
    stop_child,
)
from tests.statechart.helpers import started


class LoopDetected(Exception):
    """Raised by a test callable to break out of a runaway event loop."""


def assert_refused_string_event(build):
    """A bare string given as the event of raise_/send_to is refused.

    xstate refuses it when the action runs (the actor ends in status "error");
    refusing it when the action is built, as a StatechartError, is the same
    refusal made earlier, which docs/statechart.md prefers for bad input.
    """
    try:
        machine = build()
    except StatechartError as exc:
        assert "a string" in str(exc)
        return
    actor = create_actor(machine)
    errors = watch_errors(actor)
    actor.start()
    assert actor.snapshot.status == "error"
    assert len(errors) == 1
    assert errors[0] is actor.snapshot.error


def watch_errors(actor):
    """Subscribe an error observer; returns the list it fills."""
    errors = []
    actor.subscribe(error=lambda error: errors.append(error))
    return errors


def echo_child(event_type="SUCCESS", guard=None):
    """A child machine that answers EVENT by sending `event_type` to its parent."""
    transition = {"actions": send_parent({"type": event_type})}
    if guard is not None:
        transition["guard"] = guard
    return create_machine({"id": "child", "initial": "active", "states": {"active": {"on": {"EVENT": transition}}}})


def listening_child(received):
    """A child machine that records every PING it gets."""
    return create_machine({"on": {"PING": {"actions": lambda event: received.append(event)}}})


# --------------------------------------------------------------------------
# forwardTo()
# --------------------------------------------------------------------------


class TestForwardTo:
    def test_forwards_event_to_invoked_child(self):
        child = echo_child(guard=lambda event: event["value"] == 42)
        parent = create_machine(
            {
                "id": "parent",
                "initial": "first",
                "states": {
                    "first": {
                        "invoke": {"src": child, "id": "myChild"},
                        "on": {"EVENT": {"actions": forward_to("myChild")}, "SUCCESS": "last"},
                    },
                    "last": {"type": "final"},
                },
            }
        )
        actor = create_actor(parent)
        completed = []
        actor.subscribe(complete=lambda: completed.append(True))
        actor.start()

        actor.send({"type": "EVENT", "value": 42})

        assert completed == [True]
        assert actor.snapshot.status == "done"

    def test_forward_is_not_triggered_for_a_non_matching_payload(self):
        # the child's guard sees the forwarded payload, so a wrong value gets no reply
        child = echo_child(guard=lambda event: event["value"] == 42)
        parent = create_machine(
            {
                "initial": "first",
                "states": {
                    "first": {
                        "invoke": {"src": child, "id": "myChild"},
                        "on": {"EVENT": {"actions": forward_to("myChild")}, "SUCCESS": "last"},
                    },
                    "last": {"type": "final"},
                },
            }
        )
        actor = started(parent)
        actor.send({"type": "EVENT", "value": 41})
        assert actor.snapshot.value == "first"
        actor.send({"type": "EVENT", "value": 42})
        assert actor.snapshot.value == "last"

    def test_forwards_event_to_spawned_child_from_expression(self):
        child = echo_child(guard=lambda event: event["value"] == 42)
        parent = create_machine(
            {
                "id": "parent",
                "initial": "first",
                "context": {"child": None},
                "states": {
                    "first": {
                        "entry": assign({"child": lambda spawn: spawn(child, id="x")}),
                        "on": {
                            "EVENT": {"actions": forward_to(lambda context: context["child"])},
                            "SUCCESS": "last",
                        },
                    },
                    "last": {"type": "final"},
                },
            }
        )
        actor = create_actor(parent)
        completed = []
        actor.subscribe(complete=lambda: completed.append(True))
        actor.start()

        actor.send({"type": "EVENT", "value": 42})

        assert completed == [True]

    def test_forwarding_to_nothing_is_an_error_not_a_loop(self):
        # xstate's guard is simply "true"; ours is true too but gives up after
        # many calls, so that an engine that loops fails this test instead of hanging
        guard_calls = []

        def always_true_until_looping():
            guard_calls.append(1)
            if len(guard_calls) > 1000:
                raise LoopDetected("the '*' transition kept firing")
            return True

        machine = create_machine({"on": {"*": {"guard": always_true_until_looping, "actions": forward_to(None)}}})
        actor = create_actor(machine)
        errors = watch_errors(actor)
        actor.start()

        actor.send({"type": "TEST"})

        assert len(guard_calls) == 1, "the forwarded event came back to the sender"
        assert actor.snapshot.status == "error"
        assert len(errors) == 1
        assert errors[0] is actor.snapshot.error

    def test_forwarded_event_keeps_its_payload(self):
        child = create_machine(
            {"on": {"EVENT": {"actions": send_parent(lambda event: {"type": "ECHO", "value": event["value"]})}}}
        )
        machine = create_machine(
            {
                "context": {"got": None},
                "invoke": {"id": "c", "src": child},
                "on": {
                    "EVENT": {"actions": forward_to("c")},
                    "ECHO": {"actions": assign({"got": lambda event: event["value"]})},
                },
            }
        )
        actor = started(machine)
        actor.send({"type": "EVENT", "value": 9})
        assert actor.snapshot.context == {"got": 9}


# --------------------------------------------------------------------------
# log()
# --------------------------------------------------------------------------


class TestLog:
    def test_logs_a_string_with_label(self):
        calls = []

        def logger(*args):
            calls.append(args)

        started(create_machine({"entry": log("some string", "string label")}), logger=logger)
        assert calls == [("string label", "some string")]

    def test_logs_an_expression_with_label(self):
        calls = []

        def logger(*args):
            calls.append(args)

        machine = create_machine(
            {"context": {"count": 42}, "entry": log(lambda context: f"expr {context['count']}", "expr label")}
        )
        started(machine, logger=logger)
        assert calls == [("expr label", "expr 42")]

    def test_logs_value_alone_without_label(self):
        calls = []

        def logger(*args):
            calls.append(args)

        started(create_machine({"entry": log("only")}), logger=logger)
        assert calls == [("only",)]

    def test_default_expression_logs_context_and_event(self):
        calls = []

        def logger(*args):
            calls.append(args)

        actor = started(create_machine({"context": {"k": 1}, "on": {"L": {"actions": log()}}}), logger=logger)
        assert calls == []
        actor.send({"type": "L", "x": 2})
        assert calls == [({"context": {"k": 1}, "event": {"type": "L", "x": 2}},)]

    def test_log_runs_in_action_order_among_custom_actions(self):
        # xstate runs log at once, as it runs a custom action: not after the macrostep as it does sends
        seen = []
        machine = create_machine({"on": {"E": {"actions": [log("L1"), lambda: seen.append("custom"), log("L2")]}}})
        actor = started(machine, logger=lambda value: seen.append(value))
        actor.send({"type": "E"})
        assert seen == ["L1", "custom", "L2"]

    def test_log_keeps_action_order_while_the_actor_starts(self):
        seen = []
        machine = create_machine({"entry": [log("L1"), lambda: seen.append("custom"), log("L2")]})
        started(machine, logger=lambda value: seen.append(value))
        assert seen == ["L1", "custom", "L2"]


# --------------------------------------------------------------------------
# enqueueActions
# --------------------------------------------------------------------------


class TestEnqueueActions:
    def test_runs_a_referenced_action(self):
        hits = []
        machine = create_machine(
            {"entry": enqueue_actions(lambda enqueue: enqueue("someAction"))},
            actions={"someAction": lambda: hits.append(1)},
        )
        started(machine)
        assert hits == [1]

    def test_runs_several_different_referenced_actions(self):
        hits = []

        def body(enqueue):
            enqueue("someAction")
            enqueue("otherAction")

        machine = create_machine(
            {"entry": enqueue_actions(body)},
            actions={"someAction": lambda: hits.append("some"), "otherAction": lambda: hits.append("other")},
        )
        started(machine)
        assert hits == ["some", "other"]

    def test_runs_the_same_referenced_action_twice(self):
        hits = []

        def body(enqueue):
            enqueue("someAction")
            enqueue("someAction")

        machine = create_machine({"entry": enqueue_actions(body)}, actions={"someAction": lambda: hits.append(1)})
        started(machine)
        assert hits == [1, 1]

    def test_runs_a_parameterized_action(self):
        seen = []
        machine = create_machine(
            {"entry": enqueue_actions(lambda enqueue: enqueue({"type": "someAction", "params": {"answer": 42}}))},
            actions={"someAction": lambda params: seen.append(params)},
        )
        started(machine)
        assert seen == [{"answer": 42}]

    def test_runs_a_function(self):
        hits = []
        machine = create_machine({"entry": enqueue_actions(lambda enqueue: enqueue(lambda: hits.append(1)))})
        started(machine)
        assert hits == [1]

    def test_runs_a_builtin_built_with_its_creator(self):
        hits = []
        machine = create_machine(
            {
                "on": {
                    "FOO": {"actions": enqueue_actions(lambda enqueue: enqueue(raise_({"type": "RAISED"})))},
                    "RAISED": {"actions": lambda: hits.append(1)},
                }
            }
        )
        actor = started(machine)
        actor.send({"type": "FOO"})
        assert hits == [1]

    def test_runs_a_builtin_through_the_bound_creator(self):
        hits = []
        machine = create_machine(
            {
                "on": {
                    "FOO": {"actions": enqueue_actions(lambda enqueue: enqueue.raise_({"type": "RAISED"}))},
                    "RAISED": {"actions": lambda: hits.append(1)},
                }
            }
        )
        actor = started(machine)
        actor.send({"type": "FOO"})
        assert hits == [1]

    def test_assigns_apply_to_the_initial_snapshot(self):
        machine = create_machine(
            {"context": {"count": 0}, "entry": enqueue_actions(lambda enqueue: enqueue.assign({"count": 42}))}
        )
        # xstate computes the initial snapshot when the actor is created
        assert create_actor(machine).snapshot.context == {"count": 42}

    def test_assigns_apply_in_the_pure_initial_transition(self):
        machine = create_machine(
            {"context": {"count": 0}, "entry": enqueue_actions(lambda enqueue: enqueue.assign({"count": 42}))}
        )
        snapshot, _ = machine.initial_transition()
        assert snapshot.context == {"count": 42}

    def test_checks_a_referenced_guard(self):
        guard_calls = []

        def always_true():
            guard_calls.append(1)
            return True

        machine = create_machine(
            {"context": {"count": 0}, "entry": enqueue_actions(lambda check: check("alwaysTrue"))},
            guards={"alwaysTrue": always_true},
        )
        create_actor(machine)
        assert guard_calls == [1]

    def test_checks_a_parameterized_guard(self):
        seen = []

        def always_true(params):
            seen.append(params)
            return True

        machine = create_machine(
            {
                "context": {"count": 0},
                "entry": enqueue_actions(lambda check: check({"type": "alwaysTrue", "params": {"max": 100}})),
            },
            guards={"alwaysTrue": always_true},
        )
        create_actor(machine)
        assert seen == [{"max": 100}]

    def test_check_result_selects_what_is_enqueued(self):
        def body(enqueue, check):
            if check("isBig"):
                enqueue.assign({"size": "big"})
            else:
                enqueue.assign({"size": "small"})

        machine = create_machine(
            {
                "context": {"n": 0, "size": None},
                "on": {"SET": {"actions": [assign({"n": lambda event: event["n"]}), enqueue_actions(body)]}},
            },
            guards={"isBig": lambda context: context["n"] > 10},
        )
        actor = started(machine)
        actor.send({"type": "SET", "n": 3})
        assert actor.snapshot.context["size"] == "small"
        actor.send({"type": "SET", "n": 30})
        assert actor.snapshot.context["size"] == "big"

    def test_provides_self(self):
        seen = []
        machine = create_machine({"entry": enqueue_actions(lambda self: seen.append(self))})
        started(machine)
        assert len(seen) == 1
        assert callable(seen[0].send)

    def test_talks_to_parent_through_params(self):
        def my_send_parent(context, enqueue, params):
            if context["parent"] is None:
                return
            enqueue.send_to(context["parent"], params)

        child_machine = create_machine(
            {
                "context": lambda input: {"parent": input["parent"]},
                "entry": {"type": "mySendParent", "params": {"type": "FOO"}},
            },
            actions={"mySendParent": enqueue_actions(my_send_parent)},
        )
        hits = []
        parent_machine = create_machine(
            {
                "on": {"FOO": {"actions": lambda: hits.append(1)}},
                "invoke": {"src": "child", "input": lambda self: {"parent": self}},
            },
            actors={"child": child_machine},
        )
        started(parent_machine)
        assert hits == [1]

    def test_enqueue_send_parent(self):
        child_machine = create_machine(
            {"entry": "sendToParent"},
            actions={"sendToParent": enqueue_actions(lambda enqueue: enqueue.send_parent({"type": "PARENT_EVENT"}))},
        )
        hits = []
        parent_machine = create_machine(
            {"on": {"PARENT_EVENT": {"actions": lambda: hits.append(1)}}, "invoke": {"src": "child"}},
            actors={"child": child_machine},
        )
        started(parent_machine)
        assert hits == [1]


# --------------------------------------------------------------------------
# sendParent
# --------------------------------------------------------------------------


class TestSendParent:
    def test_child_entry_event_reaches_parent(self):
        # the xstate test only checks typing; here the event must actually arrive
        child = create_machine(
            {"id": "child", "initial": "start", "states": {"start": {"entry": [send_parent({"type": "PARENT"})]}}}
        )
        parent = create_machine(
            {"context": {"got": 0}, "invoke": {"src": child}, "on": {"PARENT": {"actions": assign({"got": 1})}}}
        )
        actor = started(parent)
        assert actor.snapshot.context == {"got": 1}

    def test_delayed_send_parent_uses_the_clock(self):
        clock = SimulatedClock()
        child = create_machine({"entry": send_parent({"type": "PING"}, delay=100)})
        parent = create_machine(
            {
                "context": {"pings": 0},
                "invoke": {"src": child},
                "on": {"PING": {"actions": assign({"pings": lambda context: context["pings"] + 1})}},
            }
        )
        actor = started(parent, clock=clock)
        clock.increment(99)
        assert actor.snapshot.context == {"pings": 0}
        clock.increment(1)
        assert actor.snapshot.context == {"pings": 1}


# --------------------------------------------------------------------------
# sendTo
# --------------------------------------------------------------------------


def _waiting_child(received):
    return create_machine(
        {
            "initial": "waiting",
            "states": {"waiting": {"on": {"EVENT": {"actions": lambda event: received.append(event)}}}},
        }
    )


class TestSendTo:
    def test_sends_to_actor_from_context(self):
        received = []
        child = _waiting_child(received)
        parent = create_machine(
            {
                "context": lambda spawn: {"child": spawn(child)},
                "entry": send_to(lambda context: context["child"], {"type": "EVENT"}),
            }
        )
        started(parent)
        assert received == [{"type": "EVENT"}]

    def test_sends_event_built_by_expression(self):
        received = []
        child = _waiting_child(received)
        parent = create_machine(
            {
                "context": lambda spawn: {"child": spawn(child, id="child"), "count": 42},
                "entry": send_to(
                    lambda context: context["child"],
                    lambda context: {"type": "EVENT", "count": context["count"]},
                ),
            }
        )
        started(parent)
        assert received == [{"type": "EVENT", "count": 42}]

    def test_sends_to_actor_by_id(self):
        received = []
        child = _waiting_child(received)
        parent = create_machine(
            {
                "context": lambda spawn: {"child": spawn(child, id="child")},
                "entry": send_to("child", {"type": "EVENT"}),
            }
        )
        started(parent)
        assert received == [{"type": "EVENT"}]

    def test_sends_directly_to_an_actor_ref(self):
        received = []
        child = _waiting_child(received)
        parent = create_machine(
            {
                "context": lambda spawn: {"child": spawn(child)},
                "entry": send_to(lambda context: context["child"], {"type": "EVENT"}),
            }
        )
        actor = started(parent)
        ref = actor.snapshot.context["child"]
        assert received == [{"type": "EVENT"}]
        assert ref in actor.snapshot.children.values()

    def test_target_expression_reads_event(self):
        received = []

        def callback(receive):
            receive(lambda event: received.append(event))

        machine = create_machine(
            {
                "initial": "a",
                "context": lambda spawn: {"foo": spawn(from_callback(callback))},
                "states": {
                    "a": {
                        "on": {
                            "EVENT": {
                                "actions": send_to(lambda context, event: context[event["value"]], {"type": "EVENT"})
                            }
                        }
                    }
                },
            }
        )
        actor = started(machine)
        actor.send({"type": "EVENT", "value": "foo"})
        assert received == [{"type": "EVENT"}]

    def test_string_event_is_refused(self):
        assert_refused_string_event(
            lambda: create_machine(
                {"invoke": {"id": "child", "src": from_callback(lambda: None)}, "entry": send_to("child", "a string")}
            )
        )

    def test_self_event_handler_sees_updated_self_snapshot(self):
        seen = []
        machine = create_machine(
            {
                "context": {"counter": 0},
                "initial": "a",
                "states": {
                    "a": {"on": {"NEXT": "b"}},
                    "b": {
                        "entry": [assign({"counter": 1}), send_to(lambda self: self, {"type": "EVENT"})],
                        "on": {
                            "EVENT": {
                                "actions": lambda self: seen.append(dict(self.get_snapshot().context)),
                                "target": "c",
                            }
                        },
                    },
                    "c": {},
                },
            }
        )
        actor = started(machine)
        actor.send({"type": "NEXT"})
        actor.send({"type": "EVENT"})
        assert seen == [{"counter": 1}]
        assert actor.snapshot.value == "c"

    def test_delayed_event_to_stopped_spawned_child_is_not_delivered(self):
        clock = SimulatedClock()
        first, second = [], []
        machine = create_machine(
            {
                "initial": "a",
                "states": {
                    "a": {"on": {"START": "b"}},
                    "b": {
                        "entry": [
                            spawn_child("child1", id="myChild"),
                            send_to("myChild", {"type": "PING"}, delay=1),
                            stop_child("myChild"),
                            spawn_child("child2", id="myChild"),
                        ]
                    },
                },
            },
            actors={"child1": listening_child(first), "child2": listening_child(second)},
        )
        actor = started(machine, clock=clock)
        actor.send({"type": "START"})
        clock.increment(10)
        assert first == []
        assert second == []
        assert actor.snapshot.status == "active"

    def test_delayed_event_to_stopped_invoked_child_is_not_delivered(self):
        clock = SimulatedClock()
        first, second = [], []
        machine = create_machine(
            {
                "initial": "a",
                "states": {
                    "a": {"on": {"START": "b"}},
                    "b": {
                        "entry": send_to("myChild", {"type": "PING"}, delay=1),
                        "invoke": {"src": "child1", "id": "myChild"},
                        "on": {"NEXT": "c"},
                    },
                    "c": {"invoke": {"src": "child2", "id": "myChild"}},
                },
            },
            actors={"child1": listening_child(first), "child2": listening_child(second)},
        )
        actor = started(machine, clock=clock)
        actor.send({"type": "START"})
        actor.send({"type": "NEXT"})
        clock.increment(10)
        assert first == []
        assert second == []
        assert actor.snapshot.value == "c"

    def test_sends_to_actor_found_by_system_id(self):
        child = create_machine({"on": {"HI": {"actions": send_parent({"type": "BACK"})}}})
        machine = create_machine(
            {
                "invoke": {"src": child, "system_id": "sys"},
                "context": {"back": 0},
                "on": {
                    "GO": {"actions": send_to(lambda system: system.get("sys"), {"type": "HI"})},
                    "BACK": {"actions": assign({"back": lambda context: context["back"] + 1})},
                },
            }
        )
        actor = started(machine)
        actor.send({"type": "GO"})
        assert actor.snapshot.context == {"back": 1}

    def test_named_delay_is_resolved_from_delays(self):
        clock = SimulatedClock()
        child = create_machine({"on": {"HI": {"actions": send_parent({"type": "BACK"})}}})
        machine = create_machine(
            {
                "context": {"c": 0},
                "invoke": {"id": "k", "src": child},
                "entry": send_to("k", {"type": "HI"}, delay="wait"),
                "on": {"BACK": {"actions": assign({"c": 1})}},
            },
            delays={"wait": 200},
        )
        actor = started(machine, clock=clock)
        clock.increment(199)
        assert actor.snapshot.context == {"c": 0}
        clock.increment(1)
        assert actor.snapshot.context == {"c": 1}


# --------------------------------------------------------------------------
# raise
# --------------------------------------------------------------------------


class TestRaise:
    def test_delayed_self_event_arrives_in_later_state(self):
        clock = SimulatedClock()
        machine = create_machine(
            {
                "initial": "a",
                "states": {
                    "a": {"entry": raise_({"type": "EVENT"}, delay=1), "on": {"TO_B": "b"}},
                    "b": {"on": {"EVENT": "c"}},
                    "c": {"type": "final"},
                },
            }
        )
        actor = started(machine, clock=clock)
        completed = []
        actor.subscribe(complete=lambda: completed.append(True))

        actor.send({"type": "TO_B"})
        assert actor.snapshot.value == "b"

        clock.increment(1)
        assert completed == [True]
        assert actor.snapshot.value == "c"

    def test_zero_delay_is_still_deferred(self):
        clock = SimulatedClock()
        machine = create_machine(
            {
                "initial": "a",
                "states": {"a": {"entry": raise_({"type": "EVENT"}, delay=0), "on": {"EVENT": "b"}}, "b": {}},
            }
        )
        actor = started(machine, clock=clock)
        assert actor.snapshot.value == "a"
        clock.increment(0)
        assert actor.snapshot.value == "b"

    def test_raised_event_is_handled_in_same_macrostep(self):
        machine = create_machine(
            {
                "initial": "a",
                "states": {"a": {"entry": raise_({"type": "TO_B"}), "on": {"TO_B": "b"}}, "b": {"type": "final"}},
            }
        )
        actor = started(machine)
        assert actor.snapshot.value == "b"

    def test_raised_event_is_handled_in_pure_initial_transition(self):
        machine = create_machine(
            {
                "initial": "a",
                "states": {"a": {"entry": raise_({"type": "TO_B"}), "on": {"TO_B": "b"}}, "b": {"type": "final"}},
            }
        )
        snapshot, _ = machine.initial_transition()
        assert snapshot.value == "b"
        assert snapshot.status == "done"

    def test_delayed_raise_waits_for_its_delay(self):
        clock = SimulatedClock()
        machine = create_machine(
            {
                "initial": "a",
                "states": {
                    "a": {"entry": raise_({"type": "TO_B"}, delay=100), "on": {"TO_B": "b"}},
                    "b": {"type": "final"},
                },
            }
        )
        actor = started(machine, clock=clock)
        completed = []
        actor.subscribe(complete=lambda: completed.append(True))

        clock.increment(50)
        assert actor.snapshot.value == "a"
        assert completed == []

        clock.increment(50)
        assert actor.snapshot.value == "b"
        assert completed == [True]

    def test_event_expression(self):
        machine = create_machine(
            {
                "initial": "a",
                "states": {
                    "a": {"on": {"NEXT": {"actions": raise_(lambda: {"type": "RAISED"})}, "RAISED": "b"}},
                    "b": {},
                },
            }
        )
        actor = started(machine)
        actor.send({"type": "NEXT"})
        assert actor.snapshot.value == "b"

    def test_event_expression_reads_context(self):
        machine = create_machine(
            {
                "initial": "a",
                "context": {"event_type": "RAISED"},
                "states": {
                    "a": {
                        "on": {
                            "NEXT": {"actions": raise_(lambda context: {"type": context["event_type"]})},
                            "RAISED": "b",
                        }
                    },
                    "b": {},
                },
            }
        )
        actor = started(machine)
        actor.send({"type": "NEXT"})
        assert actor.snapshot.value == "b"

    def test_string_event_is_refused(self):
        assert_refused_string_event(lambda: create_machine({"entry": raise_("a string")}))


# --------------------------------------------------------------------------
# cancel
# --------------------------------------------------------------------------


class CountingClock(SimulatedClock):
    """A SimulatedClock that records clear_timeout calls."""

    def __init__(self):
        super().__init__()
        self.cleared = []

    def clear_timeout(self, handle):
        self.cleared.append(handle)
        return super().clear_timeout(handle)


def _self_raising_child(name, received, cancels=False):
    config = {
        "id": name,
        "entry": raise_({"type": "event"}, id="sameId", delay=100),
        "on": {"event": {"actions": lambda: received.append(1)}},
    }
    if cancels:
        config["on"]["cancel"] = {"actions": cancel("sameId")}
    return create_machine(config)


class TestCancel:
    def test_cancels_a_delayed_raise(self):
        clock = SimulatedClock()
        machine = create_machine(
            {
                "initial": "a",
                "states": {
                    "a": {
                        "on": {
                            "NEXT": {"actions": raise_({"type": "RAISED"}, delay=1, id="myId")},
                            "RAISED": "b",
                            "CANCEL": {"actions": cancel("myId")},
                        }
                    },
                    "b": {},
                },
            }
        )
        actor = started(machine, clock=clock)
        actor.send({"type": "NEXT"})
        actor.send({"type": "CANCEL"})
        clock.increment(10)
        assert actor.snapshot.value == "a"

    def test_uncancelled_delayed_raise_still_fires(self):
        # the control case for the test above
        clock = SimulatedClock()
        machine = create_machine(
            {
                "initial": "a",
                "states": {
                    "a": {
                        "on": {
                            "NEXT": {"actions": raise_({"type": "RAISED"}, delay=1, id="myId")},
                            "RAISED": "b",
                            "CANCEL": {"actions": cancel("otherId")},
                        }
                    },
                    "b": {},
                },
            }
        )
        actor = started(machine, clock=clock)
        actor.send({"type": "NEXT"})
        actor.send({"type": "CANCEL"})
        clock.increment(10)
        assert actor.snapshot.value == "b"

    def test_cancel_in_first_child_leaves_second_childs_timer(self):
        clock = SimulatedClock()
        foo, bar = [], []
        machine = create_machine(
            {
                "invoke": [
                    {"id": "foo", "src": _self_raising_child("foo", foo, cancels=True)},
                    {"id": "bar", "src": _self_raising_child("bar", bar)},
                ],
                "on": {"cancelFoo": {"actions": send_to("foo", {"type": "cancel"})}},
            }
        )
        actor = started(machine, clock=clock)
        clock.increment(50)
        actor.send({"type": "cancelFoo"})
        clock.increment(55)
        assert foo == []
        assert bar == [1]

    def test_cancel_in_second_child_leaves_first_childs_timer(self):
        clock = SimulatedClock()
        foo, bar = [], []
        machine = create_machine(
            {
                "invoke": [
                    {"id": "foo", "src": _self_raising_child("foo", foo)},
                    {"id": "bar", "src": _self_raising_child("bar", bar, cancels=True)},
                ],
                "on": {"cancelBar": {"actions": send_to("bar", {"type": "cancel"})}},
            }
        )
        actor = started(machine, clock=clock)
        clock.increment(50)
        actor.send({"type": "cancelBar"})
        clock.increment(55)
        assert foo == [1]
        assert bar == []

    def test_cancelling_an_unknown_id_does_not_touch_the_clock(self):
        clock = CountingClock()
        machine = create_machine({"on": {"FOO": {"actions": cancel("foo")}}})
        actor = started(machine, clock=clock)
        actor.send({"type": "FOO"})
        assert clock.cleared == []
        assert actor.snapshot.status == "active"

    def test_cancels_just_scheduled_delayed_send_to_just_invoked_child(self):
        clock = SimulatedClock()
        received = []
        machine = create_machine(
            {
                "initial": "a",
                "states": {
                    "a": {"on": {"START": "b"}},
                    "b": {
                        "entry": [
                            send_to("myChild", {"type": "PING"}, id="myEvent", delay=0),
                            cancel("myEvent"),
                        ],
                        "invoke": {"src": "child", "id": "myChild"},
                    },
                },
            },
            actors={"child": listening_child(received)},
        )
        actor = started(machine, clock=clock)
        actor.send({"type": "START"})
        clock.increment(10)
        assert received == []

    def test_cannot_cancel_a_non_delayed_send_to_just_invoked_child(self):
        received = []
        machine = create_machine(
            {
                "initial": "a",
                "states": {
                    "a": {"on": {"START": "b"}},
                    "b": {
                        "entry": [send_to("myChild", {"type": "PING"}, id="myEvent"), cancel("myEvent")],
                        "invoke": {"src": "child", "id": "myChild"},
                    },
                },
            },
            actors={"child": listening_child(received)},
        )
        actor = started(machine)
        actor.send({"type": "START"})
        assert received == [{"type": "PING"}]


# --------------------------------------------------------------------------
# Built-ins beyond actions.test.ts (expectations checked against xstate 5.32.5)
# --------------------------------------------------------------------------


class TestOtherBuiltins:
    def test_emit_from_initial_entry_reaches_listeners_registered_before_start(self):
        named, everything = [], []
        machine = create_machine(
            {
                "entry": emit({"type": "hello", "v": 1}),
                "on": {"GO": {"actions": emit(lambda event: {"type": "bye", "v": event["v"]})}},
            }
        )
        actor = create_actor(machine)
        actor.on("hello", lambda event: named.append(event))
        actor.on("*", lambda event: everything.append(event))
        actor.start()
        actor.send({"type": "GO", "v": 5})
        assert named == [{"type": "hello", "v": 1}]
        assert everything == [{"type": "hello", "v": 1}, {"type": "bye", "v": 5}]

    def test_emit_sees_preceding_assign_and_unsubscribe_stops_delivery(self):
        counts = []
        machine = create_machine(
            {
                "context": {"n": 3},
                "on": {
                    "GO": {
                        "actions": [
                            assign({"n": lambda context: context["n"] + 1}),
                            emit(lambda context: {"type": "count", "n": context["n"]}),
                        ]
                    }
                },
            }
        )
        actor = create_actor(machine)
        sub = actor.on("count", lambda event: counts.append(event["n"]))
        actor.start()
        actor.send({"type": "GO"})
        sub.unsubscribe()
        actor.send({"type": "GO"})
        assert counts == [4]
        assert actor.snapshot.context == {"n": 5}

    def test_spawn_child_and_stop_child_by_id(self):
        machine = create_machine(
            {"entry": spawn_child("kid_logic", id="kid"), "on": {"STOP": {"actions": stop_child("kid")}}},
            actors={"kid_logic": create_machine({})},
        )
        actor = started(machine)
        kid = actor.snapshot.children["kid"]
        assert list(actor.snapshot.children) == ["kid"]
        assert kid.get_snapshot().status == "active"

        actor.send({"type": "STOP"})

        assert actor.snapshot.children == {}
        assert kid.get_snapshot().status == "stopped"

    def test_a_stopped_childs_system_id_is_free_for_a_child_spawned_in_the_same_step(self):
        kid = create_machine({})
        machine = create_machine(
            {
                "entry": spawn_child(kid, id="a", system_id="worker"),
                "on": {"SWAP": {"actions": [stop_child("a"), spawn_child(kid, id="b", system_id="worker")]}},
            }
        )
        actor = started(machine)
        actor.send({"type": "SWAP"})
        assert actor.snapshot.status == "active"
        assert list(actor.snapshot.children) == ["b"]
        assert actor.system.get("worker") is actor.snapshot.children["b"].actor

    def test_stop_child_by_ref_from_context(self):
        child = create_machine({})
        machine = create_machine(
            {
                "context": lambda spawn: {"ref": spawn(child, id="q")},
                "on": {"STOP": {"actions": stop_child(lambda context: context["ref"])}},
            }
        )
        actor = started(machine)
        ref = actor.snapshot.children["q"]
        actor.send({"type": "STOP"})
        assert "q" not in actor.snapshot.children
        assert ref.get_snapshot().status == "stopped"

    def test_spawn_child_input_expression(self):
        kid = create_machine({"context": lambda input: {"got": input["v"]}})
        machine = create_machine(
            {"context": {"v": 7}, "entry": spawn_child(kid, id="k", input=lambda context: {"v": context["v"]})}
        )
        actor = started(machine)
        assert actor.snapshot.children["k"].get_snapshot().context == {"got": 7}

    def test_enqueue_spawn_emit_and_stop(self):
        emitted = []

        def spawn_and_announce(enqueue):
            enqueue.spawn_child(create_machine({}), id="k")
            enqueue.emit({"type": "spawned"})

        machine = create_machine(
            {
                "entry": enqueue_actions(spawn_and_announce),
                "on": {"STOP": {"actions": enqueue_actions(lambda enqueue: enqueue.stop_child("k"))}},
            }
        )
        actor = create_actor(machine)
        actor.on("spawned", lambda event: emitted.append(event))
        actor.start()
        assert list(actor.snapshot.children) == ["k"]
        assert emitted == [{"type": "spawned"}]

        actor.send({"type": "STOP"})
        assert actor.snapshot.children == {}

    def test_throwing_transition_action_puts_actor_in_error(self):
        boom = RuntimeError("bad")

        def explode():
            raise boom

        after = []
        machine = create_machine({"on": {"BOOM": {"actions": explode}, "LATER": {"actions": lambda: after.append(1)}}})
        actor = create_actor(machine)
        errors = watch_errors(actor)
        actor.start()
        actor.send({"type": "BOOM"})

        assert actor.snapshot.status == "error"
        assert actor.snapshot.error is boom
        assert errors == [boom]

        actor.send({"type": "LATER"})
        assert after == []
        assert actor.snapshot.status == "error"

    def test_throwing_entry_action_fails_start(self):
        def explode():
            raise ValueError("entry failed")

        actor = create_actor(create_machine({"entry": explode}))
        errors = watch_errors(actor)
        actor.start()
        assert actor.snapshot.status == "error"
        assert len(errors) == 1
        assert str(errors[0]) == "entry failed"

    def test_throwing_assign_keeps_context_and_errors(self):
        def bad(context):
            raise ValueError("assign failed")

        machine = create_machine({"context": {"n": 0}, "on": {"GO": {"actions": assign({"n": bad})}}})
        actor = create_actor(machine)
        errors = watch_errors(actor)
        actor.start()
        actor.send({"type": "GO"})
        assert actor.snapshot.status == "error"
        assert actor.snapshot.context == {"n": 0}
        assert [str(e) for e in errors] == ["assign failed"]

    def test_throwing_assign_raises_from_pure_transition(self):
        def bad(context):
            raise ValueError("assign failed")

        machine = create_machine({"context": {"n": 0}, "on": {"GO": {"actions": assign({"n": bad})}}})
        snapshot, _ = machine.initial_transition()
        with pytest.raises(ValueError, match="assign failed"):
            machine.transition(snapshot, {"type": "GO"})

    def test_pure_initial_transition_lists_builtin_action_types(self):
        machine = create_machine(
            {
                "context": {"n": 0},
                "entry": [
                    assign({"n": 1}),
                    "named",
                    raise_({"type": "D"}, delay=10, id="d1"),
                    log("hi", "lbl"),
                    emit({"type": "E"}),
                    spawn_child(create_machine({}), id="c"),
                    send_to("c", {"type": "X"}),
                    cancel("d1"),
                    stop_child("c"),
                ],
            },
            actions={"named": lambda: None},
        )
        snapshot, actions = machine.initial_transition()
        # assign is applied to the snapshot, not handed back as an action
        assert snapshot.context == {"n": 1}
        assert [a.type for a in actions] == [
            "named",
            "xstate.raise",
            "xstate.log",
            "xstate.emit",
            "xstate.spawnChild",
            "xstate.sendTo",
            "xstate.cancel",
            "xstate.stopChild",
        ]
