"""What a Session keeps of its open parties, as plain records: Turns (with their outstanding pick, Chain and
answer), Gates and the Effects it waits on; and how each goes to and from the JSON of `Session.to_json()`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from engine.core.outputs import EffectRequested

__all__ = ["Outstanding", "Turn", "Gate", "PendingEffect", "plain"]


@dataclass
class Outstanding:
    """A pick whose work is not finished: its id (`pick-N`) and event."""

    id: str
    event: str


@dataclass
class Turn:
    """One invocation of an Agent by a state; it lasts exactly as long as that state is active."""

    id: str
    agent: str
    state: str
    path: str
    invoke_id: str
    prompt: str
    continues: bool
    dials: dict[str, Any]
    notices: tuple[Any, ...] = ()
    outstanding: Outstanding | None = None
    chain: list[Any] = field(default_factory=list)
    answer: Any = None
    answered: bool = False
    told: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The Turn as readers see it (the run's `snapshot`)."""
        return {
            "id": self.id,
            "agent": self.agent,
            "state": self.state,
            "path": self.path,
            "prompt": self.prompt,
            "continue": self.continues,
            "dials": self.dials,
            "notices": list(self.notices),
            "outstanding": None
            if self.outstanding is None
            else {"id": self.outstanding.id, "event": self.outstanding.event},
        }

    def persisted(self) -> dict[str, Any]:
        """Everything of the Turn, for `Session.to_json()`."""
        data = {f.name: getattr(self, f.name) for f in fields(Turn)}
        data["outstanding"] = None if self.outstanding is None else vars(self.outstanding)
        data["notices"], data["told"] = list(self.notices), list(self.told)
        return plain(data)

    @classmethod
    def restored(cls, data: Mapping[str, Any]) -> Turn:
        turn = cls(**{k: v for k, v in data.items() if k != "outstanding"})
        turn.notices, turn.told = tuple(turn.notices), tuple(turn.told)
        turn.outstanding = Outstanding(**data["outstanding"]) if data.get("outstanding") else None
        return turn


@dataclass
class Gate:
    """An open Gate: addressed by its invoke id; accepts the events its seat gives it."""

    id: str
    state: str
    path: str
    accepts: tuple[str, ...]
    meta: dict[str, Any]
    #: Whom it is assigned to ("user:<name>", "group:<name>"); None when it has no `assign` (engine/core/assignment.py).
    assign: tuple[str, ...] | None = None
    #: Why its `assign` callable gave no list of names (then only superusers may answer it).
    assign_error: str = ""

    def to_json(self) -> dict[str, Any]:
        data = {"id": self.id, "state": self.state, "path": self.path, "accepts": list(self.accepts), "meta": self.meta}
        if self.assign is not None:
            data["assign"] = list(self.assign)
        if self.assign_error:
            data["assign_error"] = self.assign_error
        return data

    @classmethod
    def restored(cls, data: Mapping[str, Any]) -> Gate:
        assign = data.get("assign")
        return cls(
            data["id"],
            data["state"],
            data["path"],
            tuple(data["accepts"]),
            dict(data["meta"]),
            tuple(assign) if assign is not None else None,
            str(data.get("assign_error") or ""),
        )


@dataclass
class PendingEffect:
    """An Effect the run waits on, with what a host needs to run it (again, after a restart)."""

    id: str
    invoke_id: str
    slot: str
    state: str
    kind: str = ""
    spec: dict[str, Any] = field(default_factory=dict)
    input: Any = None
    idempotent: bool = False

    def request(self) -> EffectRequested:
        return EffectRequested(self.id, self.slot, self.kind, dict(self.spec), self.input, self.idempotent, self.state)


def plain(value: Any) -> Any:
    """A JSON-ready copy (pydantic models dumped), so journals and outputs are data."""
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, BaseException):
        return {"name": type(value).__name__, "message": str(value)}
    return value
