"""Error handling in running actors: behaviour ported from xstate's core/test/errors.test.ts.

xstate "reports an error globally" by re-throwing it from a timer, so it lands in the host's uncaught-error handler.
Our counterpart (not specified in docs/statechart.md) is taken to be any of: a log record at ERROR level or above
(the actor's default logger is `logging`), `threading.excepthook`, or `sys.unraisablehook`. The `reports` fixture
below listens on all three, and only the message of the error is checked.
"""

import logging
import sys
import threading
import time

import pytest

from engine.core.statechart import (
    assign,
    create_actor,
    create_machine,
    emit,
    from_callback,
    from_promise,
)
from tests.statechart.helpers import wait_until


class Reports:
    """Texts of every error reported to the global channels while a test runs."""

    def __init__(self):
        self.texts = []

    def add(self, *parts):
        self.texts.append(" | ".join(str(p) for p in parts if p is not None))

    def matching(self, message):
        return [t for t in self.texts if message in t]

    def wait_for(self, message, count=1, timeout=1.0):
        deadline = time.monotonic() + timeout
        while len(self.matching(message)) < count and time.monotonic() < deadline:
            time.sleep(0.001)
        return self.matching(message)

    def settle(self, delay=0.05):
        time.sleep(delay)
        return list(self.texts)


class _ReportHandler(logging.Handler):
    def __init__(self, reports):
        super().__init__(level=logging.ERROR)
        self.reports = reports

    def emit(self, record):
        exc = record.exc_info[1] if record.exc_info else None
        self.reports.add(record.getMessage(), exc)


@pytest.fixture
def reports(monkeypatch):
    collected = Reports()
    handler = _ReportHandler(collected)
    root = logging.getLogger()
    root.addHandler(handler)
    monkeypatch.setattr(threading, "excepthook", lambda args: collected.add(args.exc_value))
    monkeypatch.setattr(sys, "unraisablehook", lambda unraisable: collected.add(unraisable.exc_value))
    yield collected
    root.removeHandler(handler)


def _two_state_machine(active_config=None):
    return create_machine(
        {
            "id": "machine",
            "initial": "initial",
            "context": {"count": 0},
            "states": {"initial": {"on": {"activate": "active"}}, "active": active_config or {}},
        }
    )


def _pending_callback_machine(message, *, on_error=None, on_done=None):
    """A machine whose initial state invokes a callback actor that raises `message` when it starts."""

    def explode():
        raise RuntimeError(message)

    invoke = {"src": from_callback(explode)}
    states = {"pending": {"invoke": invoke}}
    if on_error is not None:
        invoke["onError"] = on_error
        states["failed"] = {"type": "final"}
    if on_done is not None:
        invoke["onDone"] = on_done
        states["success"] = {"type": "final"}
    return create_machine({"initial": "pending", "states": states})


def _pending_promise_machine(message):
    def reject():
        raise RuntimeError(message)

    return create_machine(
        {
            "initial": "pending",
            "states": {
                "pending": {"invoke": {"src": from_promise(reject), "onDone": "success"}},
                "success": {"type": "final"},
            },
        }
    )


# --------------------------------------------------------------------------------------------------------------
# errors raised by subscribers
# --------------------------------------------------------------------------------------------------------------


def test_error_in_subscriber_is_reported_once_without_looping(reports):
    calls = []

    def failing_subscriber(snapshot):
        calls.append(snapshot.value)
        raise RuntimeError("no_infinite_loop_when_error_is_thrown_in_subscribe")

    actor = create_actor(_two_state_machine()).start()
    actor.subscribe(failing_subscriber)
    actor.send({"type": "activate"})

    assert calls == ["active"]
    assert len(reports.wait_for("no_infinite_loop_when_error_is_thrown_in_subscribe")) == 1


def test_error_in_subscriber_does_not_crash_the_actor(reports):
    did = []
    raised = []

    def fails_once(snapshot):
        if not raised:
            raised.append(True)
            raise RuntimeError("doesnt_crash_actor_when_error_is_thrown_in_subscribe")

    actor = create_actor(_two_state_machine({"on": {"do": {"actions": lambda: did.append(True)}}})).start()
    actor.subscribe(fails_once)
    actor.send({"type": "activate"})

    assert raised == [True]
    assert actor.snapshot.status == "active"
    assert reports.wait_for("doesnt_crash_actor_when_error_is_thrown_in_subscribe")

    actor.send({"type": "do"})
    assert did == [True]


def test_error_in_next_listener_does_not_reach_error_listener(reports):
    nexts = []
    errors = []

    def failing_next(snapshot):
        nexts.append(snapshot.value)
        raise RuntimeError("doesnt_notify_error_listener_when_error_is_thrown_in_subscribe")

    actor = create_actor(_two_state_machine()).start()
    actor.subscribe(next=failing_next, error=errors.append)
    actor.send({"type": "activate"})

    assert nexts == ["active"]
    assert errors == []
    assert reports.wait_for("doesnt_notify_error_listener_when_error_is_thrown_in_subscribe")
    assert actor.snapshot.status == "active"


# --------------------------------------------------------------------------------------------------------------
# errors raised by children
# --------------------------------------------------------------------------------------------------------------


def test_unhandled_error_starting_child_is_reported_globally(reports):
    machine = _pending_callback_machine("unhandled_sync_error_in_actor_start", on_done="success")

    actor = create_actor(machine).start()

    assert actor.snapshot.status == "error"
    assert reports.wait_for("unhandled_sync_error_in_actor_start")


def test_unhandled_promise_rejection_is_reported_globally_without_listener(reports):
    actor = create_actor(_pending_promise_machine("unhandled_rejection_in_promise_actor_without_error_listener"))
    actor.start()

    assert reports.wait_for("unhandled_rejection_in_promise_actor_without_error_listener")
    assert actor.snapshot.status == "error"


def test_unhandled_promise_rejection_goes_to_parent_error_listener():
    errors = []
    actor = create_actor(_pending_promise_machine("unhandled_rejection_in_promise_actor_with_parent_listener"))
    actor.subscribe(error=errors.append)
    actor.start()
    wait_until(lambda: errors)

    assert [str(e) for e in errors] == ["unhandled_rejection_in_promise_actor_with_parent_listener"]
    assert isinstance(errors[0], RuntimeError)
    assert actor.snapshot.error is errors[0]


def test_unhandled_promise_rejection_goes_to_grandparent_error_listener():
    child = _pending_promise_machine("unhandled_rejection_in_promise_actor_with_grandparent_listener")
    machine = create_machine(
        {
            "initial": "pending",
            "states": {"pending": {"invoke": {"src": child, "onDone": "success"}}, "success": {"type": "final"}},
        }
    )

    errors = []
    actor = create_actor(machine)
    actor.subscribe(error=errors.append)
    actor.start()
    wait_until(lambda: errors)

    assert [str(e) for e in errors] == ["unhandled_rejection_in_promise_actor_with_grandparent_listener"]
    assert actor.snapshot.status == "error"


def test_handled_error_starting_child_is_not_reported_globally(reports):
    machine = _pending_callback_machine("handled_sync_error_in_actor_start", on_error="failed")

    actor = create_actor(machine).start()

    assert actor.snapshot.value == "failed"
    reports.settle()
    assert reports.matching("handled_sync_error_in_actor_start") == []


def test_handled_child_error_is_reported_when_a_child_observer_lacks_error_listener(reports):
    machine = _pending_callback_machine("handled_sync_error_in_actor_start", on_error="failed")

    actor = create_actor(machine)
    child = list(actor.snapshot.children.values())[0]
    child.subscribe(error=lambda error: None)
    child.subscribe(lambda snapshot: None)
    actor.start()

    assert actor.snapshot.value == "failed"
    assert reports.wait_for("handled_sync_error_in_actor_start")


def test_handled_child_error_is_not_reported_when_all_child_observers_listen_for_errors(reports):
    machine = _pending_callback_machine("handled_sync_error_in_actor_start", on_error="failed")

    actor = create_actor(machine)
    child = list(actor.snapshot.children.values())[0]
    child_errors = []
    child.subscribe(error=child_errors.append)
    child.subscribe(error=child_errors.append)
    actor.start()

    assert actor.snapshot.value == "failed"
    assert [str(e) for e in child_errors] == ["handled_sync_error_in_actor_start"] * 2
    reports.settle()
    assert reports.matching("handled_sync_error_in_actor_start") == []


def test_unhandled_child_error_is_reported_twice_when_child_and_root_lack_listeners(reports):
    machine = _pending_callback_machine("handled_sync_error_in_actor_start")

    actor = create_actor(machine)
    child = list(actor.snapshot.children.values())[0]
    child.subscribe(error=lambda error: None)
    child.subscribe(lambda snapshot: None)
    actor.start()

    assert len(reports.wait_for("handled_sync_error_in_actor_start", count=2)) == 2
    reports.settle()
    assert len(reports.matching("handled_sync_error_in_actor_start")) == 2


def test_handled_child_error_does_not_reach_error_listener():
    machine = _pending_callback_machine("handled_sync_error_in_actor_start", on_error="failed")

    errors = []
    actor = create_actor(machine)
    actor.subscribe(error=errors.append)
    actor.start()

    assert errors == []
    assert actor.snapshot.status == "done"


def test_unhandled_child_error_reaches_root_error_listener():
    machine = _pending_callback_machine(
        "unhandled_sync_error_in_actor_start_with_root_error_listener", on_done="success"
    )

    errors = []
    actor = create_actor(machine)
    actor.subscribe(error=errors.append)
    actor.start()

    assert [str(e) for e in errors] == ["unhandled_sync_error_in_actor_start_with_root_error_listener"]
    assert isinstance(errors[0], RuntimeError)


def test_unhandled_child_error_is_not_reported_globally_when_root_listens(reports):
    machine = _pending_callback_machine(
        "unhandled_sync_error_in_actor_start_with_root_error_listener", on_done="success"
    )

    errors = []
    actor = create_actor(machine)
    actor.subscribe(error=errors.append)
    actor.start()

    assert len(errors) == 1
    reports.settle()
    assert reports.matching("unhandled_sync_error_in_actor_start_with_root_error_listener") == []


def test_handled_child_error_leaves_parent_working():
    did = []
    machine = create_machine(
        {
            "initial": "pending",
            "states": {
                "pending": {
                    "invoke": {
                        "src": from_callback(_raiser("handled_sync_error_in_actor_start")),
                        "onError": "failed",
                    }
                },
                "failed": {"on": {"do": {"actions": lambda: did.append(True)}}},
            },
        }
    )

    actor = create_actor(machine)
    actor.start()

    assert actor.snapshot.status == "active"
    actor.send({"type": "do"})
    assert did == [True]


def test_unhandled_child_error_crashes_parent(reports):
    machine = _pending_callback_machine("unhandled_sync_error_in_actor_start")

    actor = create_actor(machine)
    actor.start()

    assert actor.snapshot.status == "error"
    assert str(actor.snapshot.error) == "unhandled_sync_error_in_actor_start"
    assert reports.wait_for("unhandled_sync_error_in_actor_start")


def _raiser(message):
    def explode():
        raise RuntimeError(message)

    return explode


# --------------------------------------------------------------------------------------------------------------
# errors raised by error listeners / partial observers
# --------------------------------------------------------------------------------------------------------------


def test_error_raised_by_error_listener_is_reported_globally(reports):
    machine = _pending_callback_machine("handled_sync_error_in_actor_start")

    def failing_listener(error):
        raise RuntimeError("error_thrown_by_error_listener")

    actor = create_actor(machine)
    actor.subscribe(error=failing_listener)
    actor.start()

    assert actor.snapshot.status == "error"
    assert reports.wait_for("error_thrown_by_error_listener")


def test_error_is_reported_globally_when_some_observer_lacks_error_listener(reports):
    machine = _pending_callback_machine("error_thrown_when_not_every_observer_comes_with_an_error_listener")

    listened = []
    actor = create_actor(machine)
    actor.subscribe(error=listened.append)
    actor.subscribe(lambda snapshot: None)
    actor.start()

    assert len(listened) == 1
    assert reports.wait_for("error_thrown_when_not_every_observer_comes_with_an_error_listener")


def test_listener_error_and_uncaught_error_are_both_reported_in_order(reports):
    original = "error_thrown_when_not_every_observer_comes_with_an_error_listener"
    machine = _pending_callback_machine(original)

    def failing_listener(error):
        raise RuntimeError("error_thrown_by_error_listener")

    actor = create_actor(machine)
    actor.subscribe(error=failing_listener)
    actor.subscribe(lambda snapshot: None)
    actor.start()

    reports.wait_for(original)
    reports.wait_for("error_thrown_by_error_listener")
    reports.settle()
    relevant = [
        "listener" if "error_thrown_by_error_listener" in t else "original"
        for t in reports.texts
        if "error_thrown_by_error_listener" in t or original in t
    ]
    assert relevant == ["listener", "original"]


# --------------------------------------------------------------------------------------------------------------
# errors raised by the machine's own actions and guards
# --------------------------------------------------------------------------------------------------------------


def test_error_in_initial_custom_entry_action_errors_the_actor():
    machine = create_machine({"entry": _raiser("error_thrown_in_initial_entry_action")})

    errors = []
    actor = create_actor(machine)
    actor.subscribe(error=errors.append)
    actor.start()

    snapshot = actor.snapshot
    assert snapshot.status == "error"
    assert isinstance(snapshot.error, RuntimeError)
    assert str(snapshot.error) == "error_thrown_in_initial_entry_action"
    assert errors == [snapshot.error]


def test_error_resolving_initial_assign_errors_the_actor_before_start():
    def bad_update():
        raise RuntimeError("error_thrown_when_resolving_initial_entry_action")

    machine = create_machine({"entry": assign(bad_update)})

    actor = create_actor(machine)
    snapshot = actor.snapshot
    assert snapshot.status == "error"
    assert str(snapshot.error) == "error_thrown_when_resolving_initial_entry_action"

    errors = []
    actor.subscribe(error=errors.append)
    actor.start()

    assert [str(e) for e in errors] == ["error_thrown_when_resolving_initial_entry_action"]


def test_error_in_custom_entry_action_while_transitioning_errors_the_actor():
    machine = create_machine(
        {
            "initial": "a",
            "states": {
                "a": {"on": {"NEXT": "b"}},
                "b": {"entry": _raiser("error_thrown_in_a_custom_entry_action_when_transitioning")},
            },
        }
    )

    errors = []
    actor = create_actor(machine)
    actor.subscribe(error=errors.append)
    actor.start()
    assert actor.snapshot.status == "active"
    actor.send({"type": "NEXT"})

    snapshot = actor.snapshot
    assert snapshot.status == "error"
    assert str(snapshot.error) == "error_thrown_in_a_custom_entry_action_when_transitioning"
    assert errors == [snapshot.error]


def test_initial_actions_after_a_failing_one_do_not_run():
    ran = []
    machine = create_machine({"entry": [_raiser("error_thrown_in_initial_entry_action"), lambda: ran.append(True)]})

    actor = create_actor(machine)
    actor.subscribe(error=lambda error: None)
    actor.start()

    assert ran == []
    assert actor.snapshot.status == "error"


def test_child_whose_initial_state_errors_errors_the_parent():
    # xstate's case builds a logic whose initial snapshot is already errored; a child machine whose initial
    # assign raises is the same situation expressed with our API
    def bad_update():
        raise RuntimeError("immediate error!")

    failing_child = create_machine({"entry": assign(bad_update)})
    machine = create_machine({"invoke": {"src": "failure"}}, actors={"failure": failing_child})

    actor = create_actor(machine)
    actor.subscribe(error=lambda error: None)
    actor.start()

    snapshot = actor.snapshot
    assert snapshot.status == "error"
    assert str(snapshot.error) == "immediate error!"


def test_child_whose_initial_state_errors_can_be_handled_with_on_error():
    def bad_update():
        raise RuntimeError("immediate error!")

    failing_child = create_machine({"entry": assign(bad_update)})
    machine = create_machine(
        {
            "initial": "x",
            "states": {"x": {"invoke": {"src": failing_child, "onError": "y"}}, "y": {}},
        }
    )

    actor = create_actor(machine)
    actor.subscribe(error=lambda error: None)
    actor.start()

    assert actor.snapshot.status == "active"
    assert actor.snapshot.value == "y"


def test_guard_that_raises_errors_the_actor_with_context_in_the_message():
    def bad_guard():
        raise RuntimeError("error_thrown_in_guard_when_transitioning")

    machine = create_machine(
        {"initial": "a", "states": {"a": {"on": {"NEXT": {"guard": bad_guard, "target": "b"}}}, "b": {}}}
    )

    errors = []
    actor = create_actor(machine)
    actor.subscribe(error=errors.append)
    actor.start()
    actor.send({"type": "NEXT"})

    snapshot = actor.snapshot
    assert snapshot.status == "error"
    message = str(snapshot.error)
    assert "error_thrown_in_guard_when_transitioning" in message
    assert "'NEXT'" in message
    assert "(machine).a" in message
    assert errors == [snapshot.error]


def test_events_sent_after_an_error_are_ignored():
    did = []

    def bad_guard():
        raise RuntimeError("guard_failed")

    machine = create_machine(
        {
            "initial": "a",
            "states": {
                "a": {
                    "on": {
                        "NEXT": {"guard": bad_guard, "target": "b"},
                        "OTHER": {"actions": lambda: did.append(True)},
                    }
                },
                "b": {},
            },
        }
    )

    actor = create_actor(machine)
    actor.subscribe(error=lambda error: None)
    actor.start()
    actor.send({"type": "NEXT"})
    failed = actor.snapshot
    actor.send({"type": "OTHER"})

    assert did == []
    assert actor.snapshot.status == "error"
    assert actor.snapshot.error is failed.error


def test_emit_listener_error_does_not_stop_the_actor(reports):
    machine = create_machine({"on": {"someEvent": {"actions": emit({"type": "emitted", "foo": "bar"})}}})

    actor = create_actor(machine).start()
    raised = []

    def failing_handler(event):
        raised.append(event["type"])
        raise RuntimeError("oops")

    actor.on("emitted", failing_handler)
    actor.send({"type": "someEvent"})
    reports.settle(0.01)

    assert raised == ["emitted"]
    assert actor.snapshot.status == "active"

    received = []
    actor.on("emitted", lambda event: received.append(event))
    actor.send({"type": "someEvent"})

    assert [e["foo"] for e in received] == ["bar"]
    assert actor.snapshot.status == "active"
