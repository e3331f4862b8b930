"""`cancel`: drop a delayed raise/send by its id."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine.core.statechart.actions.base import BuiltinAction, resolve_value

if TYPE_CHECKING:
    from engine.core.statechart.macrostep import Scope
    from engine.core.statechart.snapshot import Snapshot

__all__ = ["cancel", "Cancel"]


class Cancel(BuiltinAction):
    type = "xstate.cancel"

    def __init__(self, send_id: Any) -> None:
        self.send_id = send_id

    def resolve(
        self, scope: Scope, snapshot: Snapshot, args: dict[str, Any], params: Any
    ) -> tuple[Snapshot, Any, list[Any] | None]:
        send_id = resolve_value(self.send_id, args, params)
        return snapshot.without_timer(send_id), {"sendId": send_id}, None

    def __repr__(self) -> str:
        return f"cancel({self.send_id!r})"


def cancel(send_id: Any) -> Cancel:
    return Cancel(send_id)
