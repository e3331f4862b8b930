"""Actor logic other than machines: promise-like, callback and transition (reducer) actors.

Each logic is a small object with the same five methods a Machine has for the Actor shell:
`get_initial_snapshot`, `transition`, `start`, `get_persisted_snapshot`, `restore_snapshot`.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from engine.core.statechart.callables import call_with
from engine.core.statechart.encoding import encode
from engine.core.statechart.events import STOP, Event, to_event

if TYPE_CHECKING:
    from engine.core.statechart.actor import Actor

__all__ = ["ActorLogic", "ActorSnapshot", "from_promise", "from_callback", "from_transition", "to_logic"]

RESOLVE = "xstate.promise.resolve"
REJECT = "xstate.promise.reject"


class ActorSnapshot:
    """The snapshot of a non-machine actor: status, output, error, and (for reducers) its state as `context`."""

    __slots__ = ("status", "output", "error", "input", "context")

    def __init__(
        self, status: str = "active", output: Any = None, error: Any = None, input: Any = None, context: Any = None
    ) -> None:
        self.status, self.output, self.error, self.input, self.context = status, output, error, input, context

    def replace(self, **changes: Any) -> ActorSnapshot:
        values = {k: getattr(self, k) for k in self.__slots__}
        values.update(changes)
        return ActorSnapshot(**values)

    def to_json(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "output": encode(self.output),
            "error": encode(self.error),
            "input": encode(self.input),
            "context": encode(self.context),
        }

    def __repr__(self) -> str:
        return f"ActorSnapshot(status={self.status!r}, output={self.output!r}, context={self.context!r})"


class ActorLogic:
    """Base of non-machine logic; the defaults suit an actor whose snapshot only tracks its status."""

    kind = "logic"

    def get_initial_snapshot(self, actor: Actor, input: Any) -> ActorSnapshot:
        return ActorSnapshot(input=input)

    def transition(self, snapshot: ActorSnapshot, event: Event, actor: Actor) -> ActorSnapshot:
        if event["type"] == STOP:
            return snapshot.replace(status="stopped")
        return snapshot

    def start(self, snapshot: ActorSnapshot, actor: Actor) -> None:
        return None

    def get_persisted_snapshot(self, snapshot: ActorSnapshot, actor: Actor | None = None) -> dict[str, Any]:
        return snapshot.to_json()

    def restore_snapshot(self, data: Any, actor: Actor) -> ActorSnapshot:
        if isinstance(data, ActorSnapshot):
            return data
        return ActorSnapshot(
            status=data.get("status", "active"),
            output=data.get("output"),
            error=data.get("error"),
            input=data.get("input"),
            context=data.get("context"),
        )


class PromiseLogic(ActorLogic):
    """A callable (or coroutine function) whose return value is the actor's output."""

    kind = "promise"

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        self.__name__ = getattr(fn, "__name__", "promise")

    def transition(self, snapshot: ActorSnapshot, event: Event, actor: Actor) -> ActorSnapshot:
        if snapshot.status != "active":
            return snapshot
        etype = event["type"]
        if etype == RESOLVE:
            return snapshot.replace(status="done", output=event.get("data"))
        if etype == REJECT:
            return snapshot.replace(status="error", error=event.get("data"))
        if etype == STOP:
            actor._cancel_task()
            return snapshot.replace(status="stopped")
        return snapshot

    def start(self, snapshot: ActorSnapshot, actor: Actor) -> None:
        if snapshot.status != "active":
            return
        try:
            result = call_with(
                self.fn, input=snapshot.input, self=actor, system=actor.system, signal=actor.signal, emit=actor._emit
            )
        except Exception as err:
            actor._deliver({"type": REJECT, "data": err})
            return
        if inspect.isawaitable(result):
            actor._run_task(result, RESOLVE, REJECT)
        else:
            actor._deliver({"type": RESOLVE, "data": result})


class CallbackLogic(ActorLogic):
    """`fn(send_back, receive, input, self, system, emit)`; may return a cleanup callable, run on stop."""

    kind = "callback"

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn

    def transition(self, snapshot: ActorSnapshot, event: Event, actor: Actor) -> ActorSnapshot:
        if event["type"] == STOP:
            cleanup = actor._callback_state.pop("cleanup", None)
            if callable(cleanup):
                cleanup()
            return snapshot.replace(status="stopped")
        for listener in list(actor._callback_state.get("receivers", [])):
            listener(event)
        return snapshot

    def start(self, snapshot: ActorSnapshot, actor: Actor) -> None:
        state = actor._callback_state
        state["receivers"] = []

        def send_back(event: Any) -> None:
            if actor.status_is_running() and actor.parent is not None:
                actor.parent._send(to_event(event))

        def receive(listener: Callable[[Event], None]) -> None:
            state["receivers"].append(listener)

        state["cleanup"] = call_with(
            self.fn,
            send_back=send_back,
            receive=receive,
            input=snapshot.input,
            self=actor,
            system=actor.system,
            emit=actor._emit,
        )


class TransitionLogic(ActorLogic):
    """A reducer: `reducer(state, event, ...)` returns the next state, kept as the snapshot's `context`."""

    kind = "transition"

    def __init__(self, reducer: Callable[..., Any], initial: Any) -> None:
        self.reducer, self.initial = reducer, initial

    def get_initial_snapshot(self, actor: Actor, input: Any) -> ActorSnapshot:
        initial = call_with(self.initial, input=input, self=actor) if callable(self.initial) else self.initial
        return ActorSnapshot(input=input, context=initial)

    def transition(self, snapshot: ActorSnapshot, event: Event, actor: Actor) -> ActorSnapshot:
        if event["type"] == STOP:
            return snapshot.replace(status="stopped")
        state = call_with(
            self.reducer, state=snapshot.context, event=event, self=actor, system=actor.system, emit=actor._emit
        )
        return snapshot.replace(context=state)


def from_promise(fn: Callable[..., Any]) -> PromiseLogic:
    return PromiseLogic(fn)


def from_callback(fn: Callable[..., Any]) -> CallbackLogic:
    return CallbackLogic(fn)


def from_transition(reducer: Callable[..., Any], initial: Any) -> TransitionLogic:
    return TransitionLogic(reducer, initial)


def to_logic(src: Any) -> Any:
    """Actor logic as given, or a plain callable taken as promise-like logic (its return value is the output)."""
    if isinstance(src, ActorLogic) or getattr(src, "kind", None) == "machine":
        return src
    if callable(src):
        return PromiseLogic(src)
    return None
