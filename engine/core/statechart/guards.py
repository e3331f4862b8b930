"""Guards: named, parameterised, inline, and the combinators `and_`, `or_`, `not_`, `state_in`."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from engine.core.statechart.callables import call_with
from engine.core.statechart.errors import ImplementationError

if TYPE_CHECKING:
    from engine.core.statechart.snapshot import Snapshot

__all__ = ["and_", "or_", "not_", "state_in", "evaluate_guard", "guard_name", "BuiltinGuard"]


class BuiltinGuard:
    """A guard the engine defines; `check` sees the snapshot, which inline guards never do."""

    type = "xstate.guard"

    def check(self, snapshot: Snapshot, context: Any, event: Any) -> bool:
        raise NotImplementedError(f"{type(self).__name__} must implement check()")

    def __call__(self, *args: Any, **kwargs: Any) -> bool:
        raise TypeError(f"{self.type} is a guard object: put it in a transition's `guard`, do not call it")


class AndGuard(BuiltinGuard):
    type = "xstate.and"

    def __init__(self, guards: Iterable[Any]) -> None:
        self.guards = list(guards)

    def check(self, snapshot: Snapshot, context: Any, event: Any) -> bool:
        return all(evaluate_guard(g, context, event, snapshot) for g in self.guards)


class OrGuard(BuiltinGuard):
    type = "xstate.or"

    def __init__(self, guards: Iterable[Any]) -> None:
        self.guards = list(guards)

    def check(self, snapshot: Snapshot, context: Any, event: Any) -> bool:
        return any(evaluate_guard(g, context, event, snapshot) for g in self.guards)


class NotGuard(BuiltinGuard):
    type = "xstate.not"

    def __init__(self, guard: Any) -> None:
        self.guard = guard

    def check(self, snapshot: Snapshot, context: Any, event: Any) -> bool:
        return not evaluate_guard(self.guard, context, event, snapshot)


class _StateIn(BuiltinGuard):
    type = "xstate.stateIn"

    def __init__(self, state_value: Any) -> None:
        self.state_value = state_value

    def check(self, snapshot: Snapshot, context: Any, event: Any) -> bool:
        value = self.state_value
        if isinstance(value, str) and value.startswith("#"):
            target = snapshot.machine.get_state_node_by_id(value)
            return target in snapshot.node_set
        return snapshot.matches(value)


def and_(guards: Iterable[Any]) -> BuiltinGuard:
    return AndGuard(guards)


def or_(guards: Iterable[Any]) -> BuiltinGuard:
    return OrGuard(guards)


def not_(guard: Any) -> BuiltinGuard:
    return NotGuard(guard)


def state_in(state_value: Any) -> BuiltinGuard:
    return _StateIn(state_value)


def guard_name(guard: Any) -> str | None:
    if isinstance(guard, str):
        return guard
    if isinstance(guard, dict):
        return guard.get("type")
    if isinstance(guard, BuiltinGuard):
        return guard.type
    return getattr(guard, "__name__", None)


def evaluate_guard(guard: Any, context: Any, event: Any, snapshot: Snapshot) -> bool:
    """Evaluate a guard as xstate does: names resolve through the machine's `guards`, params may be callables."""
    if isinstance(guard, BuiltinGuard):
        return bool(guard.check(snapshot, context, event))
    params = None
    if isinstance(guard, (str, dict)):
        name = guard if isinstance(guard, str) else guard.get("type")
        if not isinstance(name, str):
            raise ImplementationError(f"a guard dict needs a string 'type'; got {guard!r}")
        guards = snapshot.machine.implementations.guards
        if name not in guards:
            raise ImplementationError(
                f"guard '{name}' is not registered in machine '{snapshot.machine.id}' (guards={sorted(guards)})"
            )
        impl = guards[name]
        if isinstance(guard, dict) and "params" in guard:
            params = guard["params"]
            if callable(params):
                params = call_with(params, context=context, event=event)
        if isinstance(impl, BuiltinGuard):
            return bool(impl.check(snapshot, context, event))
        if not callable(impl):
            return evaluate_guard(impl, context, event, snapshot)
        return bool(call_with(impl, context=context, event=event, params=params))
    if callable(guard):
        return bool(call_with(guard, context=context, event=event, params=None))
    raise ImplementationError(f"a guard is a name, a {{'type', 'params'}} dict or a callable; got {guard!r}")
