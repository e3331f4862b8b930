"""`stop_child`: drop a child from the snapshot; the host stops the live actor after the step."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine.core.statechart.actions.base import BuiltinAction, resolve_value

if TYPE_CHECKING:
    from engine.core.statechart.macrostep import Scope
    from engine.core.statechart.snapshot import Snapshot

__all__ = ["stop_child", "StopChild"]


class StopChild(BuiltinAction):
    type = "xstate.stopChild"

    def __init__(self, actor: Any) -> None:
        self.actor = actor

    def resolve(
        self, scope: Scope, snapshot: Snapshot, args: dict[str, Any], params: Any
    ) -> tuple[Snapshot, Any, list[Any] | None]:
        target = resolve_value(self.actor, args, params)
        ref = snapshot.children.get(target) if isinstance(target, str) else target
        if ref is not None and ref.id in snapshot.children:
            children = dict(snapshot.children)
            del children[ref.id]
            snapshot = snapshot.replace(children=children)
        return snapshot, {"actorRef": ref}, None

    def __repr__(self) -> str:
        return f"stop_child({self.actor!r})"


def stop_child(actor: Any) -> StopChild:
    return StopChild(actor)
