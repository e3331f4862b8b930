"""Who may send what: parties, the owner of each `on` key, the seats, each Agent's Menu and each Gate's accepts.

One rule covers everything (SPEC.md 4): the parties are Agents and Gates; the owner of an `on` key in state X is
the party invoked by the nearest state at or above X that invokes a party, or every party when there is none;
`audience` only gives an event to the other kind of party too, or keeps an unowned event from one kind.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from engine.core.errors import MachineError

if TYPE_CHECKING:
    from engine.core.events import EventDef
    from engine.core.statechart.nodes import InvokeDef, StateNode

__all__ = ["Party", "Seat", "OnKey", "party_of", "on_keys", "derive_seats", "is_engine_event", "state_path"]

AUDIENCE_OF_KIND = {"agent": "agent", "gate": "external"}


@dataclass(frozen=True)
class Party:
    """An Agent (by its slot) or a Gate (by its invoke id) invoked by `state`."""

    kind: str
    id: str
    state: str
    default_id: bool = False

    @property
    def label(self) -> str:
        if self.kind == "agent":
            return f"agent:{self.id}"
        return "gate" if self.default_id else f"gate:{self.id}"


@dataclass(frozen=True)
class OnKey:
    """One `on` key: its state, event name, and owning party (None: every party)."""

    node: StateNode
    event: str
    owner: Party | None


@dataclass(frozen=True)
class Seat:
    """Per state that invokes a party: which events that party may send while the state is active."""

    state: str
    path: str
    party: Party
    events: tuple[str, ...]

    def line(self) -> str:
        return f"{self.path} {self.party.label}: [{', '.join(self.events)}]"

    def to_json(self) -> dict[str, Any]:
        return {
            "state": self.state,
            "path": self.path,
            "party": self.party.kind,
            "id": self.party.id,
            "label": self.party.label,
            "events": list(self.events),
        }


def is_engine_event(name: str) -> bool:
    return name == "agent.fault" or name.startswith("xstate.")


def state_path(machine_id: str, node: StateNode) -> str:
    return ".".join([machine_id, *node.path])


def _party_invokes(node: StateNode, slots: Mapping[str, Any]) -> Iterator[tuple[InvokeDef, Any]]:
    for inv in node.invoke:
        if isinstance(inv.src, str):
            slot = slots.get(inv.src)
            if slot is not None and getattr(slot, "kind", None) in ("agent", "gate"):
                yield inv, slot


def party_of(node: StateNode, slots: Mapping[str, Any], machine_id: str) -> Party | None:
    found = list(_party_invokes(node, slots))
    if not found:
        return None
    if len(found) > 1:
        raise MachineError(
            f'machine "{machine_id}": state "{state_path(machine_id, node)}" invokes two parties '
            f"({', '.join(i.src for i, _ in found)}); a state may invoke one Agent or one Gate",
            machine_id,
            state_path(machine_id, node),
        )
    inv, slot = found[0]
    if slot.kind == "agent":
        return Party("agent", inv.src, node.id)
    return Party("gate", inv.id, node.id, default_id=inv.id == (".".join(node.path) or machine_id))


def on_keys(nodes: list[StateNode], parties: Mapping[StateNode, Party | None]) -> list[OnKey]:
    """Every author-written `on` key with its owner (engine events excluded)."""
    keys = []
    for node in nodes:
        owner = None
        for candidate in (node, *node.ancestors):
            if parties.get(candidate) is not None:
                owner = parties[candidate]
                break
        for descriptor in node.config.get("on") or {}:
            if not is_engine_event(descriptor):
                keys.append(OnKey(node, descriptor, owner))
    return keys


def _admits(audience: str | None, kind: str) -> bool:
    return audience == "any" or audience == AUDIENCE_OF_KIND[kind]


def derive_seats(
    machine_id: str,
    nodes: list[StateNode],
    parties: Mapping[StateNode, Party | None],
    keys: list[OnKey],
    events: Mapping[str, EventDef],
    senders: dict[tuple[StateNode, str], set[tuple[str, str]]] | None = None,
) -> list[Seat]:
    """The seats, in document order: for each state invoking a party, the events that party may send there.

    `senders`, when given, is filled with who may send through each `on` key: (state, event) -> {(kind, id)}."""

    def give(key: OnKey, party: Party, names: set[str]) -> None:
        names.add(key.event)
        if senders is not None:
            senders.setdefault((key.node, key.event), set()).add((party.kind, party.id))

    by_node: dict[StateNode, list[OnKey]] = {}
    for key in keys:
        by_node.setdefault(key.node, []).append(key)
    seats = []
    for node in nodes:
        party = parties.get(node)
        if party is None:
            continue
        names: set[str] = set()
        related = [*node.ancestors, node]
        for other in related:
            for key in by_node.get(other, ()):
                if key.event not in events:
                    continue
                audience = events[key.event].audience
                if key.owner is None:
                    if audience in (None, "any") or _admits(audience, party.kind):
                        give(key, party, names)
                elif key.owner == party:
                    give(key, party, names)
                elif key.owner.kind != party.kind and _admits(audience, party.kind):
                    give(key, party, names)
        for key in keys:
            if key.event not in events or node not in key.node.ancestor_set or key.owner is None:
                continue
            if key.owner == party:
                give(key, party, names)
            elif key.owner.kind != party.kind and _admits(events[key.event].audience, party.kind):
                give(key, party, names)
        seats.append(Seat(node.id, state_path(machine_id, node), party, tuple(sorted(names))))
    return seats
