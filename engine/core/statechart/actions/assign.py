"""`assign`: the only way context changes. Resolves to a new snapshot; a host has nothing to execute."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from engine.core.statechart.actions.base import BuiltinAction
from engine.core.statechart.callables import accepts, call_with
from engine.core.statechart.errors import ConfigError

if TYPE_CHECKING:
    from engine.core.statechart.macrostep import Scope
    from engine.core.statechart.snapshot import Snapshot

__all__ = ["assign", "Assign"]


class Assign(BuiltinAction):
    type = "xstate.assign"
    executes = False

    def __init__(self, assignment: Callable[..., Mapping[str, Any]] | Mapping[str, Any]) -> None:
        if not callable(assignment) and not isinstance(assignment, Mapping):
            raise ConfigError(f"assign takes a dict of updaters or a callable; got {assignment!r}")
        self.assignment = assignment
        self._reads_spawn: bool | None = None

    def reads_spawn(self) -> bool:
        """Whether an updater names `spawn` (only then is a Spawner made for it, on every resolve)."""
        if self._reads_spawn is None:
            if callable(self.assignment) and not isinstance(self.assignment, Mapping):
                updaters: list[Any] = [self.assignment]
            else:
                updaters = [v for v in self.assignment.values() if callable(v)]
            self._reads_spawn = any(accepts(fn, "spawn") for fn in updaters)
        return self._reads_spawn

    def resolve(
        self, scope: Scope, snapshot: Snapshot, args: dict[str, Any], params: Any
    ) -> tuple[Snapshot, Any, list[Any] | None]:
        if snapshot.context is None:
            raise ConfigError("cannot assign to an undefined context; give the machine a `context`")
        spawner = scope.spawner(snapshot, args["event"]) if self.reads_spawn() else None
        call_args = {**args, "spawn": spawner, "params": params}
        if callable(self.assignment) and not isinstance(self.assignment, Mapping):
            partial = call_with(self.assignment, **call_args)
            if partial is None:
                partial = {}
            if not isinstance(partial, Mapping):
                raise TypeError(f"an assign callable must return a dict of context updates; got {partial!r}")
        else:
            partial = {
                key: call_with(value, **call_args) if callable(value) else value
                for key, value in self.assignment.items()
            }
        context = {**snapshot.context, **partial}
        if spawner is None:
            return snapshot.replace(context=context), None, None
        snapshot = snapshot.replace(context=context, children=spawner.children_with(snapshot.children))
        return snapshot, None, None

    def __repr__(self) -> str:
        return f"assign({self.assignment!r})"


def assign(
    assignment: Callable[..., Mapping[str, Any]] | Mapping[str, Any] | None = None, /, **updaters: Any
) -> Assign:
    """`assign({"k": fn})`, `assign(k=fn)` or `assign(fn)`; each fn receives the arguments it names."""
    if assignment is not None and updaters:
        raise ConfigError("assign takes a dict/callable or keyword updaters, not both")
    return Assign(assignment if assignment is not None else updaters)
