"""The algorithm: a macrostep repeats microsteps (eventless transitions first, then the internal queue) until the
machine is stable; a microstep exits states, runs transition actions, enters states.

One function serves both executors: `Scope.sink` receives each action as it resolves. The pure `transition()`
collects them; a running Actor performs them. See https://www.w3.org/TR/scxml/#microstepProcedure.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from engine.core.statechart.actions.assign import Assign
from engine.core.statechart.actions.base import BuiltinAction, ExecutableAction
from engine.core.statechart.actions.stop import stop_child
from engine.core.statechart.callables import call_with
from engine.core.statechart.entry_exit import compute_entry_set, entry_actions_of, exit_actions_of, initial_state_nodes
from engine.core.statechart.errors import ImplementationError, StatechartError
from engine.core.statechart.events import INIT, STOP, Event, done_state_event, init_event
from engine.core.statechart.guards import evaluate_guard
from engine.core.statechart.nodes import InitialTransition
from engine.core.statechart.refs import ActorRef
from engine.core.statechart.selection import (
    compute_exit_set,
    remove_conflicting_transitions,
    select_eventless_transitions,
    select_transitions,
)
from engine.core.statechart.snapshot import Snapshot

if TYPE_CHECKING:
    from engine.core.statechart.machine import StateMachine
    from engine.core.statechart.nodes import StateNode, Transition

__all__ = ["Scope", "macrostep", "initial_snapshot", "resolve_actions"]


class Spawner:
    """The `spawn` argument of `assign`: creates child refs that join the snapshot with the assignment."""

    def __init__(self, scope: Scope, snapshot: Snapshot, event: Event) -> None:
        self.scope, self.snapshot, self.event = scope, snapshot, event
        self.spawned: dict[str, ActorRef] = {}

    def __call__(
        self,
        src: Any,
        id: str | None = None,
        input: Any = None,
        system_id: str | None = None,
        sync_snapshot: bool = False,
    ) -> ActorRef:
        logic = self.scope.machine.resolve_logic(src, None)
        if id is None:
            self.snapshot, id = self.snapshot.next_id("x")
        if callable(input) and isinstance(src, str):
            input = call_with(input, context=self.snapshot.context, event=self.event, self=self.scope.self_ref)
        ref = self.scope.make_ref(id, src, logic, input, system_id, sync_snapshot)
        self.spawned[id] = ref
        self.scope.sink(
            ExecutableAction(
                "xstate.spawnChild",
                {
                    "id": id,
                    "systemId": system_id,
                    "actorRef": ref,
                    "src": src,
                    "input": input,
                },
                None,
                {"context": self.snapshot.context, "event": self.event},
            )
        )
        return ref

    def children_with(self, children: dict[str, ActorRef]) -> dict[str, ActorRef]:
        return {**children, **self.spawned} if self.spawned else children


class Scope:
    """Everything one macrostep needs besides the snapshot: the machine, who `self` is, where actions go."""

    __slots__ = ("machine", "self_ref", "system", "sink", "internal_queue", "deferred_actor_ids", "retries")

    def __init__(
        self, machine: StateMachine, self_ref: Any, system: Any, sink: Callable[[ExecutableAction], None]
    ) -> None:
        self.machine = machine
        self.self_ref = self_ref
        self.system = system
        self.sink = sink
        self.internal_queue: list[Event] = []
        self.deferred_actor_ids: tuple[str, ...] = ()
        self.retries: list[dict[str, Any]] = []

    def spawner(self, snapshot: Snapshot, event: Event) -> Spawner:
        return Spawner(self, snapshot, event)

    def make_ref(
        self, id: str, src: Any, logic: Any, input: Any, system_id: str | None, sync_snapshot: bool
    ) -> ActorRef:
        return ActorRef(
            id, src, logic, input=input, system_id=system_id, sync_snapshot=sync_snapshot, parent=self.self_ref
        )

    def evaluate_guard(self, guard: Any, snapshot: Snapshot, event: Event) -> bool:
        return evaluate_guard(guard, snapshot.context, event, snapshot)


def _action_name(action: Any) -> str:
    if isinstance(action, str):
        return action
    if isinstance(action, dict):
        return str(action.get("type"))
    return getattr(action, "__name__", None) or "(anonymous)"


def describe(where: Any) -> str:
    """Where actions come from, for error messages: built only when one is raised."""
    if isinstance(where, str):
        return where
    kind, subject = where
    if kind == "transition":
        return f"transition of state '#{subject.source.id}' on '{subject.event_type or 'always'}'"
    return f"{kind} of state '#{subject.id}'"


def resolve_actions(snapshot: Snapshot, event: Event, scope: Scope, actions: Any, where: Any) -> Snapshot:
    """Resolve actions in order: built-ins update the snapshot and go to the sink as data; custom ones go to
    the sink with their callable."""
    machine = snapshot.machine
    for action in actions:
        params: Any = None
        if isinstance(action, BuiltinAction) or (callable(action) and not isinstance(action, (str, dict))):
            impl: Any = action
        else:
            if isinstance(action, dict):
                name = action.get("type")
                if not isinstance(name, str):
                    raise StatechartError(f"an action dict needs a string 'type' ({describe(where)}); got {action!r}")
            elif isinstance(action, str):
                name = action
            else:
                raise StatechartError(
                    f"an action is a name, a {{'type', 'params'}} dict or a callable ({describe(where)}); "
                    f"got {action!r}"
                )
            registered = machine.implementations.actions
            if name not in registered:
                raise ImplementationError(
                    f"action '{name}' ({describe(where)}) is not registered in machine '{machine.id}' "
                    f"(actions={sorted(registered)})"
                )
            impl = registered[name]
            if isinstance(action, dict) and "params" in action:
                params = action["params"]
                if callable(params):
                    params = call_with(params, context=snapshot.context, event=event)
        args = {"context": snapshot.context, "event": event, "self": scope.self_ref, "system": scope.system}
        if isinstance(impl, BuiltinAction):
            snapshot, resolved, nested = impl.resolve(scope, snapshot, args, params)
            if impl.executes:
                scope.sink(ExecutableAction(impl.type, resolved, None, {"context": args["context"], "event": event}))
            if nested:
                snapshot = resolve_actions(snapshot, event, scope, nested, where)
            continue
        if impl is None:
            continue
        scope.sink(ExecutableAction(_action_name(action), params, impl, args))
    return snapshot


# -- exit / enter ---------------------------------------------------------------------------------------------


def _exit_states(
    snapshot: Snapshot,
    event: Event,
    scope: Scope,
    transitions: list[Transition],
    active: dict[StateNode, None],
    history_value: dict[str, tuple[StateNode, ...]],
) -> tuple[Snapshot, dict[str, tuple[StateNode, ...]]]:
    to_exit = compute_exit_set(transitions, active, history_value)
    to_exit.sort(key=lambda n: n.order, reverse=True)
    changed: dict[str, tuple[StateNode, ...]] | None = None
    for node in to_exit:
        for history in node.history_nodes:
            if history.history == "deep":
                remembered = tuple(s for s in active if s.is_atomic and node in s.ancestor_set)
            else:
                remembered = tuple(s for s in active if s.parent is node)
            if changed is None:
                changed = dict(history_value)
            changed[history.id] = remembered
    for node in to_exit:
        actions = exit_actions_of(node)
        if actions:
            snapshot = resolve_actions(snapshot, event, scope, actions, ("exit", node))
        del active[node]
    return snapshot, (changed if changed is not None else history_value)


def _resolve_output(mapper: Any, context: Any, event: Event, self_ref: Any) -> Any:
    if callable(mapper):
        return call_with(mapper, context=context, event=event, self=self_ref)
    return mapper


def is_in_final_state(active: dict[StateNode, None], node: StateNode) -> bool:
    if node.type == "compound":
        return any(c.type == "final" and c in active for c in node.children)
    if node.type == "parallel":
        return all(is_in_final_state(active, c) for c in node.children)
    return node.type == "final"


def _enter_states(
    snapshot: Snapshot,
    event: Event,
    scope: Scope,
    transitions: list[Transition],
    active: dict[StateNode, None],
    history_value: dict[str, tuple[StateNode, ...]],
    is_initial: bool,
) -> Snapshot:
    to_enter: dict[StateNode, None] = {}
    default_entry: dict[StateNode, None] = {}
    compute_entry_set(transitions, history_value, default_entry, to_enter)
    root = snapshot.machine.root
    if is_initial:
        default_entry[root] = None
    completed: set[StateNode] = set()
    for node in sorted(to_enter, key=lambda n: n.order):
        active[node] = None
        actions: Any = entry_actions_of(node)
        if node in default_entry and node.initial is not None and node.initial.actions:
            actions = (*actions, *node.initial.actions)
        if actions:
            snapshot = _run_entry(snapshot, event, scope, node, actions)
        if node.type != "final":
            continue
        parent = node.parent
        marker = parent if (parent is not None and parent.type == "parallel") else (parent.parent if parent else None)
        completion = marker or node
        if parent is not None and parent.type == "compound":
            output = _resolve_output(node.output, snapshot.context, event, scope.self_ref) if node.has_output else None
            scope.internal_queue.append(done_state_event(parent.id, output))
        while (
            marker is not None
            and marker.type == "parallel"
            and marker not in completed
            and is_in_final_state(active, marker)
        ):
            completed.add(marker)
            scope.internal_queue.append(done_state_event(marker.id))
            completion = marker
            marker = marker.parent
        if marker is not None:
            continue
        snapshot = snapshot.replace(status="done", output=_machine_output(snapshot, event, scope, completion))
    return snapshot


def _run_entry(snapshot: Snapshot, event: Event, scope: Scope, node: StateNode, actions: Any) -> Snapshot:
    """Resolve one state's entry actions; a `send_to` among them may name a child this very state invokes."""
    scope.deferred_actor_ids = node.invoke_ids
    try:
        snapshot = resolve_actions(snapshot, event, scope, actions, ("entry", node))
    finally:
        scope.deferred_actor_ids = ()
    if scope.retries:
        _retry_send_targets(snapshot, scope)
    return snapshot


def _retry_send_targets(snapshot: Snapshot, scope: Scope) -> None:
    """A `send_to` in an entry that named a child this state invokes now names that very child (xstate's
    `retryResolve`): the event reaches it, or nobody once it has stopped, never a later child with the same id."""
    for params in scope.retries:
        ref = snapshot.children.get(params["to"])
        params["to"] = ref
        timer = params.get("timer")
        if timer is not None:
            timer.target = ref
    scope.retries.clear()


def _machine_output(snapshot: Snapshot, event: Event, scope: Scope, completion: StateNode) -> Any:
    root = snapshot.machine.root
    if not root.has_output:
        return None
    inner = None
    if completion.has_output and completion.parent is not None:
        inner = _resolve_output(completion.output, snapshot.context, event, scope.self_ref)
    return _resolve_output(root.output, snapshot.context, done_state_event(completion.id, inner), scope.self_ref)


def microstep(
    transitions: Sequence[Transition], snapshot: Snapshot, event: Event, scope: Scope, is_initial: bool = False
) -> Snapshot:
    if not transitions:
        return snapshot
    if not is_initial and snapshot.status == "active":
        configuration = snapshot.configuration
        if configuration is not None:
            steps = configuration.steps
            key = transitions[0] if len(transitions) == 1 else tuple(transitions)
            step = steps[key] if key in steps else configuration.learn_step(snapshot, transitions, key)
            if step is not None:
                # the exits and entries were worked out before: only the actions run
                for node, actions in step.exits:
                    snapshot = resolve_actions(snapshot, event, scope, actions, ("exit", node))
                for t in step.transitions:
                    if t.actions:
                        snapshot = resolve_actions(snapshot, event, scope, t.actions, ("transition", t))
                for node, actions in step.entries:
                    snapshot = _run_entry(snapshot, event, scope, node, actions)
                target = step.target
                return snapshot if target is None else snapshot.moved(target)
    active = dict.fromkeys(snapshot.nodes)
    history_value = snapshot.history_value
    filtered = remove_conflicting_transitions(transitions, active, history_value)
    if not is_initial:
        snapshot, history_value = _exit_states(snapshot, event, scope, filtered, active, history_value)
    for t in filtered:
        if t.actions:
            snapshot = resolve_actions(snapshot, event, scope, t.actions, ("transition", t))
    snapshot = _enter_states(snapshot, event, scope, filtered, active, history_value, is_initial)
    nodes = tuple(active)
    if snapshot.status == "done":
        # xstate sorts its node list in place here, so a done snapshot keeps reverse document order
        nodes = tuple(sorted(nodes, key=lambda n: n.order, reverse=True))
        exits = [a for n in nodes for a in n.exit]
        if exits:
            snapshot = resolve_actions(snapshot, event, scope, exits, "exit on completion")
    if (
        history_value is snapshot.history_value
        and len(nodes) == len(snapshot.nodes)
        and snapshot.node_set.issuperset(nodes)
    ):
        # the same configuration keeps its old order, as in xstate (order decides which region is asked first)
        return snapshot
    return snapshot.replace(nodes=nodes, history_value=history_value)


def _stop_children(snapshot: Snapshot, event: Event, scope: Scope) -> Snapshot:
    if not snapshot.children:
        return snapshot
    return resolve_actions(
        snapshot, event, scope, [stop_child(ref) for ref in list(snapshot.children.values())], "stopping children"
    )


def macrostep(
    snapshot: Snapshot, event: Event, scope: Scope, on_microstep: Callable[[Snapshot], None] | None = None
) -> Snapshot:
    """Process one external event to completion (run-to-completion)."""
    etype = event["type"]
    if etype == STOP:
        snapshot = _stop_children(snapshot, event, scope).replace(status="stopped")
        if on_microstep:
            on_microstep(snapshot)
        return snapshot
    next_event = event
    if etype != INIT:
        configuration = snapshot.configuration
        if configuration is not None:
            transitions = configuration.select(snapshot, event)
        else:
            transitions = select_transitions(snapshot, event)
        if not transitions and etype.startswith("xstate.error.actor"):
            # xstate 5.33: the machine fails, and its children are stopped and leave `children` first
            snapshot = _stop_children(snapshot, event, scope).replace(status="error", error=event.get("error"))
            if on_microstep:
                on_microstep(snapshot)
            return snapshot
        snapshot = microstep(transitions, snapshot, event, scope)
        if on_microstep:
            on_microstep(snapshot)
    select_eventless = scope.machine.has_always
    limit = scope.machine.max_iterations
    iterations = 0
    queue = scope.internal_queue
    while snapshot.status == "active":
        iterations += 1
        if iterations > limit:
            raise StatechartError(
                f"Infinite loop detected: machine '{scope.machine.id}' did more than {limit} microsteps without "
                "coming to rest; a cycle of eventless transitions or raised events (such as A -> B -> C -> A) is the "
                "usual cause"
            )
        enabled: Sequence[Transition] = select_eventless_transitions(snapshot, next_event) if select_eventless else ()
        previous = snapshot if enabled else None
        if not enabled:
            if not queue:
                break
            next_event = queue.pop(0)
            enabled = select_transitions(snapshot, next_event)
        snapshot = microstep(enabled, snapshot, next_event, scope)
        select_eventless = snapshot is not previous and scope.machine.has_always
        if on_microstep:
            on_microstep(snapshot)
    if snapshot.status != "active":
        # the children are stopped, yet a done (or failed) snapshot still lists them, as xstate's does
        _stop_children(snapshot, next_event, scope)
    return snapshot


def _context_assign(machine: StateMachine) -> BuiltinAction:
    """The machine's context factory as one `assign` on `xstate.init` (built once per machine)."""
    cached = machine.__dict__.get("_context_assign")
    if cached is not None:
        return cached
    factory = machine.config["context"]

    def build(spawn: Any, self: Any, event: Event) -> Any:
        made = call_with(factory, input=event["input"], spawn=spawn, self=self)
        if not isinstance(made, dict):
            raise StatechartError(f"the context callable of machine '{machine.id}' must return a dict; got {made!r}")
        return made

    machine.__dict__["_context_assign"] = action = Assign(build)
    return action


def initial_snapshot(
    machine: StateMachine,
    input: Any,
    scope: Scope,
    on_microstep: Callable[[Snapshot], None] | None = None,
    *,
    errors_as_snapshot: bool = False,
) -> Snapshot:
    """The pre-initial state (context from `input`), the initial microstep, then a macrostep on `xstate.init`.

    With `errors_as_snapshot` (a running actor's start, as xstate 5.33's `getInitialSnapshot`), an exception on
    the way is not raised: the result is the pre-initial state in status "error", so it keeps the initial value
    and the context that `context` gave (or the fresh one, if `context` itself raised)."""

    event = init_event(input)
    root = machine.root
    context_config = machine.config.get("context")
    if context_config is not None and not callable(context_config) and not isinstance(context_config, dict):
        raise StatechartError(f"the context of machine '{machine.id}' must be a dict or a callable of input")
    context = copy.deepcopy(context_config) if isinstance(context_config, dict) else {}
    snapshot = Snapshot(machine, (root,), context)
    try:
        if callable(context_config):
            snapshot = resolve_actions(snapshot, event, scope, [_context_assign(machine)], "context")
        initial = InitialTransition(root, None, {})
        initial.target = tuple(initial_state_nodes(root))
        initial.reenter = True
        entered = microstep([initial], snapshot, event, scope, is_initial=True)
        if on_microstep:
            on_microstep(entered)
        return macrostep(entered, event, scope, on_microstep)
    except Exception as err:
        if not errors_as_snapshot:
            raise
        return snapshot.replace(status="error", error=err)
