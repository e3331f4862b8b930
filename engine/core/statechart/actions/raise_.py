"""`raise_`: an event to this machine's own internal queue, or, with a delay, a timer (data for the host)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine.core.statechart.actions.base import BuiltinAction, resolve_value
from engine.core.statechart.errors import ConfigError
from engine.core.statechart.events import to_event

if TYPE_CHECKING:
    from engine.core.statechart.macrostep import Scope
    from engine.core.statechart.snapshot import Snapshot

__all__ = ["raise_", "Raise", "resolve_delay"]


def resolve_delay(scope: Scope, delay: Any, args: dict[str, Any], params: Any) -> int | float | None:
    if delay is None:
        return None
    if isinstance(delay, str):
        delays = scope.machine.implementations.delays
        if delay not in delays:
            raise ConfigError(
                f"delay '{delay}' is not registered in machine '{scope.machine.id}' (delays={sorted(delays)})"
            )
        delay = delays[delay]
    value = resolve_value(delay, args, params)
    if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
        raise ConfigError(f"a delay must be a number of milliseconds; got {value!r}")
    return value


class Raise(BuiltinAction):
    type = "xstate.raise"

    def __init__(self, event: Any, delay: Any = None, id: Any = None) -> None:
        if isinstance(event, str):
            raise ConfigError(f'raise_ takes an event dict; use raise_({{"type": "{event}"}})')
        self.event, self.delay, self.id = event, delay, id

    def resolve(
        self, scope: Scope, snapshot: Snapshot, args: dict[str, Any], params: Any
    ) -> tuple[Snapshot, Any, list[Any] | None]:
        event = to_event(resolve_value(self.event, args, params))
        delay = resolve_delay(scope, self.delay, args, params)
        send_id = resolve_value(self.id, args, params)
        params = {"event": event, "id": send_id, "delay": delay}
        if delay is None:
            scope.internal_queue.append(event)
        else:
            snapshot, params["timer"] = snapshot.with_timer(send_id, event, delay)
        return snapshot, params, None

    def __repr__(self) -> str:
        return f"raise_({self.event!r}, delay={self.delay!r}, id={self.id!r})"


def raise_(event: Any, delay: Any = None, id: Any = None) -> Raise:
    return Raise(event, delay=delay, id=id)
