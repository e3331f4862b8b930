"""A pure statechart interpreter with xstate v5 semantics.

`create_machine(config)` builds a Machine once; `machine.transition(snapshot, event)` returns the next snapshot
and the actions to perform, as data, and runs nothing. `machine.start()` gives a running `Actor`, a thin shell
that performs those actions through an injected clock. See docs/statechart.md.
"""

from engine.core.statechart.actions import (
    ExecutableAction,
    assign,
    cancel,
    emit,
    enqueue_actions,
    forward_to,
    log,
    raise_,
    send_parent,
    send_to,
    spawn_child,
    stop_child,
)
from engine.core.statechart.actor import Actor, ActorSystem, Subscription, create_actor
from engine.core.statechart.clock import Clock, RealClock, SimulatedClock
from engine.core.statechart.errors import (
    ConfigError,
    EventError,
    GuardError,
    ImplementationError,
    SnapshotError,
    StatechartError,
)
from engine.core.statechart.events import Event, matches_descriptor, to_event
from engine.core.statechart.guards import and_, not_, or_, state_in
from engine.core.statechart.logic import ActorLogic, ActorSnapshot, from_callback, from_promise, from_transition
from engine.core.statechart.machine import (
    Implementations,
    StateMachine,
    create_machine,
    get_initial_microsteps,
    get_microsteps,
)
from engine.core.statechart.nodes import StateNode, Transition
from engine.core.statechart.refs import ActorRef
from engine.core.statechart.snapshot import Snapshot, matches_state

__version__ = "0.1.0"

__all__ = [
    "Actor",
    "ActorLogic",
    "ActorRef",
    "ActorSnapshot",
    "ActorSystem",
    "Clock",
    "ConfigError",
    "Event",
    "EventError",
    "ExecutableAction",
    "GuardError",
    "ImplementationError",
    "Implementations",
    "StateMachine",
    "RealClock",
    "SimulatedClock",
    "Snapshot",
    "SnapshotError",
    "StateNode",
    "StatechartError",
    "Subscription",
    "Transition",
    "and_",
    "assign",
    "cancel",
    "create_actor",
    "create_machine",
    "emit",
    "enqueue_actions",
    "forward_to",
    "from_callback",
    "from_promise",
    "from_transition",
    "get_initial_microsteps",
    "get_microsteps",
    "log",
    "matches_descriptor",
    "matches_state",
    "not_",
    "or_",
    "raise_",
    "send_parent",
    "send_to",
    "spawn_child",
    "state_in",
    "stop_child",
    "to_event",
]
