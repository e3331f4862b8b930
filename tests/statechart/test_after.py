"""Delayed (`after`) transitions, ported from xstate's `after.test.ts`.

Time is driven by `SimulatedClock`, so nothing sleeps.
"""

import json

from engine.core.statechart import (
    SimulatedClock,
    cancel,
    create_actor,
    create_machine,
    raise_,
    send_parent,
    spawn_child,
)
from tests.statechart.helpers import started


def _light_machine():
    return create_machine(
        {
            "id": "light",
            "initial": "green",
            "context": {"canTurnGreen": True},
            "states": {
                # string keys, as in xstate's own config; other machines here use int keys
                "green": {"after": {"1000": "yellow"}},
                "yellow": {"after": {"1000": [{"target": "red"}]}},
                "red": {"after": {"1000": "green"}},
            },
        }
    )


class _RecordingClock:
    """Wraps a SimulatedClock and records every `clear_timeout` call."""

    def __init__(self):
        self.inner = SimulatedClock()
        self.cleared = []

    def now(self):
        return self.inner.now()

    def set_timeout(self, fn, ms):
        return self.inner.set_timeout(fn, ms)

    def clear_timeout(self, handle):
        self.cleared.append(handle)
        return self.inner.clear_timeout(handle)

    def __getattr__(self, name):
        return getattr(self.inner, name)


class TestDelayedTransitions:
    def test_transition_happens_once_the_delay_has_elapsed(self):
        clock = SimulatedClock()
        actor = started(_light_machine(), clock=clock)
        assert actor.snapshot.value == "green"

        clock.increment(500)
        assert actor.snapshot.value == "green"

        clock.increment(510)
        assert actor.snapshot.value == "yellow"

    def test_delays_chain_through_the_whole_cycle(self):
        clock = SimulatedClock()
        actor = started(_light_machine(), clock=clock)

        clock.increment(999)
        assert actor.snapshot.value == "green"
        clock.increment(1)
        assert actor.snapshot.value == "yellow"
        clock.increment(1000)
        assert actor.snapshot.value == "red"
        clock.increment(1000)
        assert actor.snapshot.value == "green"

    def test_fired_timer_is_not_cleared_when_its_state_is_exited(self):
        machine = create_machine({"initial": "green", "states": {"green": {"after": {1: "yellow"}}, "yellow": {}}})
        clock = _RecordingClock()
        actor = started(machine, clock=clock)

        # firing the timer exits `green`; its already-spent timer must not be cancelled
        clock.inner.increment(5)
        assert actor.snapshot.value == "yellow"
        assert clock.cleared == []

    def test_delayed_event_is_named_after_the_delay_and_state_id(self):
        # xstate lists green's transition under "xstate.after.1000.light.green"; sending that event
        # through the pure API must take the delayed transition
        machine = _light_machine()
        green, _ = machine.initial_transition()
        after, _ = machine.transition(green, {"type": "xstate.after.1000.light.green"})
        assert after.value == "yellow"

    def test_delay_from_a_nested_initial_state(self):
        machine = create_machine(
            {
                "initial": "nested",
                "states": {
                    "nested": {"initial": "wait", "states": {"wait": {"after": {10: "#end"}}}},
                    "end": {"id": "end", "type": "final"},
                },
            }
        )
        clock = SimulatedClock()
        completed = []
        actor = create_actor(machine, clock=clock)
        actor.subscribe(complete=lambda: completed.append(True))
        actor.start()

        clock.increment(9)
        assert completed == []
        clock.increment(1)
        assert completed == [True]
        assert actor.snapshot.status == "done"

    def test_relative_delayed_target_does_not_reenter_the_parent(self):
        actual = []
        machine = create_machine(
            {
                "initial": "one",
                "states": {
                    "one": {
                        "initial": "two",
                        "entry": lambda: actual.append("entered one"),
                        "states": {
                            "two": {"entry": lambda: actual.append("entered two")},
                            "three": {"entry": lambda: actual.append("entered three"), "always": "#end"},
                        },
                        "after": {10: ".three"},
                    },
                    "end": {"id": "end", "type": "final"},
                },
            }
        )
        clock = SimulatedClock()
        at_completion = []
        actor = create_actor(machine, clock=clock)
        actor.subscribe(complete=lambda: at_completion.append(list(actual)))
        actor.start()

        clock.increment(10)
        assert at_completion == [["entered one", "entered two", "entered three"]]

    def test_guarded_delayed_transition_does_not_leak_its_event(self):
        seen = []
        machine = create_machine(
            {
                "initial": "X",
                "states": {
                    "X": {"after": {1: [{"target": "Y", "guard": lambda: True}, {"target": "Z"}]}},
                    "Y": {"on": {"*": {"actions": lambda event: seen.append(event["type"])}}},
                    "Z": {},
                },
            }
        )
        clock = SimulatedClock()
        actor = started(machine, clock=clock)

        clock.increment(10)
        assert actor.snapshot.value == "Y"
        assert seen == []

    def test_delayed_transition_after_restoring_a_persisted_snapshot(self):
        def make_machine():
            return create_machine(
                {
                    "initial": "A",
                    "states": {"A": {"on": {"NEXT": "B"}}, "B": {"after": {1: "C"}}, "C": {"type": "final"}},
                }
            )

        first = started(make_machine())
        persisted = json.loads(json.dumps(first.snapshot.to_json()))

        clock = SimulatedClock()
        restored = started(make_machine(), snapshot=persisted, clock=clock)
        restored.send({"type": "NEXT"})
        assert restored.snapshot.value == "B"

        completed = []
        restored.subscribe(complete=lambda: completed.append(True))
        clock.increment(1)

        assert completed == [True]
        assert restored.snapshot.value == "C"


class TestDelayExpressions:
    def test_named_delay_computed_from_the_context(self):
        seen_contexts = []

        def my_delay(context):
            seen_contexts.append(context)
            return context["delay"]

        machine = create_machine(
            {
                "initial": "inactive",
                "context": {"delay": 500},
                "states": {"inactive": {"after": {"myDelay": "active"}}, "active": {}},
            },
            delays={"myDelay": my_delay},
        )
        clock = SimulatedClock()
        actor = started(machine, clock=clock)

        assert seen_contexts == [{"delay": 500}]
        assert actor.snapshot.value == "inactive"

        clock.increment(300)
        assert actor.snapshot.value == "inactive"

        clock.increment(200)
        assert actor.snapshot.value == "active"

    def test_named_delay_computed_from_the_event(self):
        seen_events = []

        def some_delay(event):
            seen_events.append(dict(event))
            return event["delay"]

        machine = create_machine(
            {
                "initial": "inactive",
                "states": {
                    "inactive": {"on": {"ACTIVATE": "active"}},
                    "active": {"after": {"someDelay": "inactive"}},
                },
            },
            delays={"someDelay": some_delay},
        )
        clock = SimulatedClock()
        actor = started(machine, clock=clock)

        actor.send({"type": "ACTIVATE", "delay": 500})

        assert seen_events == [{"type": "ACTIVATE", "delay": 500}]
        assert actor.snapshot.value == "active"

        clock.increment(300)
        assert actor.snapshot.value == "active"

        clock.increment(200)
        assert actor.snapshot.value == "inactive"

    def test_leaving_the_state_early_cancels_the_delay(self):
        machine = create_machine(
            {
                "initial": "waiting",
                "states": {
                    "waiting": {"after": {100: "timed_out"}, "on": {"GO": "working"}},
                    "working": {"on": {"BACK": "idle"}},
                    "idle": {},
                    "timed_out": {},
                },
            }
        )
        clock = SimulatedClock()
        actor = started(machine, clock=clock)
        clock.increment(50)
        actor.send({"type": "GO"})
        clock.increment(100)
        assert actor.snapshot.value == "working"


# A delayed event scheduled again under an id that is still pending, as xstate's scheduler does it: the first
# timer is not cleared, so both fire; `cancel` stops only the latest, and only while the id is still booked (the
# first timer to fire un-books it).


def _rescheduling_machine(fired, clock):
    return create_machine(
        {
            "on": {
                "SCHEDULE": {"actions": raise_(lambda event: {"type": "TICK", "n": event["n"]}, delay=100, id="t")},
                "CANCEL": {"actions": cancel("t")},
                "TICK": {"actions": lambda event: fired.append((event["n"], clock.now()))},
            }
        }
    )


def _reschedule_then_cancel_at(cancel_at):
    fired = []
    clock = SimulatedClock()
    actor = started(_rescheduling_machine(fired, clock), clock=clock)
    actor.send({"type": "SCHEDULE", "n": 1})
    clock.increment(50)
    actor.send({"type": "SCHEDULE", "n": 2})
    for now in range(50, 300, 10):
        if now == cancel_at:
            actor.send({"type": "CANCEL"})
        clock.increment(10)
    return fired


class TestRescheduledDelayedEvent:
    def test_both_timers_of_a_rescheduled_id_fire(self):
        assert _reschedule_then_cancel_at(None) == [(1, 100), (2, 150)]

    def test_cancel_stops_only_the_latest_timer_of_the_id(self):
        assert _reschedule_then_cancel_at(60) == [(1, 100)]

    def test_cancel_after_the_earlier_timer_fired_stops_nothing(self):
        assert _reschedule_then_cancel_at(120) == [(1, 100), (2, 150)]


def test_timers_due_at_the_same_moment_fire_in_the_order_their_actions_ran():
    # the parent's delayed raise runs before the spawn that starts the child and its `after`: it fires first
    got = []
    child = create_machine(
        {"initial": "c", "states": {"c": {"after": {100: {"actions": send_parent({"type": "CHILD"})}}}}}
    )
    machine = create_machine(
        {
            "initial": "idle",
            "states": {
                "idle": {"on": {"GO": "a"}},
                "a": {
                    "entry": [raise_({"type": "OWN"}, delay=100), spawn_child(child, id="kid")],
                    "on": {
                        "OWN": {"actions": lambda: got.append("OWN")},
                        "CHILD": {"actions": lambda: got.append("CHILD")},
                    },
                },
            },
        }
    )
    clock = SimulatedClock()
    actor = started(machine, clock=clock)
    actor.send({"type": "GO"})
    clock.increment(100)
    assert got == ["OWN", "CHILD"]
