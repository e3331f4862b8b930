"""`send_to`, `send_parent`, `forward_to`: events to other actors, delivered by the host after the step."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine.core.statechart.actions.base import BuiltinAction, resolve_value
from engine.core.statechart.actions.raise_ import resolve_delay
from engine.core.statechart.errors import ConfigError
from engine.core.statechart.events import to_event

if TYPE_CHECKING:
    from engine.core.statechart.macrostep import Scope
    from engine.core.statechart.snapshot import Snapshot

__all__ = ["send_to", "send_parent", "forward_to", "SendTo", "PARENT"]

PARENT = "#_parent"
INTERNAL = "#_internal"


class SendTo(BuiltinAction):
    type = "xstate.sendTo"

    def __init__(self, to: Any, event: Any, delay: Any = None, id: Any = None) -> None:
        if isinstance(event, str):
            raise ConfigError(f'send_to takes an event dict; use send_to(..., {{"type": "{event}"}})')
        self.to, self.event, self.delay, self.id = to, event, delay, id

    def resolve(
        self, scope: Scope, snapshot: Snapshot, args: dict[str, Any], params: Any
    ) -> tuple[Snapshot, Any, list[Any] | None]:
        event = to_event(resolve_value(self.event, args, params))
        delay = resolve_delay(scope, self.delay, args, params)
        send_id = resolve_value(self.id, args, params)
        target = resolve_value(self.to, args, params)
        target_id = target if isinstance(target, str) else None
        deferred = False
        if isinstance(target, str):
            if target == PARENT or target == INTERNAL:
                to: Any = target
            elif target.startswith("#_"):
                to = snapshot.children.get(target[2:])
            else:
                # a child this very entry invokes is not spawned yet: named by id until the entry is resolved
                deferred = target in scope.deferred_actor_ids
                to = target if deferred else snapshot.children.get(target)
            if to is None:
                raise ConfigError(
                    f"cannot send event '{event.type}' to actor '{target}' from machine '{scope.machine.id}': "
                    f"no such child (children: {sorted(snapshot.children)})"
                )
        else:
            to = target if target is not None else INTERNAL
        params = {"to": to, "targetId": target_id, "event": event, "id": send_id, "delay": delay}
        if delay is not None:
            snapshot, params["timer"] = snapshot.with_timer(send_id, event, delay, target=to)
        if deferred:
            scope.retries.append(params)
        return snapshot, params, None

    def __repr__(self) -> str:
        return f"send_to({self.to!r}, {self.event!r})"


def send_to(to: Any, event: Any, delay: Any = None, id: Any = None) -> SendTo:
    return SendTo(to, event, delay=delay, id=id)


def send_parent(event: Any, delay: Any = None, id: Any = None) -> SendTo:
    return SendTo(PARENT, event, delay=delay, id=id)


def forward_to(to: Any, delay: Any = None, id: Any = None) -> SendTo:
    """Send the current event on to another actor. A target that resolves to nothing is an error: sending the
    event back to this machine would loop forever."""

    def target(**args: Any) -> Any:
        params = args.pop("params", None)
        resolved = resolve_value(to, args, params)
        if not resolved:
            raise ConfigError(
                "forward_to: the target resolved to nothing; forwarding the event back to this "
                "machine would loop forever"
            )
        return resolved

    return SendTo(target, lambda event: event, delay=delay, id=id)
