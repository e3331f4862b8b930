"""`enqueue_actions`: choose actions at run time; they resolve in place, in order."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from engine.core.statechart.actions.assign import assign
from engine.core.statechart.actions.base import BuiltinAction
from engine.core.statechart.actions.cancel import cancel
from engine.core.statechart.actions.emit import emit
from engine.core.statechart.actions.log import log
from engine.core.statechart.actions.raise_ import raise_
from engine.core.statechart.actions.send import forward_to, send_parent, send_to
from engine.core.statechart.actions.spawn import spawn_child
from engine.core.statechart.actions.stop import stop_child
from engine.core.statechart.callables import call_with

if TYPE_CHECKING:
    from engine.core.statechart.macrostep import Scope
    from engine.core.statechart.snapshot import Snapshot

__all__ = ["enqueue_actions", "EnqueueActions"]


class _Enqueue:
    """The `enqueue` argument: call it with any action, or use its shorthands (`enqueue.assign(...)`)."""

    def __init__(self) -> None:
        self.actions: list[Any] = []

    def __call__(self, action: Any) -> None:
        self.actions.append(action)

    def _add(self, factory: Callable[..., Any]) -> Callable[..., None]:
        return lambda *a, **k: self.actions.append(factory(*a, **k))

    def __getattr__(self, name: str) -> Callable[..., None]:
        factories: dict[str, Callable[..., Any]] = {
            "assign": assign,
            "raise_": raise_,
            "send_to": send_to,
            "send_parent": send_parent,
            "forward_to": forward_to,
            "emit": emit,
            "log": log,
            "cancel": cancel,
            "spawn_child": spawn_child,
            "stop_child": stop_child,
        }
        if name not in factories:
            raise AttributeError(f"enqueue has no shorthand {name!r} (it has {sorted(factories)})")
        return self._add(factories[name])


class EnqueueActions(BuiltinAction):
    type = "xstate.enqueueActions"
    executes = False

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn

    def resolve(
        self, scope: Scope, snapshot: Snapshot, args: dict[str, Any], params: Any
    ) -> tuple[Snapshot, Any, list[Any] | None]:
        enqueue = _Enqueue()

        def check(guard: Any) -> bool:
            return scope.evaluate_guard(guard, snapshot, args["event"])

        call_with(self.fn, enqueue=enqueue, check=check, params=params, **args)
        return snapshot, None, enqueue.actions


def enqueue_actions(fn: Callable[..., Any]) -> EnqueueActions:
    return EnqueueActions(fn)
