"""Who hears an actor: observers of its snapshots (`next`, `error`, `complete`) and listeners of the events it
emits. An observer's own failure is reported and never breaks the actor; an error nobody observes is reported
as unhandled, as xstate's `reportUnhandledError`."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from engine.core.statechart.events import Event, to_event

__all__ = ["Observers", "Subscription", "report_unhandled_error"]

log = logging.getLogger("engine.core.statechart")


def report_unhandled_error(err: BaseException) -> None:
    log.error("unhandled error in an actor: %r", err, exc_info=err if isinstance(err, BaseException) else None)


class Subscription:
    __slots__ = ("_unsubscribe",)

    def __init__(self, unsubscribe: Callable[[], None]) -> None:
        self._unsubscribe = unsubscribe

    def unsubscribe(self) -> None:
        self._unsubscribe()


class _Observer:
    __slots__ = ("next", "error", "complete")

    def __init__(
        self, next: Callable[..., Any] | None, error: Callable[..., Any] | None, complete: Callable[..., Any] | None
    ) -> None:
        self.next, self.error, self.complete = next, error, complete


class Observers:
    """An actor's observers and emitted-event listeners."""

    def __init__(self) -> None:
        self._observers: list[_Observer] = []
        self._listeners: dict[str, list[Callable[[Event], None]]] = {}

    def __bool__(self) -> bool:
        return bool(self._observers)

    def subscribe(
        self, next: Any, error: Callable[[Any], None] | None, complete: Callable[[], None] | None, ended: Any = None
    ) -> Subscription:
        """Observe an actor; `ended` is its final snapshot when it has already stopped (the observer hears its
        completion or its error at once)."""
        if next is not None and not callable(next) and any(hasattr(next, a) for a in ("next", "error", "complete")):
            observer = _Observer(
                getattr(next, "next", None), getattr(next, "error", None), getattr(next, "complete", None)
            )
        else:
            observer = _Observer(next, error, complete)
        if ended is None:
            self._observers.append(observer)
        elif ended.status == "done" and observer.complete:
            safe(observer.complete)
        elif ended.status == "error":
            if observer.error:
                safe(observer.error, ended.error)
            else:
                report_unhandled_error(ended.error)

        def unsubscribe() -> None:
            if observer in self._observers:
                self._observers.remove(observer)

        return Subscription(unsubscribe)

    def on(self, event_type: str, handler: Callable[[Event], None]) -> Subscription:
        """Listen to emitted events of `event_type`; `"*"` hears all of them."""
        listeners = self._listeners.setdefault(event_type, [])
        listeners.append(handler)

        def unsubscribe() -> None:
            if handler in listeners:
                listeners.remove(handler)

        return Subscription(unsubscribe)

    def next(self, snapshot: Any) -> None:
        if not self._observers:
            return
        for observer in list(self._observers):
            if observer.next:
                safe(observer.next, snapshot)

    def emit(self, event: Any) -> None:
        event = to_event(event)
        for handler in [*self._listeners.get(event["type"], ()), *self._listeners.get("*", ())]:
            safe(handler, event)

    def complete(self) -> None:
        for observer in list(self._observers):
            if observer.complete:
                safe(observer.complete)
        self.clear()

    def error(self, err: Any, root: bool) -> None:
        """Tell every observer of the error; one without an error handler makes it unhandled (so does nobody
        observing a root actor)."""
        if not self._observers:
            if root:
                report_unhandled_error(err)
            self._listeners.clear()
            return
        unhandled = False
        for observer in list(self._observers):
            if observer.error is None:
                unhandled = True
            else:
                safe(observer.error, err)
        self.clear()
        if unhandled:
            report_unhandled_error(err)

    def clear(self) -> None:
        self._observers.clear()
        self._listeners.clear()


def safe(fn: Callable[..., Any], *args: Any) -> None:
    try:
        fn(*args)
    except Exception as err:
        report_unhandled_error(err)
