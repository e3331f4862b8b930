"""`spawn_child`: a child actor, created as an inert reference; the host starts it after the step."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine.core.statechart.actions.base import BuiltinAction, resolve_value
from engine.core.statechart.callables import call_with

if TYPE_CHECKING:
    from engine.core.statechart.macrostep import Scope
    from engine.core.statechart.snapshot import Snapshot

__all__ = ["spawn_child", "SpawnChild"]


class SpawnChild(BuiltinAction):
    type = "xstate.spawnChild"

    def __init__(
        self,
        src: Any,
        id: Any = None,
        input: Any = None,
        system_id: str | None = None,
        sync_snapshot: bool = False,
        state: Any = None,
    ) -> None:
        self.src, self.id, self.input = src, id, input
        self.system_id, self.sync_snapshot, self.state = system_id, sync_snapshot, state

    def resolve(
        self, scope: Scope, snapshot: Snapshot, args: dict[str, Any], params: Any
    ) -> tuple[Snapshot, Any, list[Any] | None]:
        logic = scope.machine.resolve_logic(self.src, self.state)
        child_id = resolve_value(self.id, args, params)
        if child_id is None:
            snapshot, child_id = snapshot.next_id("x")
        input = self.input
        if callable(input):
            input = call_with(input, context=args["context"], event=args["event"], self=args["self"])
        ref = scope.make_ref(child_id, self.src, logic, input, self.system_id, self.sync_snapshot)
        snapshot = snapshot.replace(children={**snapshot.children, child_id: ref})
        return (
            snapshot,
            {"id": child_id, "systemId": self.system_id, "actorRef": ref, "src": self.src, "input": input},
            None,
        )

    def __repr__(self) -> str:
        return f"spawn_child({self.src!r}, id={self.id!r})"


def spawn_child(
    src: Any, id: Any = None, input: Any = None, system_id: str | None = None, sync_snapshot: bool = False
) -> SpawnChild:
    return SpawnChild(src, id=id, input=input, system_id=system_id, sync_snapshot=sync_snapshot)
