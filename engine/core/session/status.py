"""Reading a run without moving it: its state as JSON (`to_json` to go on from, `snapshot` for readers), its open
Turns, Gates and Effects (child Machines' included, named `<invoke id>/<name>`), an Agent's Menu and Allowed
picks; and, in words, where it is and why it stopped (an invoked actor's error that no `onError` route took)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from engine.core.outputs import Output, RunState
from engine.core.seats import state_path
from engine.core.session.answers import Parties
from engine.core.session.nest import Nest, routed
from engine.core.session.probe import allowed_events, at_rest
from engine.core.session.records import Gate, PendingEffect, Turn
from engine.core.slots import AgentSlot, EffectSlot
from engine.core.statechart.events import Event
from engine.core.statechart.machine import StateMachine
from engine.core.statechart.nodes import StateNode
from engine.core.statechart.snapshot import Snapshot
from engine.core.words import error_text
from engine.core.workflow import Machine

__all__ = ["RunReading", "where", "error_reason", "prefixed"]


class RunReading:
    """The reads of a Session (its base class): everything here leaves the run as it is."""

    machine: Machine
    statechart: StateMachine
    statechart_snapshot: Snapshot
    parties: Parties
    nest: Nest
    invoke_nodes: dict[str, StateNode]
    counters: dict[str, int]
    status: str
    output: Any
    reason: str | None
    now: float
    _outputs: list[Output]
    _emitted: list[Output]

    def to_json(self) -> dict[str, Any]:
        """Everything needed to go on from here (`Session.restore`), as plain JSON: the statechart snapshot with
        its timers, the open Turns with their picks and Chains, Gates, Effects, notices, child Machines and the
        id counters. The journal is not in it: a host keeps that apart, and a restored Session journals on."""
        parties, nest = self.parties.to_json(), self.nest.to_json()
        return {
            "version": 1,
            "machine": self.machine.id,
            "digest": self.machine.digest,
            "status": self.status,
            "output": self.output,
            "reason": self.reason,
            "now": self.now,
            "counters": dict(self.counters),
            "statechart": self.statechart_snapshot.to_json(),
            "turns": parties["turns"],
            "gates": parties["gates"],
            "effects": nest["effects"],
            "notices": parties["notices"],
            "subs": nest["subs"],
        }

    def next_due(self) -> float | None:
        """When the next timer of the run (child Machines included) is due, on the Session's clock; None when
        no timer is set. A host sleeps until then and feeds `advance`."""
        due = [t.started_at + t.delay for t in self.statechart_snapshot.timers.values() if t.started_at is not None]
        due.extend(self.nest.next_due())
        return min(due) if due else None

    @routed
    def gate_due(self, gate_id: str) -> float | None:
        """When an `after` of the Gate's state, or of a state above it, fires (on the Session's clock), the soonest
        one; None when no such timer is set. It is the Machine's own timer, read from the snapshot, so the due time
        a page shows is the moment the run moves on (an escalation, a rejection), never a copy that could drift."""
        gate = self.parties.gates.get(gate_id)
        node = self.invoke_nodes.get(gate_id) if gate is not None else None
        if node is None:
            return None
        timers = self.statechart_snapshot.timers
        due = [
            timer.started_at + timer.delay
            for state in (node, *node.ancestors)
            for after in state.after
            if (timer := timers.get(after.event_type or "")) is not None and timer.started_at is not None
        ]
        return min(due) if due else None

    # -- reading the run -----------------------------------------------------------------------------------

    @property
    def snapshot(self) -> dict[str, Any]:
        """The run as plain JSON: the statechart snapshot and the Session's own bookkeeping."""
        return {
            "machine": self.machine.id,
            "digest": self.machine.digest,
            "status": self.status,
            "output": self.output,
            "reason": self.reason,
            "now": self.now,
            "statechart": self.statechart_snapshot.to_json(),
            "turns": [t.to_json() for t in self.parties.turns.values()],
            "gates": [g.to_json() for g in self.parties.gates.values()],
            "effects": [{"id": e.id, "slot": e.slot, "state": e.state} for e in self.nest.effects.values()],
            "notices": {k: list(v) for k, v in self.parties.notices.items() if v},
        }

    @property
    def value(self) -> Any:
        return self.statechart_snapshot.value

    @property
    def active_paths(self) -> list[str]:
        """The active states as dotted paths below the root (`writing.asking`), in document order."""
        return [".".join(n.path) for n in sorted(self.statechart_snapshot.nodes, key=lambda n: n.order) if n.path]

    @property
    def context(self) -> Any:
        return self.statechart_snapshot.context

    @property
    def effects(self) -> list[PendingEffect]:
        """The Effects the run is waiting on, child Machines' included (ids `<invoke id>/effect-N`)."""
        return self.nest.all_effects()

    @property
    def turns(self) -> list[Turn]:
        """Open Turns, those of child Machines included (their ids and Agents named `<invoke id>/<name>`)."""
        turns = list(self.parties.turns.values())
        for prefix, sub in self.nest.subs.items():
            turns.extend(prefixed(t, prefix) for t in sub.turns)
        return turns

    @property
    def gates(self) -> list[Gate]:
        gates = list(self.parties.gates.values())
        for prefix, sub in self.nest.subs.items():
            gates.extend(replace(g, id=f"{prefix}/{g.id}") for g in sub.gates)
        return gates

    def turn_of(self, agent: str) -> Turn | None:
        sub, local, prefix = self.nest.route(agent)
        if prefix is None:
            return self.parties.turn_of(agent)
        turn = sub.turn_of(local)
        return None if turn is None else prefixed(turn, prefix, agent)

    @routed
    def menu(self, agent: str) -> list[dict[str, Any]]:
        return self.machine.menu(agent)

    @routed
    def slot_of(self, agent: str) -> AgentSlot | None:
        """The Agent slot behind `agent` (`<invoke id>/<name>` reaches into a child Machine)."""
        slot = self.machine.slots.get(agent)
        return slot if isinstance(slot, AgentSlot) else None

    @routed
    def menu_names(self, agent: str) -> tuple[str, ...]:
        return self.machine.menu_names(agent)

    @routed
    def menu_json(self, agent: str) -> str:
        """The Agent's tools block, byte-stable: the same bytes for every request of the slot."""
        return self.machine.menu_json(agent)

    @routed
    def effect_slot(self, effect_id: str) -> EffectSlot | None:
        """The Effect slot a running Effect (`effect-N`, or `<invoke id>/effect-N`) was asked of."""
        pending = self.nest.effects.get(effect_id)
        slot = self.machine.slots.get(pending.slot) if pending is not None else None
        return slot if isinstance(slot, EffectSlot) else None

    @routed
    def allowed_picks(self, agent: str) -> list[str]:
        """The part of the Agent's Menu its Turn can pick now, read from the live Machine (probe.py)."""
        turn = self.turn_of(agent)
        if turn is None or self.status != RunState.ACTIVE or turn.outstanding is not None or not self.at_rest(turn):
            return []
        return allowed_events(self.machine, self.statechart_snapshot, agent)

    def at_rest(self, turn: Turn) -> bool:
        return at_rest(self.statechart, self.statechart_snapshot, self.statechart.id_map[turn.state], self.invoke_nodes)

    def work_ended(self, node: StateNode | None, *reply: Any) -> None:
        self.parties.work_ended(node, *reply)

    def emit(self, output: Output) -> None:
        self._outputs.append(output)
        self._emitted.append(output)

    def drain(self) -> list[Output]:
        """Outputs since the last drain, oldest first."""
        out, self._outputs = self._outputs, []
        return out


def prefixed(turn: Turn, prefix: str, agent: str | None = None) -> Turn:
    """A child Machine's Turn as its parent names it: `<invoke id>/<id>`, `<invoke id>/<agent>`."""
    return replace(turn, id=f"{prefix}/{turn.id}", agent=agent if agent is not None else f"{prefix}/{turn.agent}")


def where(machine: Machine, snapshot: Snapshot) -> str:
    """The active atomic states as dotted paths, or the Machine's id."""
    return ", ".join(state_path(machine.id, n) for n in snapshot.nodes if n.is_atomic) or machine.id


def error_reason(machine: Machine, invoke_nodes: Mapping[str, StateNode], last_event: Event | None, error: Any) -> str:
    """Why the Machine is in error: the error of an invoked actor that no onError route took (the event that
    carried it is the last one delivered), else the error itself."""
    actor_id = last_event.get("actorId") if last_event is not None else None
    node = invoke_nodes.get(actor_id) if isinstance(actor_id, str) else None
    what = error_text(error)
    if node is None:
        return f"the Machine stopped with an error: {what}"
    src = next((inv.src for inv in node.invoke if inv.id == actor_id), None)
    slot = machine.slots.get(src) if isinstance(src, str) else None
    kind = (
        "child Machine"
        if isinstance(slot, Machine)
        else {"effect": "Effect", "agent": "Agent", "gate": "Gate"}.get(getattr(slot, "kind", ""), "actor")
    )
    name = f'"{actor_id}" ({src})' if kind == "child Machine" else f'"{src}"'
    return (
        f"the {kind} {name} in state {state_path(machine.id, node)} failed and no onError route took its error: {what}"
    )
