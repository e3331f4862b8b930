"""The run as readers see it: the `view` JSON each step commits on the Run row, and a typed reader over it.

The API and the Console read a run from its row, never from a live Session. `build_view` makes the view a step
commits (the driver calls it with the Session after the step) and `run_status` the status beside it.
`RunView.of(run.view)` reads a committed view back as typed values:

    view = RunView.of(run.view)
    view.active                    # ("writing", "writing.asking"): the active states, dotted
    view.gate("writing.asking")    # GateView(id=..., accepts=("reply",), meta={...}), or None when it is not open
    view.turn_of("writer")         # the Agent's open Turn (TurnNow: its Allowed picks, who plays it), or None
    view.holder("writer")          # the username of the person in the Agent's seat, or None

The reader only reads: a key that a view lacks (one written before the key existed, an imported run's, the `{}` of
a run that never ran a step) reads as empty, and `to_json()` gives back the view it was read from.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from engine.core.session import Gate, Session
from engine.models import Run
from engine.runtime.players import Player

__all__ = [
    "build_view",
    "run_status",
    "as_json",
    "RunView",
    "GateView",
    "TurnNow",
    "Outstanding",
    "EffectNow",
    "ClaimNow",
]


def run_status(session: Session, seated: Iterable[str] = ()) -> Run.Status:
    """running, or waiting when only a person (a Gate, or an Agent's seat a person holds) or a timer can move the
    run: no Effect runs, and every open Turn waits on an outstanding pick or on the person in its seat. Or how it
    ended (the Session's own word for it: done, failed or cancelled)."""
    if session.status != "active":
        return Run.Status(session.status)
    people = set(seated)
    if session.effects or any(turn.outstanding is None and turn.agent not in people for turn in session.turns):
        return Run.Status.RUNNING
    return Run.Status.WAITING


def build_view(
    session: Session,
    visited: Iterable[str],
    players: Mapping[str, Player],
    seats: Mapping[str, tuple[int, str]],
    claims: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """The view of the run as `session` has it. `visited` is every state the run was in before (the active ones
    are added), `players` who plays each open Turn (by Turn id), `seats` who holds each Agent's seat and `claims`
    who holds each claimed Gate until when (engine/runtime/claims.py)."""
    active = session.active_paths
    view = {
        "value": session.value,
        "active": active,
        "visited": sorted(set(visited) | set(active)),
        "context": as_json(session.context),
        "gates": [_gate_json(session, gate) for gate in session.gates],
        "turns": [
            {
                "id": t.id,
                "agent": t.agent,
                "state": t.path,
                "prompt": t.prompt,
                "outstanding": None
                if t.outstanding is None
                else {"pick": t.outstanding.id, "event": t.outstanding.event},
                "allowed": session.allowed_picks(t.agent),
                "model": players[t.id].label if t.id in players else "",
                "scripted": players[t.id].scripted if t.id in players else False,
            }
            for t in session.turns
        ],
        "effects": [{"id": e.id, "slot": e.slot, "state": e.state, "kind": e.kind} for e in session.effects],
        "next_due": session.next_due(),
        "seats": {agent: name for agent, (_, name) in seats.items()},
    }
    if claims:
        view["claims"] = {gate: dict(held) for gate, held in claims.items()}
    return view


def _gate_json(session: Session, gate: Gate) -> dict[str, Any]:
    """An open Gate as the view has it, with `due`: when the Machine's `after` on its state fires (ms since the
    epoch on the host's clock), when one is set."""
    data = gate.to_json()
    due = session.gate_due(gate.id)
    if due is not None:
        data["due"] = due
    return data


def as_json(value: Any) -> Any:
    """A JSON-ready copy of workflow data for the database (anything odd becomes its string)."""
    return json.loads(json.dumps(value, default=str))


# -- the reader ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GateView:
    """An open Gate: its id (in URLs), its state, the events it accepts and the `meta` its invoke input gave."""

    id: str
    state: str
    path: str
    accepts: tuple[str, ...]
    meta: Mapping[str, Any]
    #: Whom it is assigned to ("user:ann", "group:editors"), or None: anyone who may answer Gates.
    assign: tuple[str, ...] | None = None
    assign_error: str = ""
    #: When the Machine's `after` on the Gate's state (or above it) fires, in ms since the epoch; None: no timer.
    due: float | None = None

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> GateView:
        assign = data.get("assign")
        due = data.get("due")
        return cls(
            str(data.get("id", "")),
            str(data.get("state", "")),
            str(data.get("path", "")),
            tuple(data.get("accepts") or ()),
            dict(data.get("meta") or {}),
            tuple(assign) if assign is not None else None,
            str(data.get("assign_error") or ""),
            float(due) if isinstance(due, (int, float)) else None,
        )

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "id": self.id,
            "state": self.state,
            "path": self.path,
            "accepts": list(self.accepts),
            "meta": dict(self.meta),
        }
        if self.assign is not None:
            data["assign"] = list(self.assign)
        if self.assign_error:
            data["assign_error"] = self.assign_error
        if self.due is not None:
            data["due"] = self.due
        return data


@dataclass(frozen=True)
class Outstanding:
    """The pick an open Turn waits on: its id and its event."""

    pick: str
    event: str


@dataclass(frozen=True)
class TurnNow:
    """An open Turn: its Agent, state and prompt, the pick it waits on, its Allowed picks, and who plays it."""

    id: str
    agent: str
    state: str
    prompt: str
    outstanding: Outstanding | None
    allowed: tuple[str, ...]
    model: str
    scripted: bool

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> TurnNow:
        waiting = data.get("outstanding")
        return cls(
            str(data.get("id", "")),
            str(data.get("agent", "")),
            str(data.get("state", "")),
            str(data.get("prompt", "")),
            Outstanding(str(waiting.get("pick", "")), str(waiting.get("event", ""))) if waiting else None,
            tuple(data.get("allowed") or ()),
            str(data.get("model", "")),
            bool(data.get("scripted", False)),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "agent": self.agent,
            "state": self.state,
            "prompt": self.prompt,
            "outstanding": None
            if self.outstanding is None
            else {"pick": self.outstanding.pick, "event": self.outstanding.event},
            "allowed": list(self.allowed),
            "model": self.model,
            "scripted": self.scripted,
        }


@dataclass(frozen=True)
class EffectNow:
    """An Effect the run waits on."""

    id: str
    slot: str
    state: str
    kind: str

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> EffectNow:
        return cls(
            str(data.get("id", "")), str(data.get("slot", "")), str(data.get("state", "")), str(data.get("kind", ""))
        )

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "slot": self.slot, "state": self.state, "kind": self.kind}


@dataclass(frozen=True)
class ClaimNow:
    """A claim on an open Gate as committed: who holds it, until when (seconds since the epoch)."""

    by: str
    until: float

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> ClaimNow:
        return cls(str(data.get("by", "")), float(data.get("until") or 0))

    def to_json(self) -> dict[str, Any]:
        return {"by": self.by, "until": self.until}


@dataclass(frozen=True)
class RunView:
    """A committed view, typed (see the module docstring)."""

    value: Any = None
    active: tuple[str, ...] = ()
    visited: tuple[str, ...] = ()
    context: Any = None
    gates: tuple[GateView, ...] = ()
    turns: tuple[TurnNow, ...] = ()
    effects: tuple[EffectNow, ...] = ()
    next_due: float | None = None
    seats: Mapping[str, str] = field(default_factory=dict)
    claims: Mapping[str, ClaimNow] = field(default_factory=dict)

    @classmethod
    def of(cls, view: Mapping[str, Any] | None) -> RunView:
        """Read a Run row's `view` (None or `{}` reads as a run with nothing open)."""
        view = view or {}
        return cls(
            value=view.get("value"),
            active=tuple(view.get("active") or ()),
            visited=tuple(view.get("visited") or ()),
            context=view.get("context"),
            gates=tuple(GateView.of(g) for g in view.get("gates") or ()),
            turns=tuple(TurnNow.of(t) for t in view.get("turns") or ()),
            effects=tuple(EffectNow.of(e) for e in view.get("effects") or ()),
            next_due=view.get("next_due"),
            seats=dict(view.get("seats") or {}),
            claims={str(g): ClaimNow.of(c) for g, c in (view.get("claims") or {}).items()},
        )

    @property
    def gate_ids(self) -> tuple[str, ...]:
        return tuple(gate.id for gate in self.gates)

    def gate(self, gate_id: str) -> GateView | None:
        """The open Gate with this id, or None."""
        return next((gate for gate in self.gates if gate.id == gate_id), None)

    def turn_of(self, agent: str) -> TurnNow | None:
        """The Agent's open Turn, or None when it has none."""
        return next((turn for turn in self.turns if turn.agent == agent), None)

    def claim(self, gate_id: str, now: float) -> ClaimNow | None:
        """The claim on the Gate that has not ended by `now` (seconds since the epoch), or None."""
        held = self.claims.get(gate_id)
        return held if held is not None and held.until > now else None

    def holder(self, agent: str) -> str | None:
        """The username of the person holding the Agent's seat, or None when its model plays it."""
        return self.seats.get(agent)

    def to_json(self) -> dict[str, Any]:
        """The view as `build_view` wrote it."""
        view: dict[str, Any] = {
            "value": self.value,
            "active": list(self.active),
            "visited": list(self.visited),
            "context": self.context,
            "gates": [g.to_json() for g in self.gates],
            "turns": [t.to_json() for t in self.turns],
            "effects": [e.to_json() for e in self.effects],
            "next_due": self.next_due,
            "seats": dict(self.seats),
        }
        if self.claims:
            view["claims"] = {gate: held.to_json() for gate, held in self.claims.items()}
        return view
