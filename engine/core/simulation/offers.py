"""The events a simulated run takes now, grouped by the party that sends them: each open Turn's Menu (its Allowed
picks, and for every other Menu event why it is not allowed), each open Gate's accepts, each running Effect's done
and error, and the engine's own events (`agent.fault` for each open Turn, each timer set).

The Allowed picks are the Session's own (`allowed_picks`, probe.py); this module only says why the rest are not,
in the words the Session refuses with: outstanding, not at Rest, not taken in this mode, or the guard that was false.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from engine.core.session.ports import SessionPort
from engine.core.session.probe import ProbeEvent, targets_self
from engine.core.session.records import Turn
from engine.core.simulation.candidates import FALSE, READS_INPUT, Candidate, candidates, guard_phrase
from engine.core.statechart.events import done_actor_event, error_actor_event
from engine.core.statechart.snapshot import Snapshot

__all__ = ["Offer", "PartyOffers", "offers", "not_allowed_reason"]


@dataclass(frozen=True)
class Offer:
    """One event a party may send now (or, `allowed` false, may not, with `why`).

    `kind` is the input it becomes (`pick`, `gate`, `effect_done`, `effect_failed`, `fault`, `timer`); `event` is
    the Machine's event type (what a graph edge is labelled with), `label` what a person reads."""

    kind: str
    by: str
    event: str
    label: str
    allowed: bool
    why: str = ""
    schema: dict[str, Any] | None = None
    due: float | None = None
    candidates: tuple[Candidate, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "by": self.by,
            "event": self.event,
            "label": self.label,
            "allowed": self.allowed,
            "why": self.why,
            "schema": self.schema,
            "due": self.due,
            "candidates": [c.to_json() for c in self.candidates],
        }


@dataclass(frozen=True)
class PartyOffers:
    """The events one party may send: an Agent (by its slot), a Gate (by its id), an Effect, or the engine."""

    party: str
    id: str
    state: str
    offers: list[Offer] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "party": self.party,
            "id": self.id,
            "state": self.state,
            "offers": [o.to_json() for o in self.offers],
        }


def _schema(session: SessionPort, machine_events: Any, name: str) -> dict[str, Any] | None:
    event = machine_events.get(name)
    return event.input.model_json_schema() if event is not None else None


def _local(session: SessionPort, name: str) -> tuple[SessionPort, str]:
    """The Session a party of a child Machine (`<invoke id>/<name>`) lives in, and its name there."""
    nest = getattr(session, "nest", None)
    if nest is None:
        return session, name
    sub, local, prefix = nest.route(name)
    return (session, name) if prefix is None else _local(sub, local)


def not_allowed_reason(session: SessionPort, turn: Turn, agent: str, event: str, preview: list[Candidate]) -> str:
    """Why an Agent's Menu event is not among its Allowed picks, in the Session's own words."""
    sub, local = _local(session, agent)
    local_turn = sub.turn_of(local) or turn
    if local_turn.outstanding is not None:
        return (
            f'the pick "{local_turn.outstanding.event}" is outstanding: every other pick is refused until its work '
            "is done"
        )
    if not sub.at_rest(local_turn):
        return "the Agent's state is not at Rest: " + _busy(sub, local_turn)
    snapshot = sub.statechart_snapshot
    if sub.machine.takers(event).isdisjoint(snapshot.node_set):
        where = sorted(".".join(n.path) or "(root)" for n in sub.machine.takers(event))
        return f"not taken in this mode: no active state takes it (taken in {', '.join(where) or 'no state'})"
    if any(c.seat for c in preview) and not any(c.seat is None for c in preview):
        return next(c.seat for c in preview if c.seat)  # type: ignore[return-value]
    false = [c for c in preview if c.guard is not None and c.guard.result == FALSE and c.seat is None]
    if false:
        return "; ".join(f"{guard_phrase(c.guard.label, c.source)} was false" for c in false if c.guard)
    return "no transition would move anything (it has no target and no actions here)"


def _busy(session: SessionPort, turn: Turn) -> str:
    """What keeps an Agent's state from Rest: what runs below it, or a timer that could move it."""
    state = session.statechart.id_map[turn.state]
    below = [
        child_id
        for child_id in session.statechart_snapshot.children
        if (node := session.invoke_nodes.get(child_id)) is not None and state in node.ancestor_set
    ]
    if below:
        return "running below it: " + ", ".join(below)
    return "a timer is set that could move it to another state inside it"


def _agent_offers(session: SessionPort, turn: Turn) -> PartyOffers:
    sub, local = _local(session, turn.agent)
    allowed = set(session.allowed_picks(turn.agent))
    group = PartyOffers("agent", turn.agent, turn.path)
    sender = {"party": "agent", "id": local}
    for name in sub.machine.menu_names(local):
        preview = candidates(sub.statechart_snapshot, ProbeEvent(type=name, sender=sender))
        why = "" if name in allowed else not_allowed_reason(session, turn, turn.agent, name, preview)
        group.offers.append(
            Offer(
                "pick",
                turn.agent,
                name,
                name,
                name in allowed,
                why,
                _schema(sub, sub.machine.events, name),
                candidates=tuple(preview),
            )
        )
    return group


def _gate_offers(session: SessionPort, gate_id: str, state: str, accepts: tuple[str, ...]) -> PartyOffers:
    sub, local = _local(session, gate_id)
    group = PartyOffers("gate", gate_id, state)
    sender = {"party": "gate", "id": local}
    for name in accepts:
        preview = candidates(sub.statechart_snapshot, ProbeEvent(type=name, sender=sender))
        moves = any(c.taken or c.why == READS_INPUT for c in preview)
        false = [c for c in preview if c.guard is not None and c.guard.result == FALSE]
        why = (
            ""
            if moves
            else "; ".join(f"{guard_phrase(c.guard.label, c.source)} was false" for c in false if c.guard)
            or "no transition would move anything now"
        )
        group.offers.append(
            Offer(
                "gate",
                gate_id,
                name,
                name,
                moves,
                why,
                _schema(sub, sub.machine.events, name),
                candidates=tuple(preview),
            )
        )
    return group


def _timers(session: SessionPort, snapshot: Snapshot) -> list[Offer]:
    out = []
    for timer in sorted(snapshot.timers.values(), key=lambda t: ((t.started_at or 0) + t.delay, t.id)):
        if timer.started_at is None or not targets_self(session.statechart, snapshot, timer.target):
            continue
        due = timer.started_at + timer.delay
        event = str(timer.event["type"])
        out.append(
            Offer(
                "timer",
                "engine",
                event,
                f"{event} (due in {max(0.0, due - session.now):g} ms)",
                True,
                due=due,
                candidates=tuple(candidates(snapshot, timer.event)),
            )
        )
    return out


def offers(session: SessionPort) -> list[PartyOffers]:
    """Everything the run takes now, grouped by party: Agents, Gates, Effects, then the engine's events."""
    if session.status != "active":
        return []
    groups = [_agent_offers(session, turn) for turn in session.turns]
    groups.extend(_gate_offers(session, g.id, g.path, g.accepts) for g in session.gates)
    for effect in session.effects:
        sub, local = _local(session, effect.id)
        pending = getattr(getattr(sub, "nest", None), "effects", {}).get(local)
        invoke_id = pending.invoke_id if pending is not None else effect.invoke_id
        done, error = done_actor_event(invoke_id, None)["type"], error_actor_event(invoke_id, None)["type"]
        groups.append(
            PartyOffers(
                "effect",
                effect.id,
                effect.state,
                [
                    Offer("effect_done", effect.id, str(done), f"{effect.slot}: done", True),
                    Offer("effect_failed", effect.id, str(error), f"{effect.slot}: error", True),
                ],
            )
        )
    engine = PartyOffers("engine", "engine", "")
    engine.offers.extend(
        Offer("fault", t.agent, "agent.fault", f"agent.fault ({t.agent})", True) for t in session.turns
    )
    engine.offers.extend(_timers(session, session.statechart_snapshot))
    if engine.offers:
        groups.append(engine)
    return groups
