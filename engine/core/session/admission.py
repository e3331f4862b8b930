"""Whether a party's input may come in, decided before anything moves: a pick must be on its Agent's Menu, with
nothing outstanding, its state at Rest and its input valid; a Gate's event must be one the open Gate accepts, with a
valid input. Each refusal is a result in words, never an exception, and leaves the Session as it was."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from engine.core.outputs import Delivery, DeliveryOutcome, PickOutcome, PickResult
from engine.core.session.ports import SessionPort
from engine.core.session.probe import PartyEvent
from engine.core.session.records import Gate, Turn
from engine.core.session.validation import validate_input
from engine.core.statechart.selection import select_transitions
from engine.core.words import exception_text

__all__ = ["Admitted", "admit_pick", "admit_gate_event"]


@dataclass(frozen=True)
class Admitted:
    """An input that may come in: its validated input, the event to deliver, and (for a pick) the Allowed picks
    before it and whether the Machine takes it."""

    validated: dict[str, Any]
    delivered: PartyEvent
    allowed: tuple[str, ...] = ()
    taken: bool = True


def admit_pick(
    session: SessionPort, turn: Turn, agent: str, event: str, params: Mapping[str, Any] | None
) -> Admitted | PickResult:
    """The pick admitted (it may still be "unmoved": not allowed now, or no transition takes it), or refused."""
    menu = session.machine.menu_names(agent)
    if event not in menu:
        return PickResult(
            PickOutcome.REFUSED,
            allowed=tuple(session.allowed_picks(agent)),
            error=f'"{event}" is not on the Menu of agent "{agent}" (its Menu: {list(menu)})',
        )
    if turn.outstanding is not None or not session.at_rest(turn):
        what = (
            f'the pick "{turn.outstanding.event}" is outstanding'
            if turn.outstanding
            else "the Agent's state is not at Rest"
        )
        return PickResult(
            PickOutcome.REFUSED,
            error=f"{what}: every other pick is refused and nothing is delivered until its work is done",
        )
    validated, error = validate_input(session.machine, event, params)
    if error is not None:
        return PickResult(PickOutcome.REFUSED, allowed=tuple(session.allowed_picks(agent)), error=error)
    allowed = tuple(session.allowed_picks(agent))
    delivered = PartyEvent({**validated, "type": event, "sender": {"party": "agent", "id": agent}})
    taken = False
    if event in allowed:
        try:
            taken = bool(select_transitions(session.statechart_snapshot, delivered))
        except Exception as err:
            return PickResult(
                PickOutcome.REFUSED,
                allowed=allowed,
                error=f'a guard on "{event}" raised {exception_text(err)} with this input; nothing moved',
            )
    return Admitted(validated, delivered, allowed, taken)


def admit_gate_event(
    session: SessionPort, open_gate: Gate | None, gate: str, event: str, params: Mapping[str, Any] | None
) -> Admitted | Delivery:
    """The Gate's event admitted, or refused (no such open Gate, an event it does not accept, a bad input, a guard
    that raised) or unmoved (no transition takes it now)."""
    if open_gate is None:
        return Delivery(
            DeliveryOutcome.REFUSED,
            error=f'no open Gate "{gate}" (open Gates: {sorted(g.id for g in session.gates)})',
            code="no-gate",
        )
    if event not in open_gate.accepts:
        return Delivery(
            DeliveryOutcome.REFUSED,
            accepts=open_gate.accepts,
            code="not-accepted",
            error=f'Gate "{gate}" does not accept "{event}" (it accepts {list(open_gate.accepts)})',
        )
    validated, error = validate_input(session.machine, event, params)
    if error is not None:
        return Delivery(DeliveryOutcome.REFUSED, accepts=open_gate.accepts, error=error, code="invalid")
    delivered = PartyEvent({**validated, "type": event, "sender": {"party": "gate", "id": gate}})
    try:
        taken = bool(select_transitions(session.statechart_snapshot, delivered))
    except Exception as err:
        return Delivery(
            DeliveryOutcome.REFUSED,
            accepts=open_gate.accepts,
            code="invalid",
            error=f'a guard on "{event}" raised {exception_text(err)} with this input; nothing moved',
        )
    if not taken:
        return Delivery(
            DeliveryOutcome.UNMOVED,
            accepts=open_gate.accepts,
            error=f'the Machine takes no "{event}" now; nothing moved',
        )
    return Admitted(validated, delivered)
