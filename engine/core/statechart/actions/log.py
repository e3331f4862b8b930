"""`log`: a value for the host's logger."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine.core.statechart.actions.base import BuiltinAction, resolve_value

if TYPE_CHECKING:
    from engine.core.statechart.macrostep import Scope
    from engine.core.statechart.snapshot import Snapshot

__all__ = ["log", "Log"]


class Log(BuiltinAction):
    type = "xstate.log"

    def __init__(self, expr: Any = None, label: str | None = None) -> None:
        self.expr, self.label = expr, label

    def resolve(
        self, scope: Scope, snapshot: Snapshot, args: dict[str, Any], params: Any
    ) -> tuple[Snapshot, Any, list[Any] | None]:
        if self.expr is None:
            value: Any = {"context": args["context"], "event": args["event"]}
        else:
            value = resolve_value(self.expr, args, params)
        return snapshot, {"value": value, "label": self.label}, None


def log(expr: Any = None, label: str | None = None) -> Log:
    return Log(expr, label)
