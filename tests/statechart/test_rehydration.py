"""Restoring actors from persisted snapshots: behaviour ported from xstate's core/test/rehydration.test.ts.

Persisted snapshots go through real JSON text where xstate's test does, so nothing but plain data survives.
Not ported: "should continue syncing snapshots" (needs fromObservable / an RxJS subject).
"""

import asyncio
import json

import pytest

from engine.core.statechart import (
    SimulatedClock,
    assign,
    create_actor,
    create_machine,
    from_callback,
    from_promise,
    raise_,
    send_to,
)
from tests.statechart.helpers import wait_until


def through_json(data):
    return json.loads(json.dumps(data))


class TestUsingPersistedState:
    def test_has_tag_works_right_after_restore(self):
        machine = create_machine({"initial": "a", "states": {"a": {"tags": "foo"}}})

        actor = create_actor(machine).start()
        persisted = json.dumps(actor.get_persisted_snapshot())
        actor.stop()

        restored = create_actor(machine, snapshot=json.loads(persisted)).start()

        assert restored.snapshot.has_tag("foo") is True
        assert restored.snapshot.has_tag("bar") is False

    def test_stopping_right_after_restore_runs_no_exit_actions(self):
        calls = []
        machine = create_machine(
            {
                "exit": lambda: calls.append("root"),
                "initial": "a",
                "states": {"a": {"exit": lambda: calls.append("a")}},
            }
        )

        actor = create_actor(machine).start()
        persisted = json.dumps(actor.get_persisted_snapshot())
        actor.stop()
        calls.clear()

        create_actor(machine, snapshot=json.loads(persisted)).start().stop()

        assert calls == []

    def test_can_works_right_after_restore(self):
        machine = create_machine({"on": {"FOO": {"actions": lambda: None}}})

        persisted = json.dumps(create_actor(machine).start().snapshot.to_json())
        restored = create_actor(machine, snapshot=json.loads(persisted)).start()

        assert restored.snapshot.can({"type": "FOO"}) is True
        assert restored.snapshot.can({"type": "BAR"}) is False


class TestUsingStateValue:
    def test_has_tag_works_on_resolved_state(self):
        machine = create_machine(
            {"initial": "inactive", "states": {"inactive": {"on": {"NEXT": "active"}}, "active": {"tags": "foo"}}}
        )

        active = machine.resolve_state({"value": "active"})
        actor = create_actor(machine, snapshot=active)
        actor.start()

        assert actor.snapshot.value == "active"
        assert actor.snapshot.has_tag("foo") is True

    def test_stopping_an_actor_started_from_resolved_state_runs_no_exit_actions(self):
        calls = []
        machine = create_machine(
            {
                "exit": lambda: calls.append("root"),
                "initial": "inactive",
                "states": {
                    "inactive": {"on": {"NEXT": "active"}},
                    "active": {"exit": lambda: calls.append("active")},
                },
            }
        )

        create_actor(machine, snapshot=machine.resolve_state({"value": "active"})).start().stop()

        assert calls == []

    def test_unknown_top_level_value_is_rejected(self):
        machine = create_machine({"initial": "valid", "states": {"valid": {}}})

        with pytest.raises(ValueError, match="invalid"):
            machine.resolve_state({"value": "invalid"})

    def test_unknown_nested_value_is_rejected(self):
        machine = create_machine(
            {"initial": "parent", "states": {"parent": {"initial": "valid", "states": {"valid": {}}}}}
        )

        with pytest.raises(ValueError, match="invalid"):
            machine.resolve_state({"value": {"parent": "invalid"}})


def test_entry_actions_are_not_replayed_on_restore():
    entries = []
    machine = create_machine({"entry": lambda: entries.append(True)})

    actor = create_actor(machine).start()
    assert len(entries) == 1
    persisted = actor.get_persisted_snapshot()
    actor.stop()

    create_actor(machine, snapshot=persisted).start()

    assert len(entries) == 1


def test_rehydrated_pending_child_can_be_stopped_by_leaving_its_state():
    async def eleven():
        await asyncio.sleep(0.01)
        return 11

    machine = create_machine(
        {
            "initial": "a",
            "states": {
                "a": {"invoke": {"src": from_promise(eleven), "onDone": "b"}, "on": {"NEXT": "c"}},
                "b": {},
                "c": {},
            },
        }
    )

    async def scenario():
        actor = create_actor(machine).start()
        persisted = actor.get_persisted_snapshot()
        actor.stop()

        restored = create_actor(machine, snapshot=persisted).start()
        restored.send({"type": "NEXT"})
        assert restored.snapshot.value == "c"
        assert restored.snapshot.children == {}

        # the restored run of the promise must not move the machine any more
        await asyncio.sleep(0.03)
        assert restored.snapshot.value == "c"
        assert restored.snapshot.status == "active"

    asyncio.run(scenario())


def test_rehydrated_active_child_is_registered_in_the_system():
    def make_context(spawn):
        spawn("foo", system_id="mySystemId")
        return {}

    machine = create_machine({"context": make_context}, actors={"foo": create_machine({})})

    actor = create_actor(machine).start()
    assert actor.system.get("mySystemId") is not None
    persisted = actor.get_persisted_snapshot()
    actor.stop()

    restored = create_actor(machine, snapshot=persisted).start()

    assert restored.system.get("mySystemId") is not None


def test_rehydrated_done_child_is_not_registered_in_the_system():
    def make_context(spawn):
        spawn("foo", system_id="mySystemId")
        return {}

    machine = create_machine({"context": make_context}, actors={"foo": create_machine({"type": "final"})})

    actor = create_actor(machine).start()
    persisted = actor.get_persisted_snapshot()
    actor.stop()

    restored = create_actor(machine, snapshot=persisted).start()

    assert restored.system.get("mySystemId") is None


def test_rehydrated_done_child_does_not_notify_parent_again():
    events = []

    def make_context(spawn):
        spawn("foo", system_id="mySystemId")
        return {}

    machine = create_machine(
        {"context": make_context, "on": {"*": {"actions": lambda event: events.append(event["type"])}}},
        actors={"foo": create_machine({"type": "final"})},
    )

    actor = create_actor(machine).start()
    persisted = actor.get_persisted_snapshot()
    actor.stop()
    events.clear()

    create_actor(machine, snapshot=persisted).start()

    assert events == []


def test_rehydrated_children_are_persisted_again_with_their_src():
    async def forty_two():
        await asyncio.sleep(0.01)
        return 42

    machine = create_machine({"invoke": {"src": "foo"}}, actors={"foo": from_promise(forty_two)})

    async def scenario():
        actor = create_actor(machine).start()
        restored = create_actor(machine, snapshot=actor.get_persisted_snapshot()).start()

        children = restored.get_persisted_snapshot()["children"]
        assert len(children) == 1
        assert list(children.values())[0]["src"] == "foo"
        actor.stop()
        restored.stop()

    asyncio.run(scenario())


def test_rehydrated_final_state_completes_on_start():
    machine = create_machine({"initial": "foo", "states": {"foo": {"on": {"NEXT": "bar"}}, "bar": {"type": "final"}}})

    actor = create_actor(machine).start()
    actor.send({"type": "NEXT"})
    persisted = actor.get_persisted_snapshot()

    completions = []
    restored = create_actor(machine, snapshot=persisted)
    restored.subscribe(complete=lambda: completions.append(True))
    assert completions == []
    restored.start()

    assert completions == [True]
    assert restored.snapshot.status == "done"


def _failing_promise_machine(on_error=None):
    def failure():
        raise RuntimeError("failure")

    invoke = {"src": "failure"}
    if on_error is not None:
        invoke["onError"] = {"actions": on_error}
    return create_machine({"invoke": invoke}, actors={"failure": from_promise(failure)})


def test_rehydrated_error_state_notifies_error_listener_on_start():
    machine = _failing_promise_machine()

    actor = create_actor(machine)
    actor.subscribe(error=lambda error: None)
    actor.start()
    wait_until(lambda: actor.snapshot.status == "error")
    assert actor.snapshot.status == "error"
    persisted = actor.get_persisted_snapshot()

    errors = []
    restored = create_actor(machine, snapshot=persisted)
    restored.subscribe(error=errors.append)
    restored.start()

    assert len(errors) == 1
    assert restored.snapshot.status == "error"


def test_rehydrating_does_not_notify_parent_of_child_error_again():
    handled = []
    machine = _failing_promise_machine(on_error=lambda event: handled.append(event["type"]))

    actor = create_actor(machine)
    actor.start()
    wait_until(lambda: handled)
    assert handled == ["xstate.error.actor.0.(machine)"]
    persisted = actor.get_persisted_snapshot()
    handled.clear()

    create_actor(machine, snapshot=persisted).start()

    assert handled == []


def test_grandchild_state_is_restored_deep_in_the_tree():
    grandchild = create_machine(
        {"context": {"count": 0}, "on": {"INC": {"actions": assign({"count": lambda context: context["count"] + 1})}}}
    )
    child = create_machine(
        {
            "invoke": {"src": "grandchild", "id": "grandchild"},
            "on": {"INC": {"actions": send_to("grandchild", {"type": "INC"})}},
        },
        actors={"grandchild": grandchild},
    )
    machine = create_machine(
        {"invoke": {"src": "child", "id": "child"}, "on": {"INC": {"actions": send_to("child", {"type": "INC"})}}},
        actors={"child": child},
    )

    actor = create_actor(machine).start()
    actor.send({"type": "INC"})

    restored = create_actor(machine, snapshot=through_json(actor.get_persisted_snapshot()))
    child_snapshot = restored.snapshot.children["child"].get_snapshot()

    assert child_snapshot.children["grandchild"].get_snapshot().context["count"] == 1


# --------------------------------------------------------------------------------------------------------------
# resolve_snapshot round trips (same behaviour as above, through machine.resolve_snapshot and to_json)
# --------------------------------------------------------------------------------------------------------------


def test_resolve_snapshot_round_trip_keeps_value_context_and_children():
    grandchild = create_machine(
        {"context": {"count": 0}, "on": {"INC": {"actions": assign({"count": lambda context: context["count"] + 1})}}}
    )
    machine = create_machine(
        {
            "initial": "a",
            "context": {"n": 1},
            "states": {
                "a": {
                    "invoke": {"src": "grandchild", "id": "counter"},
                    "on": {"INC": {"actions": send_to("counter", {"type": "INC"})}},
                }
            },
        },
        actors={"grandchild": grandchild},
    )

    actor = create_actor(machine).start()
    actor.send({"type": "INC"})
    actor.send({"type": "INC"})

    restored_snapshot = machine.resolve_snapshot(through_json(actor.get_persisted_snapshot()))
    restored = create_actor(machine, snapshot=restored_snapshot).start()

    assert restored.snapshot.value == "a"
    assert restored.snapshot.context == {"n": 1}
    assert restored.snapshot.children["counter"].get_snapshot().context == {"count": 2}
    restored.send({"type": "INC"})
    assert restored.snapshot.children["counter"].get_snapshot().context == {"count": 3}
    # the original actor is independent of the restored one
    assert actor.snapshot.children["counter"].get_snapshot().context == {"count": 2}


def test_restored_callback_child_is_restarted_and_stopped_when_its_state_exits():
    log = []

    def start_child():
        log.append("start")
        return lambda: log.append("stop")

    machine = create_machine(
        {
            "initial": "a",
            "states": {"a": {"invoke": {"id": "cb", "src": from_callback(start_child)}, "on": {"NEXT": "b"}}, "b": {}},
        }
    )

    actor = create_actor(machine).start()
    persisted = through_json(actor.get_persisted_snapshot())
    actor.stop()
    assert log == ["start", "stop"]
    log.clear()

    restored = create_actor(machine, snapshot=persisted).start()
    assert "cb" in restored.snapshot.children
    restored.send({"type": "NEXT"})

    assert restored.snapshot.value == "b"
    assert "cb" not in restored.snapshot.children
    # the restored callback runs again, then is disposed when its state exits
    assert log == ["start", "stop"]


# Timers are part of our persisted snapshot (docs/statechart.md: to_json has "timers"); xstate keeps them in the
# system's scheduler instead. Whether the restored timer keeps its remaining time or restarts, it must fire no
# earlier than the remaining 600 ms and no later than the full delay.


def test_pending_delayed_transition_survives_persistence():
    machine = create_machine({"initial": "a", "states": {"a": {"after": {1000: "b"}}, "b": {}}})

    clock = SimulatedClock()
    actor = create_actor(machine, clock=clock).start()
    clock.increment(400)
    persisted = through_json(actor.get_persisted_snapshot())
    actor.stop()

    clock2 = SimulatedClock()
    restored = create_actor(machine, snapshot=persisted, clock=clock2).start()
    assert restored.snapshot.value == "a"
    clock2.increment(599)
    assert restored.snapshot.value == "a"
    clock2.increment(401)

    assert restored.snapshot.value == "b"


def test_delayed_transition_in_child_survives_persistence():
    child = create_machine({"initial": "a", "states": {"a": {"after": {100: "b"}}, "b": {"type": "final"}}})
    machine = create_machine(
        {
            "initial": "waiting",
            "states": {"waiting": {"invoke": {"id": "kid", "src": child, "onDone": "done"}}, "done": {}},
        }
    )

    clock = SimulatedClock()
    actor = create_actor(machine, clock=clock).start()
    persisted = through_json(actor.get_persisted_snapshot())
    actor.stop()

    clock2 = SimulatedClock()
    restored = create_actor(machine, snapshot=persisted, clock=clock2).start()
    assert restored.snapshot.children["kid"].get_snapshot().value == "a"
    clock2.increment(99)
    assert restored.snapshot.value == "waiting"
    clock2.increment(1)

    assert restored.snapshot.value == "done"


def test_resolve_snapshot_keeps_pending_delayed_raise():
    machine = create_machine(
        {
            "initial": "a",
            "states": {
                "a": {"entry": raise_({"type": "LATER"}, delay=50), "on": {"LATER": "b"}},
                "b": {},
            },
        }
    )

    clock = SimulatedClock()
    actor = create_actor(machine, clock=clock).start()
    snapshot = machine.resolve_snapshot(through_json(actor.get_persisted_snapshot()))
    actor.stop()

    clock2 = SimulatedClock()
    restored = create_actor(machine, snapshot=snapshot, clock=clock2).start()
    clock2.increment(49)
    assert restored.snapshot.value == "a"
    clock2.increment(1)

    assert restored.snapshot.value == "b"
