"""Events: what the interpreter accepts, the engine's own event types, and descriptor matching."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.core.statechart.errors import EventError

__all__ = [
    "Event",
    "to_event",
    "matches_descriptor",
    "init_event",
    "done_state_event",
    "done_actor_event",
    "error_actor_event",
    "after_event",
    "INIT",
    "STOP",
    "WILDCARD",
]

INIT = "xstate.init"
STOP = "xstate.stop"
WILDCARD = "*"


class Event(dict):
    """An event: a dict with a string `type`, whose keys also read as attributes (`event.text`)."""

    __slots__ = ()

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(f"event {self.get('type')!r} has no field {name!r}") from None

    @property
    def type(self) -> str:  # type: ignore[override]
        return self["type"]


def to_event(event: Any) -> Event:
    """Normalise `"TYPE"` or `{"type": "TYPE", ...}` into an Event, refusing anything else with a clear message."""
    cls = type(event)
    if cls is dict:
        etype = event.get("type")
        if type(etype) is str and etype != WILDCARD:
            return Event(event)
    elif cls is Event or isinstance(event, Event):
        return event
    if isinstance(event, str):
        if event == WILDCARD:
            raise EventError("an event cannot have the wildcard type '*'")
        return Event(type=event)
    if isinstance(event, dict) or isinstance(event, Mapping):
        etype = event.get("type")
        if not isinstance(etype, str):
            raise EventError(f"an event needs a string 'type'; got {event!r}")
        if etype == WILDCARD:
            raise EventError("an event cannot have the wildcard type '*'")
        return Event(event)
    raise TypeError(f"an event is a string or a dict with a string 'type'; got {type(event).__name__}: {event!r}")


def matches_descriptor(event_type: str, descriptor: str) -> bool:
    """xstate's descriptor rule: exact, `*`, or a partial `a.b.*` matching whole tokens."""
    if descriptor == event_type or descriptor == WILDCARD:
        return True
    if not descriptor.endswith(".*"):
        return False
    partial = descriptor.split(".")
    tokens = event_type.split(".")
    for i, token in enumerate(partial):
        if token == "*":
            return i == len(partial) - 1
        if i >= len(tokens) or token != tokens[i]:
            return False
    return True


def init_event(input: Any) -> Event:
    return Event(type=INIT, input=input)


def done_state_event(state_id: str, output: Any = None) -> Event:
    return Event(type=f"xstate.done.state.{state_id}", output=output)


def done_actor_event(actor_id: str, output: Any = None) -> Event:
    return Event(type=f"xstate.done.actor.{actor_id}", output=output, actorId=actor_id)


def error_actor_event(actor_id: str, error: Any = None) -> Event:
    return Event(type=f"xstate.error.actor.{actor_id}", error=error, actorId=actor_id)


def after_event(delay: Any, state_id: str) -> Event:
    return Event(type=f"xstate.after.{delay}.{state_id}")
