"""Reading the live Machine without moving it: the Allowed picks (which Menu events the active configuration
would take now, guards asked), and Rest (nothing runs below an Agent's state, and no timer could move it).

A guard that reads only the context decides exactly. A guard that reads the pick's input cannot decide before the
pick: the probe event raises `PickInputRead` on any such read, directly or through a copy, so that pick stays
allowed and the guard decides when it comes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.core.statechart.errors import GuardError
from engine.core.statechart.events import Event
from engine.core.statechart.machine import StateMachine
from engine.core.statechart.nodes import StateNode
from engine.core.statechart.selection import select_transitions
from engine.core.statechart.snapshot import Snapshot
from engine.core.workflow import Machine

__all__ = ["PartyEvent", "ProbeEvent", "PickInputRead", "allowed_events", "at_rest", "targets_self"]


class PartyEvent(Event):
    """An event a party delivered (a pick, a Gate's event): its input reads as attributes, as a dict, or as its
    pydantic model would dump it (`event.model_dump()`), and `event.sender` says who sent it."""

    __slots__ = ()

    def model_dump(self, **_: Any) -> dict[str, Any]:
        return {key: value for key, value in self.items() if key not in ("type", "sender")}


class PickInputRead(BaseException):
    """A guard read the pick's input while the Allowed picks were being probed. A BaseException, so a guard that
    swallows every Exception cannot hide the read."""


class ProbeEvent(PartyEvent):
    """An event with only `type` and `sender`: reading anything else, directly or through a copy (`dict(event)`,
    `{**event}`, `.items()`, iteration, `.model_dump()`...), tells us the guard needs the pick's input."""

    __slots__ = ()

    def __getitem__(self, key: str) -> Any:
        if key in ("type", "sender"):
            return dict.__getitem__(self, key)
        raise PickInputRead(key)

    def get(self, key: str, default: Any = None) -> Any:
        if key in ("type", "sender"):
            return dict.get(self, key, default)
        raise PickInputRead(key)

    def __getattr__(self, name: str) -> Any:
        if name in ("type", "sender"):
            return dict.get(self, name)
        raise PickInputRead(name)

    def __contains__(self, key: object) -> bool:
        if key in ("type", "sender"):
            return dict.__contains__(self, key)
        raise PickInputRead(str(key))

    def _whole(self, *args: Any, **kwargs: Any) -> Any:
        raise PickInputRead("the whole input")

    __iter__ = keys = items = values = copy = model_dump = __len__ = __eq__ = __ne__ = _whole  # type: ignore
    __or__ = __ror__ = __reduce__ = __reduce_ex__ = _whole  # type: ignore
    __hash__ = None  # type: ignore[assignment]


def allowed_events(machine: Machine, snapshot: Snapshot, agent: str) -> list[str]:
    """The events of the Agent's Menu, in Menu order, that the active configuration would take now: a transition
    with a target or actions is selected, or a guard needs the pick's input to decide."""
    allowed = []
    sender = {"party": "agent", "id": agent}
    active = snapshot.node_set
    for name in machine.menu_names(agent):
        if machine.takers(name).isdisjoint(active):
            continue
        probe = ProbeEvent(type=name, sender=sender)
        try:
            transitions = select_transitions(snapshot, probe)
        except GuardError as err:
            if isinstance(err.__cause__, PickInputRead):
                allowed.append(name)
            continue
        except PickInputRead:
            allowed.append(name)
            continue
        if any(t.target is not None or t.actions for t in transitions):
            allowed.append(name)
    return allowed


def at_rest(
    statechart: StateMachine, snapshot: Snapshot, state: StateNode, invoke_nodes: Mapping[str, StateNode]
) -> bool:
    """Rest: nothing runs below the Agent's state, and no timer is set that could move it to another state
    inside it."""
    for child_id in snapshot.children:
        node = invoke_nodes.get(child_id)
        if node is not None and state in node.ancestor_set:
            return False
    return not any(
        _moves_inside(snapshot, timer.event["type"], state)
        for timer in snapshot.timers.values()
        if targets_self(statechart, snapshot, timer.target)
    )


def _moves_inside(snapshot: Snapshot, event_type: str, state: StateNode) -> bool:
    """Whether an event, when it comes, could move `state` to another state inside it: a transition of an
    active state at or below it that targets below it. Guards are not asked: they decide when the timer
    fires, so such a timer keeps the state from Rest until it has fired."""
    for node in snapshot.node_set:
        if node is not state and state not in node.ancestor_set:
            continue
        for t in node.candidates(event_type):
            if any(target is not state and state in target.ancestor_set for target in t.target or ()):
                return True
    return False


def targets_self(statechart: StateMachine, snapshot: Snapshot, target: Any) -> bool:
    """A timer's target is this Machine: a delayed `raise_`, an `after`, or a delayed `send_to` itself (a
    restored snapshot names itself by the Machine's id)."""
    if isinstance(target, str):
        return target == "#_internal" or (target == statechart.id and target not in snapshot.children)
    return target is None or getattr(target, "logic", None) is statechart
