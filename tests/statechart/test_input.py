"""Actor input, ported from xstate's `input.test.ts`.

Input reaches the context factory and the `xstate.init` event of a machine, invoked and spawned children
(static or mapped input), and the non-machine actor logics (promise, transition, callback).
"""

import asyncio

from engine.core.statechart import (
    assign,
    create_actor,
    create_machine,
    from_callback,
    from_promise,
    from_transition,
    spawn_child,
)
from tests.statechart.helpers import started


class TestInput:
    def test_context_factory_receives_the_input(self):
        counts = []
        machine = create_machine(
            {
                "context": lambda input: {"count": input["startCount"]},
                "entry": lambda context: counts.append(context["count"]),
            }
        )
        started(machine, input={"startCount": 42})
        assert counts == [42]

    def test_init_event_carries_the_input(self):
        events = []
        machine = create_machine({"entry": lambda event: events.append(event)})
        started(machine, input={"greeting": "hello"})

        assert len(events) == 1
        assert events[0]["type"] == "xstate.init"
        assert events[0]["input"]["greeting"] == "hello"
        assert events[0].input == {"greeting": "hello"}

    def test_missing_required_input_puts_the_actor_in_error(self):
        machine = create_machine({"context": lambda input: {"message": f"Hello, {input['greeting']}"}})
        # xstate computes the first snapshot when the actor is created; the factory's failure is an
        # error status there, not an exception
        snapshot = create_actor(machine).snapshot
        assert snapshot.status == "error"
        assert snapshot.error is not None

    def test_unexpected_input_is_harmless(self):
        machine = create_machine({"context": {"count": 42}})
        actor = create_actor(machine, input={"unused": True})
        actor.start()
        assert actor.snapshot.status == "active"
        assert actor.snapshot.context == {"count": 42}

    def test_machine_without_input_starts(self):
        actor = create_actor(create_machine({"context": {"count": 42}}))
        actor.start()
        assert actor.snapshot.context == {"count": 42}

    def test_invoked_machine_receives_its_input(self):
        seen = []
        invoked = create_machine(
            {
                "context": lambda input: input,
                "entry": lambda context, event: seen.append((dict(context), dict(event["input"]))),
            }
        )
        machine = create_machine({"invoke": {"src": invoked, "input": {"greeting": "hello"}}})
        started(machine)
        assert seen == [({"greeting": "hello"}, {"greeting": "hello"})]

    def test_spawned_machine_receives_its_input(self):
        seen = []
        spawned = create_machine(
            {
                "context": lambda input: input,
                "entry": lambda context, event: seen.append((dict(context), dict(event["input"]))),
            }
        )
        machine = create_machine({"entry": assign(lambda spawn: {"ref": spawn(spawned, input={"greeting": "hello"})})})
        actor = started(machine)
        assert seen == [({"greeting": "hello"}, {"greeting": "hello"})]
        assert actor.snapshot.context["ref"].get_snapshot().context == {"greeting": "hello"}

    def test_promise_actor_with_input_awaitable(self):
        async def scenario():
            async def echo(input):
                return input

            actor = started(from_promise(echo), input={"count": 42})
            await asyncio.sleep(0.005)
            return actor.snapshot

        snapshot = asyncio.run(scenario())
        assert snapshot.status == "done"
        assert snapshot.output == {"count": 42}

    def test_promise_actor_with_input_plain_return(self):
        actor = started(from_promise(lambda input: input), input={"count": 42})
        assert actor.snapshot.status == "done"
        assert actor.snapshot.output == {"count": 42}

    def test_transition_actor_initial_state_from_input(self):
        logic = from_transition(lambda state: state, lambda input: input)
        actor = started(logic, input={"count": 42})
        assert actor.snapshot.context == {"count": 42}

    def test_callback_actor_receives_its_input(self):
        seen = []
        started(from_callback(lambda input: seen.append(input)), input={"count": 42})
        assert seen == [{"count": 42}]

    def test_static_input_for_a_referenced_actor(self):
        seen = []

        def child_context(input):
            seen.append(input)
            return {}

        child = create_machine({"context": child_context})
        machine = create_machine({"invoke": {"src": "child", "input": 42}}, actors={"child": child})
        started(machine)
        assert seen == [42]

    def test_mapped_input_for_a_referenced_actor(self):
        seen = []

        def child_context(input):
            seen.append(input)
            return {}

        child = create_machine({"context": child_context})
        machine = create_machine(
            {
                "context": lambda input: {"count": input},
                "invoke": {"src": "child", "input": lambda context: context["count"] + 100},
            },
            actors={"child": child},
        )
        started(machine, input=42)
        assert seen == [142]

    def test_invoke_input_mapper_receives_self(self):
        selves = []
        machine = create_machine({"invoke": {"src": create_machine({}), "input": lambda self: selves.append(self)}})
        actor = started(machine)
        assert len(selves) == 1
        assert selves[0].session_id == actor.session_id

    def test_spawn_child_input_mapper_receives_self(self):
        selves = []
        machine = create_machine(
            {"entry": spawn_child("child", input=lambda self: selves.append(self))},
            actors={"child": create_machine({})},
        )
        actor = started(machine)
        assert len(selves) == 1
        assert selves[0].session_id == actor.session_id
