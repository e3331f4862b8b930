"""A pure statechart interpreter with xstate v5 semantics.

`create_machine(config)` builds a Machine once; `machine.transition(snapshot, event)` returns the next snapshot
and the actions to perform, as data, and runs nothing. `machine.start()` gives a running `Actor`, a thin shell
that performs those actions through an injected clock. See docs/statechart.md.
"""
from .actions import (
    ExecutableAction, assign, cancel, emit, enqueue_actions, forward_to, log, raise_, send_parent, send_to,
    spawn_child, stop_child,
)
from .actor import Actor, ActorSystem, Subscription, create_actor
from .clock import Clock, RealClock, SimulatedClock
from .errors import ConfigError, EventError, GuardError, ImplementationError, SnapshotError, StatechartError
from .events import Event, matches_descriptor, to_event
from .guards import and_, not_, or_, state_in
from .logic import ActorLogic, ActorSnapshot, from_callback, from_promise, from_transition
from .machine import Implementations, Machine, create_machine, get_initial_microsteps, get_microsteps
from .nodes import StateNode, Transition
from .refs import ActorRef
from .snapshot import Snapshot, matches_state

__version__ = "0.1.0"

__all__ = [
    "Actor", "ActorLogic", "ActorRef", "ActorSnapshot", "ActorSystem", "Clock", "ConfigError", "Event", "EventError",
    "ExecutableAction", "GuardError", "ImplementationError", "Implementations", "Machine", "RealClock",
    "SimulatedClock", "Snapshot", "SnapshotError", "StateNode", "StatechartError", "Subscription", "Transition",
    "and_", "assign", "cancel", "create_actor", "create_machine", "emit", "enqueue_actions", "forward_to",
    "from_callback", "from_promise", "from_transition", "get_initial_microsteps", "get_microsteps", "log", "matches_descriptor", "matches_state", "not_", "or_",
    "raise_", "send_parent", "send_to", "spawn_child", "state_in", "stop_child", "to_event",
]
