"""`ActorRef`: how a snapshot names a child. Inert in a pure transition; bound to a live Actor by the host."""

from __future__ import annotations

from typing import Any

from engine.core.statechart.errors import StatechartError

__all__ = ["ActorRef"]


class ActorRef:
    """A child actor as the parent's snapshot holds it: its id, logic, input, and (once a host starts it) the
    live actor that `send`, `get_snapshot` and `subscribe` reach."""

    __slots__ = (
        "id",
        "src",
        "logic",
        "input",
        "system_id",
        "sync_snapshot",
        "parent",
        "persisted",
        "_actor",
        "stopped",
    )

    def __init__(
        self,
        id: str,
        src: Any,
        logic: Any,
        input: Any = None,
        system_id: str | None = None,
        sync_snapshot: bool = False,
        parent: Any = None,
        persisted: Any = None,
    ) -> None:
        self.id = id
        self.src = src
        self.logic = logic
        self.input = input
        self.system_id = system_id
        self.sync_snapshot = sync_snapshot
        self.parent = parent
        self.persisted = persisted
        self._actor: Any = None
        self.stopped = False

    @property
    def actor(self) -> Any:
        return self._actor

    def bind(self, actor: Any) -> None:
        self._actor = actor

    def _live(self) -> Any:
        if self._actor is None:
            raise StatechartError(f"actor '{self.id}' is not running (it lives in a snapshot no host has started)")
        return self._actor

    def send(self, event: Any) -> None:
        self._live().send(event)

    def get_snapshot(self) -> Any:
        if self._actor is None:
            return self.persisted
        return self._actor.get_snapshot()

    @property
    def snapshot(self) -> Any:
        return self.get_snapshot()

    def subscribe(self, *args: Any, **kwargs: Any) -> Any:
        return self._live().subscribe(*args, **kwargs)

    def on(self, *args: Any, **kwargs: Any) -> Any:
        return self._live().on(*args, **kwargs)

    @property
    def session_id(self) -> str | None:
        return self._actor.session_id if self._actor is not None else None

    def get_persisted_snapshot(self) -> Any:
        if self._actor is not None:
            return self._actor.get_persisted_snapshot()
        return self.persisted

    def to_json(self) -> dict[str, Any]:
        return {"xstate$$type": 1, "id": self.id}

    def __repr__(self) -> str:
        state = "live" if self._actor is not None else "inert"
        return f"ActorRef({self.id!r}, {state})"
