"""Order and timing of action execution: behaviour ported from xstate's core/test/predictableExec.test.ts.

(xstate's file repeats two of its cases verbatim; each is ported once.)
"""

import time

from engine.core.statechart import (
    SimulatedClock,
    assign,
    create_actor,
    create_machine,
    emit,
    from_callback,
    from_promise,
    raise_,
    send_parent,
    send_to,
    spawn_child,
)


def test_custom_and_builtin_actions_run_in_definition_order():
    order = []

    def custom():
        order.append("custom")

    def updater():
        order.append("assign")
        return {}

    machine = create_machine(
        {
            "initial": "a",
            "context": {},
            "states": {"a": {"on": {"NEXT": "b"}}, "b": {"entry": [custom, assign(updater)]}},
        }
    )

    actor = create_actor(machine).start()
    assert order == []
    actor.send({"type": "NEXT"})

    assert order == ["custom", "assign"]


def test_initial_custom_actions_run_on_start_not_on_creation():
    calls = []
    machine = create_machine({"entry": lambda: calls.append("entry")})

    actor = create_actor(machine)
    assert calls == []

    actor.start()

    assert calls == ["entry"]


def test_initial_assign_is_resolved_before_start():
    machine = create_machine({"context": {"called": False}, "entry": [assign({"called": True})]})

    actor = create_actor(machine)

    assert actor.snapshot.context["called"] is True


def test_custom_transition_action_receives_the_raised_event():
    received = []
    machine = create_machine(
        {
            "initial": "a",
            "states": {
                "a": {"on": {"NEXT": "b"}},
                "b": {
                    "on": {"RAISED": {"target": "c", "actions": lambda event: received.append(event)}},
                    "entry": raise_({"type": "RAISED"}),
                },
                "c": {},
            },
        }
    )

    actor = create_actor(machine).start()
    actor.send({"type": "NEXT"})

    assert [e["type"] for e in received] == ["RAISED"]
    assert actor.snapshot.value == "c"


def test_builtin_transition_action_receives_the_raised_event():
    received = []

    def updater(event):
        received.append(event)
        return {}

    machine = create_machine(
        {
            "context": {},
            "initial": "a",
            "states": {
                "a": {"on": {"NEXT": "b"}},
                "b": {
                    "on": {"RAISED": {"target": "c", "actions": assign(updater)}},
                    "entry": raise_({"type": "RAISED"}),
                },
                "c": {},
            },
        }
    )

    actor = create_actor(machine).start()
    actor.send({"type": "NEXT"})

    assert [e["type"] for e in received] == ["RAISED"]


def test_invoke_input_is_built_from_the_raised_event():
    received = []
    machine = create_machine(
        {
            "context": {},
            "initial": "a",
            "states": {
                "a": {"on": {"NEXT": "b"}},
                "b": {"on": {"RAISED": "c"}, "entry": raise_({"type": "RAISED"})},
                "c": {
                    "invoke": {
                        "src": from_callback(lambda input: received.append(input["event"])),
                        "input": lambda event: {"event": event},
                    }
                },
            },
        }
    )

    actor = create_actor(machine).start()
    actor.send({"type": "NEXT"})

    assert [e["type"] for e in received] == ["RAISED"]


def test_invoked_child_is_on_the_new_snapshot():
    machine = create_machine(
        {
            "context": {},
            "initial": "a",
            "states": {
                "a": {"on": {"NEXT": "b"}},
                "b": {"invoke": {"id": "myChild", "src": from_callback(lambda: None)}},
            },
        }
    )

    actor = create_actor(machine).start()
    assert "myChild" not in actor.snapshot.children
    actor.send({"type": "NEXT"})

    assert actor.snapshot.children.get("myChild") is not None


def test_invoked_child_is_gone_after_leaving_the_invoking_state():
    machine = create_machine(
        {
            "context": {},
            "initial": "a",
            "states": {
                "a": {"on": {"NEXT": "b"}},
                "b": {"invoke": {"id": "myChild", "src": from_callback(lambda: None)}, "on": {"NEXT": "c"}},
                "c": {},
            },
        }
    )

    actor = create_actor(machine).start()
    actor.send({"type": "NEXT"})
    assert "myChild" in actor.snapshot.children
    actor.send({"type": "NEXT"})

    assert "myChild" not in actor.snapshot.children


def test_custom_action_between_assigns_sees_intermediate_context():
    seen = []
    machine = create_machine(
        {
            "context": {"counter": 0},
            "initial": "a",
            "states": {
                "a": {"on": {"NEXT": "b"}},
                "b": {
                    "entry": [
                        assign({"counter": 1}),
                        lambda context: seen.append(context["counter"]),
                        assign({"counter": 2}),
                    ]
                },
            },
        }
    )

    actor = create_actor(machine).start()
    actor.send({"type": "NEXT"})

    assert seen == [1]
    assert actor.snapshot.context == {"counter": 2}


def test_initial_actions_see_only_preceding_assigns():
    seen = []
    machine = create_machine(
        {
            "context": {"count": 0},
            "entry": [
                lambda context: seen.append(context["count"]),
                assign({"count": 1}),
                lambda context: seen.append(context["count"]),
                assign({"count": 2}),
                lambda context: seen.append(context["count"]),
            ],
        }
    )

    create_actor(machine).start()

    assert seen == [0, 1, 2]


def test_parent_sees_updated_child_snapshot_when_child_event_arrives():
    child = create_machine(
        {
            "initial": "a",
            "states": {"a": {"after": {1: "b"}}, "b": {"entry": send_parent({"type": "CHILD_UPDATED"})}},
        }
    )
    holder = {}

    def child_is_in_b():
        return holder["actor"].snapshot.children["myChild"].get_snapshot().value == "b"

    machine = create_machine(
        {
            "invoke": {"id": "myChild", "src": child},
            "initial": "initial",
            "states": {
                "initial": {
                    "on": {"CHILD_UPDATED": [{"guard": child_is_in_b, "target": "success"}, {"target": "fail"}]}
                },
                "success": {"type": "final"},
                "fail": {"type": "final"},
            },
        }
    )

    clock = SimulatedClock()
    actor = create_actor(machine, clock=clock)
    holder["actor"] = actor
    completions = []
    actor.subscribe(complete=lambda: completions.append(actor.snapshot.value))
    actor.start()
    clock.increment(1)

    assert completions == ["success"]


def test_event_sent_by_initial_entry_reaches_initially_invoked_child():
    child = create_machine({"on": {"PING": {"actions": send_parent({"type": "PONG"})}}})
    machine = create_machine(
        {
            "initial": "waiting",
            "states": {
                "waiting": {
                    "invoke": {"id": "ponger", "src": child},
                    "entry": send_to("ponger", {"type": "PING"}),
                    "on": {"PONG": "done"},
                },
                "done": {"type": "final"},
            },
        }
    )

    actor = create_actor(machine).start()

    assert actor.snapshot.value == "done"


def test_invoke_input_uses_context_assigned_by_entry_of_same_state():
    inputs = []

    def check(input):
        inputs.append(input)
        return None

    machine = create_machine(
        {
            "context": {"updated": False},
            "initial": "a",
            "states": {
                "a": {"on": {"NEXT": "b"}},
                "b": {
                    "entry": assign({"updated": True}),
                    "invoke": {
                        "src": from_promise(check),
                        "input": lambda context: {"updated": context["updated"]},
                    },
                },
            },
        }
    )

    actor = create_actor(machine).start()
    actor.send({"type": "NEXT"})
    deadline = time.monotonic() + 2
    while not inputs and time.monotonic() < deadline:
        time.sleep(0.001)

    assert inputs == [{"updated": True}]


def test_event_sent_by_entry_reaches_child_invoked_in_same_state():
    received = []
    machine = create_machine(
        {
            "context": {"updated": False},
            "initial": "a",
            "states": {
                "a": {"on": {"NEXT": "b"}},
                "b": {
                    "entry": send_to("myChild", {"type": "KNOCK_KNOCK"}),
                    "invoke": {
                        "id": "myChild",
                        "src": create_machine({"on": {"*": {"actions": lambda event: received.append(event)}}}),
                    },
                },
            },
        }
    )

    actor = create_actor(machine).start()
    actor.send({"type": "NEXT"})

    assert received == [{"type": "KNOCK_KNOCK"}]


def test_event_sent_by_exit_reaches_child_invoked_in_exited_state():
    received = []

    def listener(receive):
        def on_event(event):
            received.append(event["type"])

        receive(on_event)

    machine = create_machine(
        {
            "initial": "active",
            "states": {
                "active": {
                    "invoke": {"id": "my-service", "src": from_callback(listener)},
                    "exit": send_to("my-service", {"type": "MY_EVENT"}),
                    "on": {"TOGGLE": "inactive"},
                },
                "inactive": {},
            },
        }
    )

    actor = create_actor(machine).start()
    assert received == []
    actor.send({"type": "TOGGLE"})

    assert received == ["MY_EVENT"]


# The target of a `send_to` in the entry of the state that invokes it is fixed right after that state's entry
# actions (xstate's retryResolve): the event goes to that very child, or to nobody once it has stopped.


def _pinged_child(received):
    def note_start(self):
        received.append(f"start {self.session_id}")

    def note_ping(self):
        received.append(f"PING {self.session_id}")

    return create_machine({"entry": note_start, "on": {"PING": {"actions": note_ping}}})


def test_event_sent_by_entry_to_a_child_stopped_in_the_same_step_reaches_nobody():
    received = []
    machine = create_machine(
        {
            "initial": "idle",
            "states": {
                "idle": {"on": {"GO": "a"}},
                "a": {
                    "entry": send_to("kid", {"type": "PING"}),
                    "invoke": {"id": "kid", "src": _pinged_child(received)},
                    "always": "b",
                },
                "b": {},
            },
        }
    )

    actor = create_actor(machine).start()
    actor.send({"type": "GO"})

    assert actor.snapshot.status == "active"
    assert actor.snapshot.value == "b"
    assert received == []


def test_event_sent_by_entry_reaches_the_child_of_that_entry_not_a_later_one():
    received = []
    machine = create_machine(
        {
            "context": {"rounds": 0},
            "initial": "a",
            "states": {
                "a": {
                    "entry": send_to("kid", {"type": "PING"}),
                    "invoke": {"id": "kid", "src": _pinged_child(received)},
                    "always": {"target": "b", "guard": lambda context: context["rounds"] < 1},
                },
                "b": {"entry": assign({"rounds": lambda context: context["rounds"] + 1}), "always": "a"},
            },
        }
    )

    actor = create_actor(machine).start()

    # the first child stopped before it started, so its PING went nowhere; the second got exactly one
    assert actor.snapshot.status == "active"
    (started,) = [r for r in received if r.startswith("start")]
    assert received == [started, started.replace("start", "PING")]


def test_pure_send_to_from_entry_names_the_invoked_child_itself():
    child = create_machine({})
    machine = create_machine(
        {
            "initial": "a",
            "states": {"a": {"entry": send_to("kid", {"type": "PING"}), "invoke": {"id": "kid", "src": child}}},
        }
    )

    snapshot, actions = machine.initial_transition()

    (send,) = [a for a in actions if a.type == "xstate.sendTo"]
    assert send.params["to"] is snapshot.children["kid"]


# While an actor starts, every action waits for `start()`; then the custom ones run in order, and each built-in's
# effect (emit, send, starting a child) is queued behind them, as xstate's deferred queue does it.


def test_emit_of_the_initial_entry_comes_after_its_custom_actions():
    order = []
    machine = create_machine({"entry": [lambda: order.append("c1"), emit({"type": "EV"}), lambda: order.append("c2")]})
    actor = create_actor(machine)
    actor.on("*", lambda event: order.append(event["type"]))
    actor.start()

    assert order == ["c1", "c2", "EV"]


def test_send_and_spawn_of_the_initial_entry_come_after_its_custom_actions():
    order = []

    def kid(name):
        return create_machine(
            {
                "entry": lambda: order.append(f"{name} starts"),
                "on": {"PING": {"actions": lambda: order.append(f"{name} PING")}},
            }
        )

    machine = create_machine(
        {
            "entry": [
                lambda: order.append("c1"),
                send_to("invoked", {"type": "PING"}),
                spawn_child(kid("spawned"), id="spawned"),
                lambda: order.append("c2"),
            ],
            "invoke": {"id": "invoked", "src": kid("invoked")},
        }
    )
    create_actor(machine).start()

    # the children of the initial snapshot start first (xstate's logic.start), then the entry's custom actions,
    # then the send
    assert order == ["spawned starts", "invoked starts", "c1", "c2", "invoked PING"]


def test_a_running_actor_still_runs_custom_actions_at_once_and_builtins_after_the_step():
    order = []
    machine = create_machine(
        {"on": {"E": {"actions": [lambda: order.append("c1"), emit({"type": "EV"}), lambda: order.append("c2")]}}}
    )
    actor = create_actor(machine)
    actor.on("*", lambda event: order.append(event["type"]))
    actor.start()
    actor.send({"type": "E"})

    assert order == ["c1", "c2", "EV"]
