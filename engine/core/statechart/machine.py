"""`create_machine` and `Machine`: the config built once, and the pure functions over its snapshots."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from engine.core.statechart.actions.base import ExecutableAction
from engine.core.statechart.actor import create_actor
from engine.core.statechart.errors import ConfigError, ImplementationError, SnapshotError
from engine.core.statechart.events import Event, to_event
from engine.core.statechart.logic import to_logic
from engine.core.statechart.macrostep import Scope, initial_snapshot, is_in_final_state, macrostep
from engine.core.statechart.nodes import StateNode, to_state_path
from engine.core.statechart.refs import ActorRef
from engine.core.statechart.selection import UNSET, select_transitions
from engine.core.statechart.serialize import node_definition, nodes_for_value, snapshot_from_json
from engine.core.statechart.snapshot import Snapshot

if TYPE_CHECKING:
    from engine.core.statechart.actor import Actor
    from engine.core.statechart.clock import Clock
    from engine.core.statechart.configuration import Configuration
    from engine.core.statechart.nodes import InvokeDef, Transition

__all__ = ["StateMachine", "create_machine", "Implementations", "get_microsteps", "get_initial_microsteps"]


@dataclass(frozen=True)
class Implementations:
    """What named guards, actions, actors and delays resolve to."""

    guards: Mapping[str, Any] = field(default_factory=dict)
    actions: Mapping[str, Any] = field(default_factory=dict)
    actors: Mapping[str, Any] = field(default_factory=dict)
    delays: Mapping[str, Any] = field(default_factory=dict)


class StateMachine:
    """A built statechart. Pure: `initial_transition` and `transition` compute, and never run anything."""

    def __init__(
        self,
        config: Mapping[str, Any],
        implementations: Implementations | None = None,
        max_iterations: float = math.inf,
    ) -> None:
        if not isinstance(config, Mapping):
            raise ConfigError(f"a machine config is a dict; got {type(config).__name__}")
        self.config = config if isinstance(config, dict) else dict(config)
        self.id: str = self.config.get("id") or "(machine)"
        self.implementations = implementations or Implementations()
        options = self.config.get("options") or {}
        self.max_iterations = options.get("maxIterations", options.get("max_iterations", max_iterations))
        self.id_map: dict[str, StateNode] = {}
        self.root = StateNode(self.config, self, self.id, None)
        self.root.initialize()
        self._self_ref = ActorRef(self.id, None, self)
        nodes = list(self.id_map.values())
        self.adjacency_cache: dict[tuple[StateNode, ...], dict[StateNode, list[StateNode]]] = {}
        self.configurations: dict[tuple[StateNode, ...], Configuration] = {}
        self.has_history = any(n.type == "history" for n in nodes)
        self.has_always = any(n.always for n in nodes)
        # what each configuration selects and steps to is kept (configuration.py) unless history makes exits and
        # entries depend on more than the active nodes; set False to take the general path every time
        self.caches_configurations = not self.has_history
        if not self.has_history:
            for node in nodes:
                for t in node.all_transitions():
                    t.static, t.domain_cache = True, UNSET

    # -- building ------------------------------------------------------------------------------------------

    def provide(
        self,
        guards: Mapping[str, Any] | None = None,
        actions: Mapping[str, Any] | None = None,
        actors: Mapping[str, Any] | None = None,
        delays: Mapping[str, Any] | None = None,
    ) -> StateMachine:
        """A new Machine with these implementations added over the current ones."""
        impl = self.implementations
        return StateMachine(
            self.config,
            Implementations(
                guards={**impl.guards, **(guards or {})},
                actions={**impl.actions, **(actions or {})},
                actors={**impl.actors, **(actors or {})},
                delays={**impl.delays, **(delays or {})},
            ),
            self.max_iterations,
        )

    @property
    def states(self) -> dict[str, StateNode]:
        return self.root.states

    @property
    def events(self) -> list[str]:
        return self.root.events

    def get_state_node_by_id(self, state_id: str) -> StateNode:
        path = to_state_path(state_id)
        head = path[0][1:] if path[0].startswith("#") else path[0]
        node = self.id_map.get(head)
        if node is None:
            raise ConfigError(f"machine '{self.id}' has no state with id '#{head}'")
        return node.get_by_path(path[1:]) if len(path) > 1 else node

    def resolve_logic(self, src: Any, invoke: InvokeDef | None) -> Any:
        """The actor logic `src` names: a registered actor, or logic given inline."""
        if isinstance(src, str):
            actors = self.implementations.actors
            if src not in actors:
                where = f" (invoked by state '#{invoke_state(self, invoke)}')" if invoke is not None else ""
                raise ImplementationError(
                    f"actor '{src}' is not registered in machine '{self.id}'{where} (actors={sorted(actors)})"
                )
            logic = to_logic(actors[src])
        else:
            logic = to_logic(src)
        if logic is None:
            raise ImplementationError(
                f"{src!r} is not actor logic (a Machine, from_promise/from_callback/"
                "from_transition logic, or a callable)"
            )
        return logic

    def logic_for_child(self, child_id: str) -> Any:
        """The inline logic an invoke with this id uses (restoring a child persisted without a named src)."""
        for node in self.id_map.values():
            for inv in node.invoke:
                if inv.id == child_id:
                    return self.resolve_logic(inv.src, inv)
        return None

    # -- pure transitions ----------------------------------------------------------------------------------

    def _collecting_scope(self) -> tuple[Scope, list[ExecutableAction]]:
        actions: list[ExecutableAction] = []
        return Scope(self, self._self_ref, None, actions.append), actions

    def initial_transition(self, input: Any = None) -> tuple[Snapshot, list[ExecutableAction]]:
        """The initial snapshot and the actions a host would run to start it. Nothing runs."""
        scope, actions = self._collecting_scope()
        return initial_snapshot(self, input, scope), actions

    def transition(self, snapshot: Snapshot, event: Any) -> tuple[Snapshot, list[ExecutableAction]]:
        """The next snapshot after `event`, and the actions a host would run. Nothing runs."""
        snapshot = self._adopt(snapshot)
        scope, actions = self._collecting_scope()
        return macrostep(snapshot, to_event(event), scope), actions

    def microsteps(self, snapshot: Snapshot, event: Any) -> list[Snapshot]:
        """Every microstep's snapshot while processing `event`."""
        snapshot = self._adopt(snapshot)
        scope, _ = self._collecting_scope()
        steps: list[Snapshot] = []
        macrostep(snapshot, to_event(event), scope, steps.append)
        return steps

    def microsteps_with_actions(
        self, snapshot: Snapshot | None, event: Any = None, input: Any = None
    ) -> list[tuple[Snapshot, list[ExecutableAction]]]:
        """Each microstep's snapshot with the actions it produced; from the initial state when `snapshot` is None."""
        scope, actions = self._collecting_scope()
        steps: list[tuple[Snapshot, list[ExecutableAction]]] = []
        seen = 0

        def record(step: Snapshot) -> None:
            nonlocal seen
            steps.append((step, actions[seen:]))
            seen = len(actions)

        if snapshot is None:
            initial_snapshot(self, input, scope, record)
        else:
            macrostep(self._adopt(snapshot), to_event(event), scope, record)
        return steps

    def get_transition_data(self, snapshot: Snapshot, event: Event) -> list[Transition]:
        return list(select_transitions(snapshot, event))

    def _adopt(self, snapshot: Any) -> Snapshot:
        """The snapshot, checked to be this machine's (one of a `provide`d twin is re-resolved onto this one)."""
        if not isinstance(snapshot, Snapshot):
            raise SnapshotError(
                f"machine '{self.id}' needs a Snapshot; got {type(snapshot).__name__} "
                "(restore JSON with machine.resolve_snapshot first)"
            )
        if snapshot.machine is self:
            return snapshot
        if snapshot.machine.config is self.config:
            return self.resolve_snapshot(snapshot.to_json())
        raise SnapshotError(f"this snapshot belongs to machine '{snapshot.machine.id}', not '{self.id}'")

    # -- snapshots from outside ----------------------------------------------------------------------------

    def resolve_state(self, config: Mapping[str, Any]) -> Snapshot:
        """A snapshot at a given `value` (and `context`), as xstate's `machine.resolveState`."""
        nodes = nodes_for_value(self, config["value"])
        snapshot = Snapshot(
            self,
            tuple(nodes),
            config.get("context") or {},
            status=config.get("status", "active"),
            output=config.get("output"),
            error=config.get("error"),
        )
        if is_in_final_state(dict.fromkeys(nodes), self.root):
            snapshot = snapshot.replace(status="done")
        return snapshot

    def resolve_snapshot(self, data: Mapping[str, Any]) -> Snapshot:
        """Restore a snapshot from its `to_json()` form (children, history and timers included)."""
        return snapshot_from_json(self, data)

    # -- as actor logic (used by the Actor shell) ----------------------------------------------------------

    kind = "machine"

    def get_initial_snapshot(self, actor: Actor, input: Any) -> Snapshot:
        """An actor's first snapshot; one that fails on the way is in status "error" and keeps the pre-initial
        value and context, as in xstate 5.33 (the pure `initial_transition` raises instead)."""
        return initial_snapshot(self, input, Scope(self, actor, actor.system, actor.sink), errors_as_snapshot=True)

    def transition_in(self, snapshot: Snapshot, event: Event, actor: Actor) -> Snapshot:
        """One macrostep of a running actor. Its mailbox runs one event at a time, so the actor keeps one Scope
        for all of them, emptied of what a failed or finished macrostep may have left."""
        scope = actor.scope
        if scope is None:
            scope = actor.scope = Scope(self, actor, actor.system, actor.sink)
        elif scope.internal_queue or scope.retries:
            scope.internal_queue.clear()
            scope.retries.clear()
        return macrostep(snapshot, event, scope)

    def get_persisted_snapshot(self, snapshot: Snapshot, actor: Actor | None = None) -> dict[str, Any]:
        return snapshot.to_json()

    def restore_snapshot(self, data: Any, actor: Actor) -> Snapshot:
        if isinstance(data, Snapshot):
            return self._adopt(data)
        return self.resolve_snapshot(data)

    def start(self, input: Any = None, clock: Clock | None = None, **options: Any) -> Actor:
        """A running Actor for this machine (`create_actor(machine, ...).start()`)."""
        return create_actor(self, input=input, clock=clock, **options).start()

    @property
    def definition(self) -> dict[str, Any]:
        return node_definition(self.root)

    def __repr__(self) -> str:
        return f"StateMachine({self.id!r}, {len(self.id_map)} states)"


def invoke_state(machine: StateMachine, invoke: InvokeDef) -> str:
    for node in machine.id_map.values():
        if invoke in node.invoke:
            return node.id
    return "?"


def create_machine(
    config: Mapping[str, Any],
    guards: Mapping[str, Any] | None = None,
    actions: Mapping[str, Any] | None = None,
    actors: Mapping[str, Any] | None = None,
    delays: Mapping[str, Any] | None = None,
    max_iterations: float = math.inf,
) -> StateMachine:
    """Build a Machine from an xstate v5 config dict, with named implementations."""
    return StateMachine(
        config,
        Implementations(
            guards=dict(guards or {}), actions=dict(actions or {}), actors=dict(actors or {}), delays=dict(delays or {})
        ),
        max_iterations,
    )


def get_microsteps(
    machine: StateMachine, snapshot: Snapshot, event: Any
) -> list[tuple[Snapshot, list[ExecutableAction]]]:
    """xstate's `getMicrosteps`: every microstep of processing `event`, with its actions."""
    return machine.microsteps_with_actions(snapshot, event)


def get_initial_microsteps(machine: StateMachine, input: Any = None) -> list[tuple[Snapshot, list[ExecutableAction]]]:
    """xstate's `getInitialMicrosteps`: the microsteps of starting the machine, with their actions."""
    return machine.microsteps_with_actions(None, input=input)
