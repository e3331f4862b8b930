"""`emit`: an event for the actor's outside listeners (`actor.on(type, handler)`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine.core.statechart.actions.base import BuiltinAction, resolve_value
from engine.core.statechart.events import to_event

if TYPE_CHECKING:
    from engine.core.statechart.macrostep import Scope
    from engine.core.statechart.snapshot import Snapshot

__all__ = ["emit", "Emit"]


class Emit(BuiltinAction):
    type = "xstate.emit"

    def __init__(self, event: Any) -> None:
        self.event = event

    def resolve(
        self, scope: Scope, snapshot: Snapshot, args: dict[str, Any], params: Any
    ) -> tuple[Snapshot, Any, list[Any] | None]:
        return snapshot, {"event": to_event(resolve_value(self.event, args, params))}, None


def emit(event: Any) -> Emit:
    return Emit(event)
