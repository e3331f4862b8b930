"""Invoked actors: behaviour ported from xstate's core/test/invoke.test.ts.

Child machines, promise actors (plain functions, coroutines and other awaitables), callback actors, transition
actors, onDone/onError/onSnapshot routing, and children being stopped when their invoking state exits.

Not ported: the "with observables" and "with event observables" groups (no fromObservable/fromEventObservable in
our API), and "should work with actor logic" (a raw ActorLogic object; "with transition functions" covers the same
behaviour through from_transition).
"""

import asyncio
import itertools
import json
import time

import pytest

from engine.core.statechart import (
    SimulatedClock,
    assign,
    create_actor,
    create_machine,
    forward_to,
    from_callback,
    from_promise,
    from_transition,
    raise_,
    send_parent,
    send_to,
)

USER = {"name": "David"}

# How a promise actor produces its result: a plain return/raise, a coroutine, or a non-coroutine awaitable
# (the counterpart of xstate's Promise / PromiseLike split).
PROMISE_KINDS = ["sync", "coroutine", "awaitable"]


class _Deferred:
    """An awaitable that is not a coroutine: it yields to the loop once, then computes its result."""

    def __init__(self, produce, delay=0):
        self._produce = produce
        self._delay = delay

    def __await__(self):
        yield from asyncio.sleep(self._delay).__await__()
        return self._produce()


def promise_logic(kind, compute):
    """from_promise logic whose outcome is `compute(input)` (a value, or the exception it raises)."""
    if kind == "sync":

        def run_now(input):
            return compute(input)

        return from_promise(run_now)
    if kind == "coroutine":

        async def run_later(input):
            await asyncio.sleep(0)
            return compute(input)

        return from_promise(run_later)

    def run_awaitable(input):
        return _Deferred(lambda: compute(input))

    return from_promise(run_awaitable)


async def _wait_blocking(condition, timeout=2.0):
    deadline = time.monotonic() + timeout
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.001)


async def _wait_in_loop(condition, timeout=2.0):
    deadline = time.monotonic() + timeout
    while not condition() and time.monotonic() < deadline:
        await asyncio.sleep(0.001)


def run_scenario(kind, scenario):
    """Run `async scenario(wait)`.

    For the "sync" kind no event loop exists at all: the coroutine is driven by hand and must never suspend
    (its `wait` polls by sleeping the thread). Other kinds run inside `asyncio.run`.
    """
    if kind == "sync":
        coro = scenario(_wait_blocking)
        try:
            coro.send(None)
        except StopIteration:
            return
        coro.close()
        raise AssertionError("a scenario without an event loop must not suspend")
    asyncio.run(asyncio.wait_for(scenario(_wait_in_loop), timeout=10))


class Observer:
    """Records everything an actor reports to its subscribers."""

    def __init__(self):
        self.snapshots = []
        self.errors = []
        self.completions = 0

    def next(self, snapshot):
        self.snapshots.append(snapshot)

    def error(self, error):
        self.errors.append(error)

    def complete(self):
        self.completions += 1

    def attach(self, actor):
        actor.subscribe(next=self.next, error=self.error, complete=self.complete)
        return self


def _parent_of(ref):
    parent = getattr(ref, "parent", None)
    return parent if parent is not None else getattr(ref, "_parent", None)


# --------------------------------------------------------------------------------------------------------------
# top-level "invoke" cases
# --------------------------------------------------------------------------------------------------------------


def test_child_can_reply_to_parent_with_several_events_in_one_step():
    child = create_machine(
        {
            "id": "child",
            "initial": "init",
            "states": {
                "init": {
                    "on": {
                        "FORWARD_DEC": {
                            "actions": [
                                send_parent({"type": "DEC"}),
                                send_parent({"type": "DEC"}),
                                send_parent({"type": "DEC"}),
                            ]
                        }
                    }
                }
            },
        }
    )
    parent = create_machine(
        {
            "id": "parent",
            "context": {"count": 0},
            "initial": "start",
            "states": {
                "start": {
                    "invoke": {"src": "child", "id": "someService"},
                    "always": {"target": "stop", "guard": lambda context: context["count"] == -3},
                    "on": {
                        "DEC": {"actions": assign({"count": lambda context: context["count"] - 1})},
                        "FORWARD_DEC": {"actions": send_to("someService", {"type": "FORWARD_DEC"})},
                    },
                },
                "stop": {"type": "final"},
            },
        },
        actors={"child": child},
    )

    actor = create_actor(parent).start()
    actor.send({"type": "FORWARD_DEC"})

    assert actor.snapshot.context == {"count": -3}
    assert actor.snapshot.value == "stop"
    assert actor.snapshot.status == "done"


def test_invoked_child_machine_with_input_and_output_reaches_on_done():
    def user_is_known(context):
        return context["userId"] is not None

    child = create_machine(
        {
            "id": "fetch",
            "context": lambda input: {"userId": input["userId"]},
            "initial": "pending",
            "states": {
                "pending": {
                    "entry": raise_({"type": "RESOLVE", "user": USER}),
                    "on": {"RESOLVE": {"target": "success", "guard": user_is_known}},
                },
                "success": {"type": "final", "entry": assign({"user": lambda event: event["user"]})},
                "failure": {"entry": send_parent({"type": "REJECT"})},
            },
            "output": lambda context: {"user": context.get("user")},
        }
    )
    machine = create_machine(
        {
            "id": "fetcher",
            "initial": "idle",
            "context": {"selectedUserId": "42", "user": None},
            "states": {
                "idle": {"on": {"GO_TO_WAITING": "waiting"}},
                "waiting": {
                    "invoke": {
                        "src": child,
                        "input": lambda context: {"userId": context["selectedUserId"]},
                        "onDone": {
                            "target": "received",
                            "guard": lambda event: event["output"]["user"]["name"] == "David",
                        },
                    }
                },
                "received": {"type": "final"},
            },
        }
    )

    actor = create_actor(machine)
    seen = Observer().attach(actor)
    actor.start()
    actor.send({"type": "GO_TO_WAITING"})

    assert seen.completions == 1
    assert actor.snapshot.value == "received"


def test_invoked_child_machine_without_input_reaches_on_done():
    child = create_machine(
        {
            "initial": "pending",
            "states": {
                "pending": {"entry": raise_({"type": "RESOLVE"}), "on": {"RESOLVE": {"target": "success"}}},
                "success": {"type": "final"},
            },
        }
    )
    machine = create_machine(
        {
            "initial": "idle",
            "states": {
                "idle": {"on": {"GO_TO_WAITING": "waiting"}},
                "waiting": {"invoke": {"src": child, "onDone": "received"}},
                "received": {"type": "final"},
            },
        }
    )

    actor = create_actor(machine)
    seen = Observer().attach(actor)
    actor.start()
    assert seen.completions == 0
    actor.send({"type": "GO_TO_WAITING"})

    assert seen.completions == 1
    assert actor.snapshot.status == "done"


def test_inline_child_machine_can_send_to_parent_on_entry():
    machine = create_machine(
        {
            "id": "machine-invoke",
            "initial": "pending",
            "states": {
                "pending": {
                    "invoke": {
                        "src": create_machine(
                            {
                                "id": "child",
                                "initial": "sending",
                                "states": {"sending": {"entry": send_parent({"type": "SUCCESS", "data": 42})}},
                            }
                        )
                    },
                    "on": {"SUCCESS": {"target": "success", "guard": lambda event: event["data"] == 42}},
                },
                "success": {"type": "final"},
            },
        }
    )

    actor = create_actor(machine)
    seen = Observer().attach(actor)
    actor.start()

    assert seen.completions == 1
    assert actor.snapshot.value == "success"


def test_deeply_nested_invoke_reaches_root_handler():
    machine = create_machine(
        {
            "id": "parent",
            "initial": "a",
            "states": {
                "a": {
                    "initial": "b",
                    "states": {
                        "b": {
                            "invoke": {
                                "src": create_machine(
                                    {
                                        "id": "child",
                                        "initial": "sending",
                                        "states": {"sending": {"entry": send_parent({"type": "SUCCESS", "data": 42})}},
                                    }
                                )
                            }
                        }
                    },
                },
                "success": {"id": "success", "type": "final"},
            },
            "on": {"SUCCESS": {"target": ".success", "guard": lambda event: event["data"] == 42}},
        }
    )

    actor = create_actor(machine)
    seen = Observer().attach(actor)
    actor.start()

    assert seen.completions == 1
    assert actor.snapshot.value == "success"


def test_provide_replaces_the_invoked_child_logic():
    quiet_child = create_machine({"id": "child", "initial": "init", "states": {"init": {}}})
    parent = create_machine(
        {
            "id": "parent",
            "context": {"count": 0},
            "initial": "start",
            "states": {
                "start": {"invoke": {"src": "child", "id": "someService"}, "on": {"STOP": "stop"}},
                "stop": {"type": "final"},
            },
        },
        actors={"child": quiet_child},
    )
    loud_child = create_machine(
        {"id": "child", "initial": "init", "states": {"init": {"entry": [send_parent({"type": "STOP"})]}}}
    )

    # the original keeps its own child
    untouched = create_actor(parent).start()
    assert untouched.snapshot.value == "start"

    actor = create_actor(parent.provide(actors={"child": loud_child}))
    seen = Observer().attach(actor)
    actor.start()

    assert seen.completions == 1
    assert actor.snapshot.value == "stop"


# --------------------------------------------------------------------------------------------------------------
# parent to child
# --------------------------------------------------------------------------------------------------------------


def _next_then_notify_child():
    return create_machine(
        {
            "id": "child",
            "initial": "one",
            "states": {"one": {"on": {"NEXT": "two"}}, "two": {"entry": send_parent({"type": "NEXT"})}},
        }
    )


class TestParentToChild:
    def test_root_level_invoke_receives_events_from_entry_actions(self):
        machine = create_machine(
            {
                "id": "parent",
                "initial": "one",
                "invoke": {"id": "foo-child", "src": _next_then_notify_child()},
                "states": {
                    "one": {"entry": send_to("foo-child", {"type": "NEXT"}), "on": {"NEXT": "two"}},
                    "two": {"type": "final"},
                },
            }
        )

        actor = create_actor(machine)
        seen = Observer().attach(actor)
        actor.start()

        assert seen.completions == 1
        assert actor.snapshot.value == "two"

    def test_state_level_invoke_receives_events_from_entry_actions_of_same_state(self):
        machine = create_machine(
            {
                "id": "parent",
                "initial": "one",
                "states": {
                    "one": {
                        "invoke": {"id": "foo-child", "src": _next_then_notify_child()},
                        "entry": send_to("foo-child", {"type": "NEXT"}),
                        "on": {"NEXT": "two"},
                    },
                    "two": {"type": "final"},
                },
            }
        )

        actor = create_actor(machine)
        seen = Observer().attach(actor)
        actor.start()

        assert seen.completions == 1

    def test_child_reaching_final_state_immediately_triggers_on_done(self):
        done_child = create_machine(
            {"id": "child", "initial": "one", "states": {"one": {"on": {"NEXT": "two"}}, "two": {"type": "final"}}}
        )
        machine = create_machine(
            {
                "id": "parent",
                "initial": "one",
                "states": {
                    "one": {
                        "invoke": {"id": "foo-child", "src": done_child, "onDone": "two"},
                        "entry": send_to("foo-child", {"type": "NEXT"}),
                    },
                    "two": {"on": {"NEXT": "three"}},
                    "three": {"type": "final"},
                },
            }
        )

        actor = create_actor(machine).start()

        assert actor.snapshot.value == "two"

    def test_invokes_in_orthogonal_regions_deliver_output(self):
        pong = create_machine(
            {
                "id": "pong",
                "initial": "active",
                "states": {"active": {"type": "final"}},
                "output": {"secret": "pingpong"},
            }
        )
        ping = create_machine(
            {
                "id": "ping",
                "type": "parallel",
                "states": {
                    "one": {
                        "initial": "active",
                        "states": {
                            "active": {
                                "invoke": {
                                    "id": "pong",
                                    "src": pong,
                                    "onDone": {
                                        "target": "success",
                                        "guard": lambda event: event["output"]["secret"] == "pingpong",
                                    },
                                }
                            },
                            "success": {"type": "final"},
                        },
                    }
                },
            }
        )

        actor = create_actor(ping)
        seen = Observer().attach(actor)
        actor.start()

        assert seen.completions == 1
        assert actor.snapshot.value == {"one": "success"}

    def test_targetless_root_transitions_do_not_restart_root_invokes(self):
        counts = {"invoked": 0, "disposed": 0, "actions": 0, "entry": 0}

        def start_child():
            counts["invoked"] += 1

            def dispose():
                counts["disposed"] += 1

            return dispose

        def on_entry():
            counts["entry"] += 1

        def on_update():
            counts["actions"] += 1

        machine = create_machine(
            {
                "invoke": {"src": from_callback(start_child)},
                "entry": on_entry,
                "on": {"UPDATE": {"actions": on_update}},
            }
        )

        actor = create_actor(machine).start()
        assert counts == {"invoked": 1, "disposed": 0, "actions": 0, "entry": 1}

        actor.send({"type": "UPDATE"})
        assert counts == {"invoked": 1, "disposed": 0, "actions": 1, "entry": 1}

        actor.send({"type": "UPDATE"})
        assert counts == {"invoked": 1, "disposed": 0, "actions": 2, "entry": 1}

    def test_root_invoke_is_stopped_when_machine_reaches_final_state(self):
        stopped = []
        machine = create_machine(
            {
                "id": "machine",
                "invoke": {"src": from_callback(lambda: lambda: stopped.append(True))},
                "initial": "running",
                "states": {"running": {"on": {"finished": "complete"}}, "complete": {"type": "final"}},
            }
        )

        actor = create_actor(machine).start()
        assert stopped == []
        actor.send({"type": "finished"})

        assert stopped == [True]

    def test_child_stopped_by_parent_does_not_invoke_again_before_parent_completes(self):
        invoke_count = [0]
        captured = []

        def idle_callback(send_back):
            invoke_count[0] += 1
            captured.append(send_back)

        def active_callback(send_back):
            send_back({"type": "STOPPED"})

        child = create_machine(
            {
                "id": "child",
                "initial": "idle",
                "states": {
                    "idle": {"invoke": {"src": from_callback(idle_callback)}, "on": {"STARTED": "active"}},
                    "active": {
                        "invoke": {"src": from_callback(active_callback)},
                        "on": {"STOPPED": {"target": "idle", "actions": forward_to_parent()}},
                    },
                },
            }
        )
        parent = create_machine(
            {
                "id": "parent",
                "initial": "idle",
                "states": {
                    "idle": {"on": {"START": "active"}},
                    "active": {"invoke": {"src": child}, "on": {"STOPPED": "done"}},
                    "done": {"type": "final"},
                },
            }
        )

        count_at_completion = []
        actor = create_actor(parent)
        actor.subscribe(complete=lambda: count_at_completion.append(invoke_count[0]))
        actor.start()
        actor.send({"type": "START"})
        assert invoke_count[0] == 1

        # the child's first callback answers later, while nothing else is being processed
        captured[0]({"type": "STARTED"})

        assert count_at_completion == [1]
        assert actor.snapshot.status == "done"


def forward_to_parent():
    """The current event, sent on to the parent (xstate: forwardTo(SpecialTargets.Parent))."""
    return send_parent(lambda event: dict(event))


# --------------------------------------------------------------------------------------------------------------
# with promises
# --------------------------------------------------------------------------------------------------------------


def _outcome_from_input(input):
    if input["succeed"]:
        return input["id"]
    raise RuntimeError(f"failed on purpose for: {input['id']}")


def _invoke_promise_machine(kind):
    return create_machine(
        {
            "id": "invokePromise",
            "initial": "pending",
            "context": lambda input: {"id": 42, "succeed": True, **(input or {})},
            "states": {
                "pending": {
                    "invoke": {
                        "src": promise_logic(kind, _outcome_from_input),
                        "input": lambda context: context,
                        "onDone": {
                            "target": "success",
                            "guard": lambda context, event: event["output"] == context["id"],
                        },
                        "onError": "failure",
                    }
                },
                "success": {"type": "final"},
                "failure": {"type": "final"},
            },
        }
    )


def _failing(message):
    def fail(input):
        raise RuntimeError(message)

    return fail


@pytest.mark.parametrize("kind", PROMISE_KINDS)
class TestWithPromises:
    def test_resolution_goes_through_on_done(self, kind):
        machine = create_machine(
            {
                "initial": "pending",
                "states": {
                    "pending": {"invoke": {"src": promise_logic(kind, lambda input: None), "onDone": "success"}},
                    "success": {"type": "final"},
                },
            }
        )

        async def scenario(wait):
            actor = create_actor(machine)
            seen = Observer().attach(actor)
            actor.start()
            await wait(lambda: seen.completions)
            assert seen.completions == 1
            assert actor.snapshot.value == "success"

        run_scenario(kind, scenario)

    def test_resolution_with_input_from_context(self, kind):
        machine = _invoke_promise_machine(kind)

        async def scenario(wait):
            actor = create_actor(machine, input={"id": 7})
            seen = Observer().attach(actor)
            actor.start()
            await wait(lambda: seen.completions)
            assert actor.snapshot.value == "success"

        run_scenario(kind, scenario)

    def test_rejection_goes_through_on_error(self, kind):
        machine = _invoke_promise_machine(kind)

        async def scenario(wait):
            actor = create_actor(machine, input={"id": 31, "succeed": False})
            seen = Observer().attach(actor)
            actor.start()
            await wait(lambda: seen.completions)
            assert seen.completions == 1
            assert actor.snapshot.value == "failure"
            assert seen.errors == []

        run_scenario(kind, scenario)

    def test_unhandled_rejection_reaches_error_listener(self, kind):
        machine = create_machine(
            {
                "id": "invokePromise",
                "initial": "pending",
                "states": {
                    "pending": {"invoke": {"src": promise_logic(kind, _failing("test")), "onDone": "success"}},
                    "success": {"type": "final"},
                },
            }
        )

        async def scenario(wait):
            actor = create_actor(machine)
            seen = Observer().attach(actor)
            actor.start()
            await wait(lambda: seen.errors)
            assert len(seen.errors) == 1
            assert "test" in str(seen.errors[0])

        run_scenario(kind, scenario)

    def test_unhandled_rejection_errors_the_actor_without_completing(self, kind):
        machine = create_machine(
            {
                "id": "invokePromise",
                "initial": "pending",
                "states": {
                    "pending": {"invoke": {"src": promise_logic(kind, _failing("test")), "onDone": "success"}},
                    "success": {"type": "final"},
                },
            }
        )

        async def scenario(wait):
            actor = create_actor(machine)
            seen = Observer().attach(actor)
            actor.start()
            await wait(lambda: seen.errors)
            assert len(seen.errors) == 1
            assert isinstance(seen.errors[0], RuntimeError)
            assert str(seen.errors[0]) == "test"
            assert seen.completions == 0
            assert actor.snapshot.status == "error"
            assert actor.snapshot.error is seen.errors[0]

        run_scenario(kind, scenario)

    def test_on_done_inside_compound_state_with_inline_logic(self, kind):
        machine = create_machine(
            {
                "id": "promise",
                "initial": "parent",
                "states": {
                    "parent": {
                        "initial": "pending",
                        "states": {
                            "pending": {
                                "invoke": {"src": promise_logic(kind, lambda input: None), "onDone": "success"}
                            },
                            "success": {"type": "final"},
                        },
                        "onDone": "success",
                    },
                    "success": {"type": "final"},
                },
            }
        )

        async def scenario(wait):
            actor = create_actor(machine)
            seen = Observer().attach(actor)
            actor.start()
            await wait(lambda: seen.completions)
            assert seen.completions == 1
            assert actor.snapshot.value == "success"

        run_scenario(kind, scenario)

    def test_on_done_inside_compound_state_with_named_logic(self, kind):
        machine = create_machine(
            {
                "id": "promise",
                "initial": "parent",
                "states": {
                    "parent": {
                        "initial": "pending",
                        "states": {
                            "pending": {"invoke": {"src": "somePromise", "onDone": "success"}},
                            "success": {"type": "final"},
                        },
                        "onDone": "success",
                    },
                    "success": {"type": "final"},
                },
            },
            actors={"somePromise": promise_logic(kind, lambda input: None)},
        )

        async def scenario(wait):
            actor = create_actor(machine)
            seen = Observer().attach(actor)
            actor.start()
            await wait(lambda: seen.completions)
            assert seen.completions == 1
            assert actor.snapshot.value == "success"

        run_scenario(kind, scenario)

    def test_resolved_output_can_be_assigned_with_inline_logic(self, kind):
        machine = create_machine(
            {
                "id": "promise",
                "context": {"count": 0},
                "initial": "pending",
                "states": {
                    "pending": {
                        "invoke": {
                            "src": promise_logic(kind, lambda input: {"count": 1}),
                            "onDone": {
                                "target": "success",
                                "actions": assign({"count": lambda event: event["output"]["count"]}),
                            },
                        }
                    },
                    "success": {"type": "final"},
                },
            }
        )

        async def scenario(wait):
            actor = create_actor(machine)
            seen = Observer().attach(actor)
            actor.start()
            await wait(lambda: seen.completions)
            assert seen.completions == 1
            assert actor.snapshot.context["count"] == 1

        run_scenario(kind, scenario)

    def test_resolved_output_can_be_assigned_with_named_logic(self, kind):
        machine = create_machine(
            {
                "id": "promise",
                "context": {"count": 0},
                "initial": "pending",
                "states": {
                    "pending": {
                        "invoke": {
                            "src": "somePromise",
                            "onDone": {
                                "target": "success",
                                "actions": assign({"count": lambda event: event["output"]["count"]}),
                            },
                        }
                    },
                    "success": {"type": "final"},
                },
            },
            actors={"somePromise": promise_logic(kind, lambda input: {"count": 1})},
        )

        async def scenario(wait):
            actor = create_actor(machine)
            seen = Observer().attach(actor)
            actor.start()
            await wait(lambda: seen.completions)
            assert seen.completions == 1
            assert actor.snapshot.context["count"] == 1

        run_scenario(kind, scenario)

    def test_resolved_output_reaches_custom_action_with_inline_logic(self, kind):
        received = []
        machine = create_machine(
            {
                "id": "promise",
                "context": {"count": 0},
                "initial": "pending",
                "states": {
                    "pending": {
                        "invoke": {
                            "src": promise_logic(kind, lambda input: {"count": 1}),
                            "onDone": {
                                "target": "success",
                                "actions": lambda event: received.append(event["output"]["count"]),
                            },
                        }
                    },
                    "success": {"type": "final"},
                },
            }
        )

        async def scenario(wait):
            actor = create_actor(machine)
            seen = Observer().attach(actor)
            actor.start()
            await wait(lambda: seen.completions)
            assert seen.completions == 1
            assert received == [1]

        run_scenario(kind, scenario)

    def test_resolved_output_reaches_custom_action_with_named_logic(self, kind):
        received = []
        machine = create_machine(
            {
                "id": "promise",
                "initial": "pending",
                "states": {
                    "pending": {
                        "invoke": {
                            "src": "somePromise",
                            "onDone": {
                                "target": "success",
                                "actions": lambda event: received.append(event["output"]["count"]),
                            },
                        }
                    },
                    "success": {"type": "final"},
                },
            },
            actors={"somePromise": promise_logic(kind, lambda input: {"count": 1})},
        )

        async def scenario(wait):
            actor = create_actor(machine)
            seen = Observer().attach(actor)
            actor.start()
            await wait(lambda: seen.completions)
            assert seen.completions == 1
            assert received == [1]

        run_scenario(kind, scenario)

    def test_named_promise_logic_gets_input_built_from_context_and_event(self, kind):
        seen_inputs = []

        def settle(input):
            seen_inputs.append(input)
            if input["foo"] and input["event"]["payload"]:
                return None
            raise RuntimeError("rejected")

        machine = create_machine(
            {
                "id": "promise",
                "initial": "pending",
                "context": {"foo": True},
                "states": {
                    "pending": {"on": {"BEGIN": "first"}},
                    "first": {
                        "invoke": {
                            "src": "somePromise",
                            "input": lambda context, event: {"foo": context["foo"], "event": event},
                            "onDone": "last",
                        }
                    },
                    "last": {"type": "final"},
                },
            },
            actors={"somePromise": promise_logic(kind, settle)},
        )

        async def scenario(wait):
            actor = create_actor(machine)
            seen = Observer().attach(actor)
            actor.start()
            actor.send({"type": "BEGIN", "payload": True})
            await wait(lambda: seen.completions)
            assert seen.completions == 1
            assert len(seen_inputs) == 1
            assert seen_inputs[0]["event"]["type"] == "BEGIN"

        run_scenario(kind, scenario)

    def test_one_promise_logic_creates_a_separate_run_per_invoke(self, kind):
        counter = itertools.count(1)

        def region(result_key):
            return {
                "initial": "active",
                "states": {
                    "active": {
                        "invoke": {
                            "src": "getNumber",
                            "onDone": {
                                "target": "success",
                                "actions": assign(lambda event: {result_key: event["output"]["result"]}),
                            },
                        }
                    },
                    "success": {"type": "final"},
                },
            }

        machine = create_machine(
            {
                "context": {"result1": None, "result2": None},
                "initial": "pending",
                "states": {
                    "pending": {
                        "type": "parallel",
                        "states": {"state1": region("result1"), "state2": region("result2")},
                        "onDone": "done",
                    },
                    "done": {"type": "final"},
                },
            },
            actors={"getNumber": promise_logic(kind, lambda input: {"result": next(counter)})},
        )

        async def scenario(wait):
            actor = create_actor(machine)
            seen = Observer().attach(actor)
            actor.start()
            await wait(lambda: seen.completions)
            assert seen.completions == 1
            context = actor.snapshot.context
            assert isinstance(context["result1"], int)
            assert isinstance(context["result2"], int)
            assert context["result1"] != context["result2"]

        run_scenario(kind, scenario)


@pytest.mark.parametrize("kind", ["coroutine", "awaitable"])
def test_stopped_promise_actor_sends_no_snapshot_events(kind):
    unexpected = []

    async def slow(input):
        await asyncio.sleep(0.005)
        return 42

    def slow_awaitable(input):
        return _Deferred(lambda: 42, delay=0.005)

    logic = from_promise(slow if kind == "coroutine" else slow_awaitable)

    def reject_snapshots(event):
        if "snapshot" in event:
            unexpected.append(event["type"])

    machine = create_machine(
        {
            "initial": "active",
            "states": {
                "active": {"invoke": {"src": logic, "onSnapshot": {}}, "on": {"deactivate": "inactive"}},
                "inactive": {"on": {"*": {"actions": reject_snapshots}}},
            },
        }
    )

    async def scenario(wait):
        actor = create_actor(machine).start()
        actor.send({"type": "deactivate"})
        await asyncio.sleep(0.02)
        assert actor.snapshot.value == "inactive"
        assert actor.snapshot.status == "active"
        assert unexpected == []

    run_scenario(kind, scenario)


# --------------------------------------------------------------------------------------------------------------
# with callbacks
# --------------------------------------------------------------------------------------------------------------


class TestWithCallbacks:
    def test_named_callback_gets_input_and_sends_several_events(self):
        def some_callback(send_back, input):
            if input["foo"] and input["event"]["type"] == "BEGIN":
                send_back({"type": "CALLBACK", "data": 40})
                send_back({"type": "CALLBACK", "data": 41})
                send_back({"type": "CALLBACK", "data": 42})

        machine = create_machine(
            {
                "id": "callback",
                "initial": "pending",
                "context": {"foo": True},
                "states": {
                    "pending": {"on": {"BEGIN": "first"}},
                    "first": {
                        "invoke": {
                            "src": "someCallback",
                            "input": lambda context, event: {"foo": context["foo"], "event": event},
                        },
                        "on": {"CALLBACK": {"target": "last", "guard": lambda event: event["data"] == 42}},
                    },
                    "last": {"type": "final"},
                },
            },
            actors={"someCallback": from_callback(some_callback)},
        )

        actor = create_actor(machine)
        seen = Observer().attach(actor)
        actor.start()
        actor.send({"type": "BEGIN", "payload": True})

        assert seen.completions == 1
        assert actor.snapshot.value == "last"

    def test_callback_event_sent_on_start_moves_the_parent_on(self):
        machine = create_machine(
            {
                "id": "callback",
                "initial": "pending",
                "context": {"foo": True},
                "states": {
                    "pending": {"on": {"BEGIN": "first"}},
                    "first": {"invoke": {"src": "someCallback"}, "on": {"CALLBACK": "intermediate"}},
                    "intermediate": {"on": {"NEXT": "last"}},
                    "last": {"type": "final"},
                },
            },
            actors={"someCallback": from_callback(lambda send_back: send_back({"type": "CALLBACK"}))},
        )

        values = []
        actor = create_actor(machine)
        actor.subscribe(lambda snapshot: values.append(snapshot.value))
        actor.start().send({"type": "BEGIN"})

        assert values[:3] == ["pending", "first", "intermediate"]

    def test_callback_invoked_by_initial_state_sends_after_initial_snapshot(self):
        machine = create_machine(
            {
                "id": "callback",
                "initial": "idle",
                "context": {"foo": True},
                "states": {
                    "idle": {"invoke": {"src": "someCallback"}, "on": {"CALLBACK": "intermediate"}},
                    "intermediate": {"on": {"NEXT": "last"}},
                    "last": {"type": "final"},
                },
            },
            actors={"someCallback": from_callback(lambda send_back: send_back({"type": "CALLBACK"}))},
        )

        values = []
        actor = create_actor(machine)
        actor.subscribe(lambda snapshot: values.append(snapshot.value))
        actor.start().send({"type": "BEGIN"})

        assert values[:2] == ["idle", "intermediate"]

    def test_callback_invoked_after_eventless_transition(self):
        machine = create_machine(
            {
                "id": "callback",
                "initial": "pending",
                "context": {"foo": True},
                "states": {
                    "pending": {"on": {"BEGIN": "first"}},
                    "first": {"always": "second"},
                    "second": {"invoke": {"src": "someCallback"}, "on": {"CALLBACK": "third"}},
                    "third": {"on": {"NEXT": "last"}},
                    "last": {"type": "final"},
                },
            },
            actors={"someCallback": from_callback(lambda send_back: send_back({"type": "CALLBACK"}))},
        )

        values = []
        actor = create_actor(machine)
        actor.subscribe(lambda snapshot: values.append(snapshot.value))
        actor.start().send({"type": "BEGIN"})

        assert values[:3] == ["pending", "second", "third"]

    def test_callback_as_event_stream_and_cleanup_on_exit(self):
        senders = []
        cleanups = []

        def interval_like(send_back):
            senders.append(send_back)
            return lambda: cleanups.append("cleared")

        machine = create_machine(
            {
                "id": "interval",
                "initial": "counting",
                "context": {"count": 0},
                "states": {
                    "counting": {
                        "invoke": {"id": "intervalService", "src": from_callback(interval_like)},
                        "always": {"target": "finished", "guard": lambda context: context["count"] == 3},
                        "on": {"INC": {"actions": assign({"count": lambda context: context["count"] + 1})}},
                    },
                    "finished": {"type": "final"},
                },
            }
        )

        actor = create_actor(machine)
        seen = Observer().attach(actor)
        actor.start()
        assert len(senders) == 1

        for _ in range(3):
            assert seen.completions == 0
            senders[0]({"type": "INC"})

        assert seen.completions == 1
        assert actor.snapshot.context == {"count": 3}
        assert cleanups == ["cleared"]

    def test_callback_cleanup_runs_when_invoking_state_exits(self):
        cleanups = []
        machine = create_machine(
            {
                "id": "interval",
                "initial": "counting",
                "states": {
                    "counting": {
                        "invoke": {
                            "id": "intervalService",
                            "src": from_callback(lambda: lambda: cleanups.append("disposed")),
                        },
                        "on": {"NEXT": "idle"},
                    },
                    "idle": {},
                },
            }
        )

        actor = create_actor(machine).start()
        assert cleanups == []
        actor.send({"type": "NEXT"})

        assert cleanups == ["disposed"]

    def test_callback_receives_events_from_parent(self):
        def ping_pong(send_back, receive):
            def on_event(event):
                if event["type"] == "PING":
                    send_back({"type": "PONG"})

            receive(on_event)

        machine = create_machine(
            {
                "id": "ping-pong",
                "initial": "active",
                "states": {
                    "active": {
                        "invoke": {"id": "child", "src": from_callback(ping_pong)},
                        "entry": send_to("child", {"type": "PING"}),
                        "on": {"PONG": "done"},
                    },
                    "done": {"type": "final"},
                },
            }
        )

        actor = create_actor(machine)
        seen = Observer().attach(actor)
        actor.start()

        assert seen.completions == 1

    def test_callback_that_raises_on_start_triggers_guarded_on_error(self):
        def explode():
            raise RuntimeError("test")

        def is_the_test_error(event):
            return isinstance(event["error"], RuntimeError) and str(event["error"]) == "test"

        machine = create_machine(
            {
                "id": "error",
                "initial": "safe",
                "states": {
                    "safe": {
                        "invoke": {
                            "src": from_callback(explode),
                            "onError": {"target": "failed", "guard": is_the_test_error},
                        }
                    },
                    "failed": {"type": "final"},
                },
            }
        )

        actor = create_actor(machine)
        seen = Observer().attach(actor)
        actor.start()

        assert seen.completions == 1
        assert seen.errors == []

    def test_callback_that_raises_on_start_moves_to_on_error_target(self):
        def explode():
            raise RuntimeError("test")

        machine = create_machine(
            {
                "id": "error",
                "initial": "safe",
                "states": {
                    "safe": {"invoke": {"src": from_callback(explode), "onError": "failed"}},
                    "failed": {"on": {"RETRY": "safe"}},
                },
            }
        )

        actor = create_actor(machine).start()

        assert actor.snapshot.value == "failed"
        assert actor.snapshot.status == "active"

    def test_on_error_only_fires_in_the_region_whose_child_failed(self):
        def explode():
            raise RuntimeError("test")

        def calm():
            return lambda: None

        def region(logic):
            return {
                "initial": "waiting",
                "states": {
                    "waiting": {"invoke": {"src": from_callback(logic), "onError": {"target": "failed"}}},
                    "failed": {},
                },
            }

        machine = create_machine(
            {
                "initial": "start",
                "states": {
                    "start": {"on": {"FETCH": "fetch"}},
                    "fetch": {"type": "parallel", "states": {"first": region(explode), "second": region(calm)}},
                },
            }
        )

        actor = create_actor(machine).start()
        actor.send({"type": "FETCH"})

        assert actor.snapshot.value == {"fetch": {"first": "failed", "second": "waiting"}}

    def test_snapshot_with_callback_child_serializes_to_json(self):
        machine = create_machine(
            {
                "initial": "idle",
                "states": {
                    "idle": {"on": {"GO_TO_WAITING": "waiting"}},
                    "waiting": {"invoke": {"src": from_callback(lambda: None)}},
                },
            }
        )

        actor = create_actor(machine).start()
        actor.send({"type": "GO_TO_WAITING"})
        snapshot = actor.snapshot

        text = json.dumps(snapshot.to_json())
        assert json.loads(text)["value"] == "waiting"

    def test_unhandled_error_from_callback_start_is_reported_to_error_listener(self):
        def explode():
            raise RuntimeError("test")

        machine = create_machine(
            {
                "initial": "safe",
                "states": {"safe": {"invoke": {"src": from_callback(explode)}}, "failed": {"type": "final"}},
            }
        )

        errors = []
        actor = create_actor(machine)
        actor.subscribe(error=errors.append)
        actor.start()

        assert len(errors) == 1
        assert isinstance(errors[0], RuntimeError)
        assert str(errors[0]) == "test"
        assert actor.snapshot.status == "error"

    def test_callback_receives_input_mapped_from_context(self):
        received = []
        machine = create_machine(
            {
                "initial": "start",
                "context": {"foo": "bar"},
                "states": {
                    "start": {
                        "invoke": {
                            "src": from_callback(lambda input: received.append(input)),
                            "input": lambda context: context,
                        }
                    }
                },
            }
        )

        create_actor(machine).start()

        assert received == [{"foo": "bar"}]

    def test_child_finishing_after_parent_event_ends_in_completed_state(self):
        child = create_machine(
            {"id": "child", "initial": "start", "states": {"start": {"on": {"STOP": "end"}}, "end": {"type": "final"}}}
        )
        parent = create_machine(
            {
                "id": "parent",
                "initial": "begin",
                "states": {
                    "begin": {
                        "invoke": {"src": child, "id": "invoked.child", "onDone": "completed"},
                        "on": {"STOPCHILD": {"actions": send_to("invoked.child", {"type": "STOP"})}},
                    },
                    "completed": {"type": "final"},
                },
            }
        )

        actor = create_actor(parent).start()
        actor.send({"type": "STOPCHILD"})

        assert actor.snapshot.value == "completed"


# --------------------------------------------------------------------------------------------------------------
# with logic / with transition functions
# --------------------------------------------------------------------------------------------------------------


def test_transition_logic_can_reach_its_parent_through_self():
    def pong(state, event, self):
        if event["type"] == "PING":
            _parent_of(self).send({"type": "PONG"})
        return state

    machine = create_machine(
        {
            "initial": "waiting",
            "states": {
                "waiting": {
                    "entry": send_to("ponger", {"type": "PING"}),
                    "invoke": {"id": "ponger", "src": from_transition(pong, None)},
                    "on": {"PONG": "success"},
                },
                "success": {"type": "final"},
            },
        }
    )

    actor = create_actor(machine)
    seen = Observer().attach(actor)
    actor.start()

    assert seen.completions == 1


class TestWithTransitionFunctions:
    def test_forwarded_events_drive_a_reducer_child(self):
        def count_reducer(state, event):
            if event["type"] == "INC":
                return state + 1
            if event["type"] == "DEC":
                return state - 1
            return state

        machine = create_machine(
            {
                "invoke": {"id": "count", "src": from_transition(count_reducer, 0)},
                "on": {"INC": {"actions": forward_to("count")}},
            }
        )

        reached = []
        actor = create_actor(machine)

        def watch(snapshot):
            child = snapshot.children.get("count")
            if child is not None and child.get_snapshot().context == 2:
                reached.append(True)

        actor.subscribe(watch)
        actor.start()
        actor.send({"type": "INC"})
        assert actor.snapshot.children["count"].get_snapshot().context == 1
        actor.send({"type": "INC"})

        assert actor.snapshot.children["count"].get_snapshot().context == 2
        assert reached

    def test_events_a_reducer_sends_itself_are_processed_after_the_current_one(self):
        def count_reducer(state, event, self):
            if event["type"] == "INC":
                self.send({"type": "DOUBLE"})
                return state + 1
            if event["type"] == "DOUBLE":
                return state * 2
            return state

        machine = create_machine(
            {
                "invoke": {"id": "count", "src": from_transition(count_reducer, 0)},
                "on": {"INC": {"actions": forward_to("count")}},
            }
        )

        actor = create_actor(machine).start()
        actor.send({"type": "INC"})

        # (0 + 1) * 2, not 0 * 2 + 1
        assert actor.snapshot.children["count"].get_snapshot().context == 2

    def test_reducer_child_snapshots_reach_on_snapshot(self):
        contexts = []

        def doubler(state, event):
            return event["value"] * 2

        machine = create_machine(
            {
                "invoke": {
                    "id": "doubler",
                    "src": "doublerLogic",
                    "onSnapshot": {"actions": lambda event: contexts.append(event["snapshot"].context)},
                },
                "entry": send_to("doubler", {"type": "update", "value": 21}, delay=10),
            },
            actors={"doublerLogic": from_transition(doubler, 0)},
        )

        clock = SimulatedClock()
        create_actor(machine, clock=clock).start()
        # the child's initial snapshot is reported when it starts
        assert contexts == [0]
        clock.increment(9)
        assert contexts == [0]
        clock.increment(1)

        assert contexts == [0, 42]


# --------------------------------------------------------------------------------------------------------------
# with machines
# --------------------------------------------------------------------------------------------------------------


class TestWithMachines:
    def test_machine_invoked_in_nested_state_answers_entry_ping(self):
        pong = create_machine(
            {
                "id": "pong",
                "initial": "active",
                "states": {"active": {"on": {"PING": {"actions": send_parent({"type": "PONG"})}}}},
            }
        )
        ping = create_machine(
            {
                "id": "ping",
                "initial": "innerMachine",
                "states": {
                    "innerMachine": {
                        "initial": "active",
                        "states": {
                            "active": {
                                "invoke": {"id": "pong", "src": pong},
                                "entry": send_to("pong", {"type": "PING"}),
                                "on": {"PONG": "innerSuccess"},
                            },
                            "innerSuccess": {"type": "final"},
                        },
                        "onDone": "success",
                    },
                    "success": {"type": "final"},
                },
            }
        )

        actor = create_actor(ping)
        seen = Observer().attach(actor)
        actor.start()

        assert seen.completions == 1
        assert actor.snapshot.value == "success"

    def test_child_machine_snapshots_reach_on_snapshot(self):
        values = []
        child = create_machine({"initial": "a", "states": {"a": {"after": {10: "b"}}, "b": {}}})
        machine = create_machine(
            {
                "invoke": {
                    "src": "childMachine",
                    "onSnapshot": {"actions": lambda event: values.append(event["snapshot"].value)},
                }
            },
            actors={"childMachine": child},
        )

        clock = SimulatedClock()
        create_actor(machine, clock=clock).start()
        assert values == ["a"]
        clock.increment(10)

        assert values == ["a", "b"]


# --------------------------------------------------------------------------------------------------------------
# multiple simultaneous services
# --------------------------------------------------------------------------------------------------------------


class TestMultipleSimultaneousServices:
    def test_all_invokes_of_a_state_start_together(self):
        machine = create_machine(
            {
                "id": "machine",
                "initial": "one",
                "context": {},
                "on": {
                    "ONE": {"actions": assign({"one": "one"})},
                    "TWO": {"actions": assign({"two": "two"}), "target": ".three"},
                },
                "states": {
                    "one": {
                        "initial": "two",
                        "states": {
                            "two": {
                                "invoke": [
                                    {"id": "child", "src": from_callback(lambda send_back: send_back({"type": "ONE"}))},
                                    {
                                        "id": "child2",
                                        "src": from_callback(lambda send_back: send_back({"type": "TWO"})),
                                    },
                                ]
                            }
                        },
                    },
                    "three": {"type": "final"},
                },
            }
        )

        actor = create_actor(machine)
        seen = Observer().attach(actor)
        actor.start()

        assert seen.completions == 1
        assert actor.snapshot.context == {"one": "one", "two": "two"}

    def test_invokes_in_parallel_regions_all_run(self):
        machine = create_machine(
            {
                "id": "machine",
                "initial": "one",
                "context": {},
                "on": {"ONE": {"actions": assign({"one": "one"})}, "TWO": {"actions": assign({"two": "two"})}},
                "after": {10: ".three"},
                "states": {
                    "one": {
                        "initial": "two",
                        "states": {
                            "two": {
                                "type": "parallel",
                                "states": {
                                    "a": {
                                        "invoke": {
                                            "id": "child",
                                            "src": from_callback(lambda send_back: send_back({"type": "ONE"})),
                                        }
                                    },
                                    "b": {
                                        "invoke": {
                                            "id": "child2",
                                            "src": from_callback(lambda send_back: send_back({"type": "TWO"})),
                                        }
                                    },
                                },
                            }
                        },
                    },
                    "three": {"type": "final"},
                },
            }
        )

        clock = SimulatedClock()
        actor = create_actor(machine, clock=clock)
        seen = Observer().attach(actor)
        actor.start()
        assert seen.completions == 0
        clock.increment(10)

        assert seen.completions == 1
        assert actor.snapshot.context == {"one": "one", "two": "two"}

    def test_no_invoke_when_state_is_left_in_the_same_microstep(self):
        started = []
        machine = create_machine(
            {
                "id": "transient",
                "initial": "active",
                "states": {
                    "active": {
                        "invoke": {"id": "doNotInvoke", "src": from_callback(lambda: started.append(True))},
                        "always": "inactive",
                    },
                    "inactive": {},
                },
            }
        )

        actor = create_actor(machine).start()

        assert started == []
        assert actor.snapshot.value == "inactive"
        assert "doNotInvoke" not in actor.snapshot.children

    def test_no_invoke_when_state_is_left_in_a_later_microstep(self):
        started = []
        machine = create_machine(
            {
                "initial": "withNonLeafInvoke",
                "states": {
                    "withNonLeafInvoke": {
                        "invoke": {"id": "doNotInvoke", "src": from_callback(lambda: started.append(True))},
                        "initial": "first",
                        "states": {"first": {"always": "second"}, "second": {"always": "#inactive"}},
                    },
                    "inactive": {"id": "inactive"},
                },
            }
        )

        actor = create_actor(machine).start()

        assert started == []
        assert actor.snapshot.value == "inactive"

    @pytest.mark.parametrize("kind", PROMISE_KINDS)
    def test_invoke_starts_while_another_is_stopped_in_a_later_microstep(self, kind):
        machine = create_machine(
            {
                "initial": "running",
                "states": {
                    "running": {
                        "type": "parallel",
                        "states": {
                            "one": {
                                "initial": "active",
                                "on": {"STOP_ONE": ".idle"},
                                "states": {
                                    "idle": {},
                                    "active": {
                                        "invoke": {"id": "active", "src": from_callback(lambda: None)},
                                        "on": {"NEXT": {"actions": raise_({"type": "STOP_ONE"})}},
                                    },
                                },
                            },
                            "two": {
                                "initial": "idle",
                                "on": {"NEXT": ".active"},
                                "states": {
                                    "idle": {},
                                    "active": {
                                        "invoke": {
                                            "id": "post",
                                            "src": promise_logic(kind, lambda input: 42),
                                            "onDone": "#done",
                                        }
                                    },
                                },
                            },
                        },
                    },
                    "done": {"id": "done", "type": "final"},
                },
            }
        )

        async def scenario(wait):
            actor = create_actor(machine)
            seen = Observer().attach(actor)
            actor.start()
            actor.send({"type": "NEXT"})
            await wait(lambda: seen.completions)
            assert seen.completions == 1
            assert actor.snapshot.value == "done"

        run_scenario(kind, scenario)

    def test_reentering_invoking_state_within_one_macrostep_starts_it_once(self):
        started = []

        def bump(context):
            return context["counter"] + 1

        machine = create_machine(
            {
                "initial": "active",
                "context": {"counter": 0},
                "states": {
                    "active": {
                        "invoke": {"src": from_callback(lambda: started.append(True))},
                        "always": [{"guard": lambda context: context["counter"] == 0, "target": "inactive"}],
                    },
                    "inactive": {"entry": assign({"counter": bump}), "always": "active"},
                },
            }
        )

        actor = create_actor(machine).start()

        assert started == [True]
        assert actor.snapshot.value == "active"
        assert actor.snapshot.context == {"counter": 1}


# --------------------------------------------------------------------------------------------------------------
# invoke ids, input, restarts
# --------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", PROMISE_KINDS)
def test_named_src_with_static_input(kind):
    inputs = []

    def search(input):
        inputs.append(input)
        return 42

    machine = create_machine(
        {
            "initial": "searching",
            "states": {
                "searching": {"invoke": {"src": "search", "input": {"endpoint": "example.com"}, "onDone": "success"}},
                "success": {"type": "final"},
            },
        },
        actors={"search": promise_logic(kind, search)},
    )

    async def scenario(wait):
        actor = create_actor(machine)
        seen = Observer().attach(actor)
        actor.start()
        await wait(lambda: seen.completions)
        assert seen.completions == 1
        assert [i["endpoint"] for i in inputs] == ["example.com"]

    run_scenario(kind, scenario)


@pytest.mark.parametrize("kind", PROMISE_KINDS)
def test_named_src_with_input_mapped_from_context(kind):
    inputs = []

    def search(input):
        inputs.append(input)
        return 42

    machine = create_machine(
        {
            "initial": "searching",
            "context": {"url": "example.com"},
            "states": {
                "searching": {
                    "invoke": {
                        "src": "search",
                        "input": lambda context: {"endpoint": context["url"]},
                        "onDone": "success",
                    }
                },
                "success": {"type": "final"},
            },
        },
        actors={"search": promise_logic(kind, search)},
    )

    async def scenario(wait):
        actor = create_actor(machine)
        seen = Observer().attach(actor)
        actor.start()
        await wait(lambda: seen.completions)
        assert seen.completions == 1
        assert inputs == [{"endpoint": "example.com"}]

    run_scenario(kind, scenario)


def test_generated_invoke_id_comes_from_the_state_node_not_the_src():
    done_types = []

    def record(event):
        done_types.append(event["type"])
        return True

    machine = create_machine(
        {
            "initial": "a",
            "states": {
                "a": {"invoke": {"src": "someSrc", "onDone": {"guard": record, "target": "b"}}},
                "b": {"type": "final"},
            },
        },
        actors={"someSrc": from_promise(lambda: None)},
    )

    actor = create_actor(machine)
    seen = Observer().attach(actor)
    actor.start()
    deadline = time.monotonic() + 2
    while not seen.completions and time.monotonic() < deadline:
        time.sleep(0.001)

    assert seen.completions == 1
    assert done_types == ["xstate.done.actor.0.(machine).a"]


@pytest.mark.parametrize("src_style", ["string reference", "machine", "callback"])
def test_invoke_registers_a_predictably_named_child_before_start(src_style):
    sources = {
        "string reference": "someSrc",
        "machine": create_machine({"id": "someId"}),
        "callback": from_callback(lambda: None),
    }
    machine = create_machine(
        {"id": "machine", "initial": "a", "states": {"a": {"invoke": {"src": sources[src_style]}}}},
        actors={"someSrc": from_callback(lambda: None)},
    )

    children = create_actor(machine).snapshot.children

    assert list(children) == ["0.machine.a"]
    assert children["0.machine.a"] is not None


def test_done_event_only_selects_on_done_of_the_invoking_state():
    counter = [0]
    invoked = [False]

    def fetch_something():
        if invoked[0]:
            # the second region's run never settles
            return asyncio.get_running_loop().create_future()
        invoked[0] = True
        return 42

    def single_state():
        return {
            "initial": "fetch",
            "states": {"fetch": {"invoke": {"src": "fetchSmth", "onDone": {"actions": "handleSuccess"}}}},
        }

    def handle_success():
        counter[0] += 1

    machine = create_machine(
        {"type": "parallel", "states": {"first": single_state(), "second": single_state()}},
        actions={"handleSuccess": handle_success},
        actors={"fetchSmth": from_promise(fetch_something)},
    )

    async def scenario():
        actor = create_actor(machine).start()
        await asyncio.sleep(0.02)
        assert counter[0] == 1
        assert actor.snapshot.status == "active"
        actor.stop()

    asyncio.run(scenario())


def test_done_events_of_same_child_machine_in_two_regions_have_distinct_types():
    actual = []
    child = create_machine(
        {
            "id": "child",
            "initial": "a",
            "states": {
                "a": {"invoke": {"src": from_promise(lambda: 42), "onDone": "b"}},
                "b": {"type": "final"},
            },
        }
    )

    def single_state():
        return {"initial": "fetch", "states": {"fetch": {"invoke": {"src": child}}}}

    machine = create_machine(
        {
            "type": "parallel",
            "states": {"first": single_state(), "second": single_state()},
            "on": {"*": {"actions": lambda event: actual.append(dict(event))}},
        }
    )

    create_actor(machine).start()
    deadline = time.monotonic() + 2
    while len(actual) < 2 and time.monotonic() < deadline:
        time.sleep(0.001)

    assert [(e["type"], e.get("actorId"), e.get("output")) for e in actual] == [
        ("xstate.done.actor.0.(machine).first.fetch", "0.(machine).first.fetch", None),
        ("xstate.done.actor.0.(machine).second.fetch", "0.(machine).second.fetch", None),
    ]


def test_invoke_restarts_when_state_is_reentered_through_eventless_transition():
    starts = []
    machine = create_machine(
        {
            "initial": "a",
            "states": {
                "a": {
                    "invoke": {"src": from_callback(lambda: starts.append(True))},
                    "on": {"GO_AWAY_AND_REENTER": "b"},
                },
                "b": {"always": "a"},
            },
        }
    )

    actor = create_actor(machine).start()
    actor.send({"type": "GO_AWAY_AND_REENTER"})

    assert len(starts) == 2


def test_root_invoke_is_disposed_when_machine_is_done():
    disposed = []
    machine = create_machine(
        {
            "initial": "a",
            "invoke": {"src": from_callback(lambda: lambda: disposed.append(True))},
            "states": {"a": {"on": {"FINISH": "b"}}, "b": {"type": "final"}},
        }
    )

    actor = create_actor(machine).start()
    actor.send({"type": "FINISH"})

    assert disposed == [True]


def test_grandchild_invoke_is_disposed_when_root_is_done():
    disposed = []
    child = create_machine({"invoke": {"src": from_callback(lambda: lambda: disposed.append(True))}})
    machine = create_machine(
        {
            "initial": "a",
            "invoke": {"src": child},
            "states": {"a": {"on": {"FINISH": "b"}}, "b": {"type": "final"}},
        }
    )

    actor = create_actor(machine).start()
    assert disposed == []
    actor.send({"type": "FINISH"})

    assert disposed == [True]


def test_root_invoke_restarts_on_reentering_root_transition():
    runs = []

    def run():
        runs.append(True)
        return 42

    machine = create_machine(
        {
            "id": "root",
            "invoke": {"src": from_promise(run)},
            "on": {"EVENT": {"target": "#two", "reenter": True}},
            "initial": "one",
            "states": {"one": {}, "two": {"id": "two"}},
        }
    )

    actor = create_actor(machine).start()
    actor.send({"type": "EVENT"})

    assert len(runs) == 2
    assert actor.snapshot.value == "two"


def test_reentering_the_invoking_state_stops_then_restarts_the_child():
    log = []
    counter = itertools.count(1)

    def start_child():
        local_id = next(counter)
        log.append(f"start {local_id}")
        return lambda: log.append(f"stop {local_id}")

    machine = create_machine(
        {
            "initial": "inactive",
            "states": {
                "inactive": {"on": {"ACTIVATE": "active"}},
                "active": {
                    "invoke": {"src": from_callback(start_child)},
                    "on": {"REENTER": {"target": "active", "reenter": True}},
                },
            },
        }
    )

    actor = create_actor(machine).start()
    actor.send({"type": "ACTIVATE"})
    assert log == ["start 1"]
    log.clear()
    actor.send({"type": "REENTER"})

    assert log == ["stop 1", "start 2"]


def test_child_answers_delayed_event_sent_by_entry_of_invoking_state():
    child = create_machine({"on": {"PING": {"actions": send_to(lambda event: event["origin"], {"type": "PONG"})}}})
    machine = create_machine(
        {
            "initial": "a",
            "states": {
                "a": {"on": {"NEXT": "b"}},
                "b": {
                    "invoke": {"id": "foo", "src": child},
                    "entry": send_to("foo", lambda self: {"type": "PING", "origin": self}, delay=1),
                    "on": {"PONG": "c"},
                },
                "c": {"type": "final"},
            },
        }
    )

    clock = SimulatedClock()
    actor = create_actor(machine, clock=clock).start()
    actor.send({"type": "NEXT"})
    assert actor.snapshot.value == "b"
    clock.increment(1)

    assert actor.snapshot.status == "done"
    assert actor.snapshot.value == "c"


# --------------------------------------------------------------------------------------------------------------
# invoke input
# --------------------------------------------------------------------------------------------------------------


class TestInvokeInput:
    def test_input_mapper_result_reaches_promise_logic(self):
        inputs = []

        def string_service(input):
            inputs.append(input)
            return True

        machine = create_machine(
            {
                "initial": "pending",
                "context": {"count": 42},
                "states": {
                    "pending": {
                        "invoke": {
                            "src": "stringService",
                            "input": lambda context: {"staticVal": "hello", "newCount": context["count"] * 2},
                            "onDone": "success",
                        }
                    },
                    "success": {"type": "final"},
                },
            },
            actors={"stringService": from_promise(string_service)},
        )

        actor = create_actor(machine)
        seen = Observer().attach(actor)
        actor.start()
        deadline = time.monotonic() + 2
        while not seen.completions and time.monotonic() < deadline:
            time.sleep(0.001)

        assert seen.completions == 1
        assert inputs == [{"newCount": 84, "staticVal": "hello"}]

    def test_input_mapper_can_use_self(self):
        received = []
        machine = create_machine(
            {
                "context": {"greeted": False},
                "invoke": {
                    "src": from_callback(lambda input: received.append(input)),
                    "input": lambda self: {"responder": self},
                },
                "on": {"HELLO": {"actions": assign({"greeted": True})}},
            }
        )

        actor = create_actor(machine).start()

        assert len(received) == 1
        responder = received[0]["responder"]
        assert callable(responder.send)
        responder.send({"type": "HELLO"})
        assert actor.snapshot.context == {"greeted": True}
