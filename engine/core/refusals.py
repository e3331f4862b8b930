"""What `create_machine` refuses (MachineError, naming the Machine, the state path and the event) and what it
only warns about (as data)."""

from __future__ import annotations

import types
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from engine.core.errors import MachineError
from engine.core.routes import SentBy
from engine.core.seats import OnKey, Party, state_path
from engine.core.slots import FromPick
from engine.core.statechart.actions.assign import Assign
from engine.core.statechart.entry_exit import initial_state_nodes
from engine.core.statechart.guards import AndGuard, NotGuard, OrGuard

if TYPE_CHECKING:
    from engine.core.events import EventDef
    from engine.core.statechart.nodes import StateNode, Transition

__all__ = ["MachineWarning", "names_read", "refuse", "warnings_for"]


@dataclass(frozen=True)
class MachineWarning:
    """Something legal that is probably a mistake: shown by `jr2 check`, `jr2 up` and the Console."""

    code: str
    state: str
    event: str | None
    message: str

    def to_json(self) -> dict[str, Any]:
        return {"code": self.code, "state": self.state, "event": self.event, "message": self.message}


def names_read(value: Any) -> set[str]:
    """Names a callable (or `from_pick` fill, or dict of them) may read: attribute names and string constants
    in its code, nested code included. Over-approximates, so it never refuses a param that is read."""
    out: set[str] = set()
    if isinstance(value, FromPick):
        return names_read(value.fill)
    if isinstance(value, Assign):
        return names_read(value.assignment)
    if isinstance(value, Mapping):
        for v in value.values():
            out |= names_read(v)
            if isinstance(v, str):
                out.add(v)
        return out
    fn = getattr(value, "__func__", value)
    code = getattr(fn, "__code__", None)
    if code is None and callable(value):
        code = getattr(type(value).__call__, "__code__", None)  # a callable object: its class's method
    stack = [code] if code is not None else []
    while stack:
        c = stack.pop()
        out.update(c.co_names)
        for const in c.co_consts:
            if isinstance(const, str):
                out.add(const)
            elif isinstance(const, types.CodeType):
                stack.append(const)
    return out


def _guards(guard: Any) -> Iterator[Any]:
    if guard is None:
        return
    yield guard
    if isinstance(guard, (AndGuard, OrGuard)):
        for g in guard.guards:
            yield from _guards(g)
    elif isinstance(guard, NotGuard):
        yield from _guards(guard.guard)


def _entered(t: Transition) -> list[StateNode]:
    """The states a transition's targets put in the configuration (targets and their initial descendants)."""
    out: dict[StateNode, None] = {}
    for target in t.target or ():
        for n in initial_state_nodes(target):
            out[n] = None
    return list(out)


def refuse(
    machine_id: str,
    nodes: list[StateNode],
    slots: Mapping[str, Any],
    events: Mapping[str, EventDef],
    keys: list[OnKey],
    parties: Mapping[StateNode, Party | None],
) -> None:
    """Raise MachineError for the first rule the Machine breaks."""

    def where(node: StateNode) -> str:
        return state_path(machine_id, node)

    for event in events.values():
        if event.semantics != "ack":
            raise MachineError(
                f'machine "{machine_id}": event "{event.name}" has semantics "{event.semantics}"; '
                'only "ack" is supported (every pick is answered when its work is done)',
                machine_id,
                None,
                event.name,
            )
    taken = set()
    for key in keys:
        if key.event not in events:
            raise MachineError(
                f'machine "{machine_id}": state "{where(key.node)}" has an `on` key "{key.event}" that no listed '
                f"event has (listed: {sorted(events)}); list it with define_event in jr2_setup(events=...)",
                machine_id,
                where(key.node),
                key.event,
            )
        taken.add(key.event)
    for name in events:
        if name not in taken:
            raise MachineError(
                f'machine "{machine_id}": event "{name}" is listed but no state takes it (no `on` key names it)',
                machine_id,
                None,
                name,
            )
    for node in nodes:
        for inv in node.invoke:
            if isinstance(inv.src, str) and inv.src not in slots:
                raise MachineError(
                    f'machine "{machine_id}": state "{where(node)}" invokes "{inv.src}", which is '
                    f"not an actor slot (slots: {sorted(slots)})",
                    machine_id,
                    where(node),
                    None,
                )
    for node in nodes:
        party = parties.get(node)
        if party is not None and party.kind == "agent":
            for below in [node, *(n for n in nodes if node in n.ancestor_set)]:
                if below.type == "parallel":
                    raise MachineError(
                        f'machine "{machine_id}": state "{where(below)}" is parallel at or below "{where(node)}", '
                        f'which invokes the Agent "{party.id}"; an Agent\'s state cannot hold parallel states',
                        machine_id,
                        where(below),
                        None,
                    )
    _refuse_agent_twice(machine_id, [(n, p) for n, p in parties.items() if p is not None and p.kind == "agent"])
    party_ids = {p.id for p in parties.values() if p is not None} | {
        name for name, slot in slots.items() if getattr(slot, "kind", None) == "agent"
    }
    for node in nodes:
        for t in node.all_transitions():
            for guard in _guards(t.guard):
                if isinstance(guard, SentBy) and guard.party_id not in party_ids:
                    raise MachineError(
                        f'machine "{machine_id}": state "{where(node)}" uses sent_by("{guard.party_id}") on event '
                        f'"{t.event_type}", but no Agent slot or Gate invoke id is "{guard.party_id}" '
                        f"(parties: {sorted(party_ids)})",
                        machine_id,
                        where(node),
                        t.event_type,
                    )
    for node in nodes:
        for t in node.all_transitions():
            if t.event_type is None or t.event_type not in events:
                continue
            params = set(events[t.event_type].input.model_fields)
            if not params:
                continue
            for entered in _entered(t):
                for inv in entered.invoke:
                    slot = slots.get(inv.src) if isinstance(inv.src, str) else None
                    if getattr(slot, "kind", None) != "effect":
                        continue
                    read = names_read(inv.input)
                    for action in [*t.actions, *(a for n in _entered(t) for a in n.entry)]:
                        if isinstance(action, Assign):
                            read |= names_read(action)
                    unread = sorted(params - read)
                    if unread:
                        raise MachineError(
                            f'machine "{machine_id}": the pick "{t.event_type}" in state "{where(node)}" enters '
                            f'"{where(entered)}", which runs the Effect "{inv.src}", but nothing reads its params '
                            f"{unread} (not the Effect's input, an assign, or from_pick's fill); read them or drop "
                            "them from the event's input",
                            machine_id,
                            where(node),
                            t.event_type,
                        )


def _refuse_agent_twice(machine_id: str, invoking: list[tuple[StateNode, Party]]) -> None:
    """Two states that can be active at once (one inside the other, or in parallel regions) must not invoke the
    same Agent slot: a pick names only the slot, so it could not say which Turn it means."""
    for i, (a, party) in enumerate(invoking):
        for b, other in invoking[i + 1 :]:
            if other.id != party.id or not _together(a, b):
                continue
            raise MachineError(
                f'machine "{machine_id}": states "{state_path(machine_id, a)}" and "{state_path(machine_id, b)}" can '
                f'be active at once and both invoke the Agent "{party.id}"; a pick names only its Agent, so it could '
                "not say which Turn it means. Give one of them its own agent(...) slot",
                machine_id,
                state_path(machine_id, b),
                None,
            )


def _together(a: StateNode, b: StateNode) -> bool:
    """Whether two states can be active at once: one holds the other, or they sit in parallel regions."""
    if a in b.ancestor_set or b in a.ancestor_set:
        return True
    common = next(n for n in a.ancestors if n in b.ancestor_set)
    return common.type == "parallel"


def warnings_for(
    machine_id: str, nodes: list[StateNode], parties: Mapping[StateNode, Party | None], keys: list[OnKey]
) -> list[MachineWarning]:
    out: list[MachineWarning] = []
    entered: set[StateNode] = set()
    for node in nodes:
        if node.initial is not None and node.initial.target:
            entered.add(node.initial.target[0])
        for t in node.all_transitions():
            for target in t.target or ():
                entered.add(target)
                entered.update(target.ancestors)
                if target.type == "history" and target.parent is not None:
                    entered.update(target.parent.states.values())
    for node in nodes:
        party = parties.get(node)
        if party is None or party.kind != "agent":
            continue
        for below in nodes:
            if node not in below.ancestor_set or below.invoke:
                continue
            owner_states = [a for a in below.ancestors if parties.get(a) is not None]
            if owner_states and owner_states[0] is not node:
                continue
            if below not in entered and below.type != "history":
                out.append(
                    MachineWarning(
                        "mode-never-entered",
                        state_path(machine_id, below),
                        None,
                        f'mode "{state_path(machine_id, below)}" of Agent "{party.id}" is entered by no transition: '
                        "its picks are on the Menu but never in the Allowed picks",
                    )
                )
    for node in nodes:
        party = parties.get(node)
        if (
            party is not None
            and party.kind == "agent"
            and not any(n.candidates("agent.fault") for n in (node, *node.ancestors))
        ):
            out.append(
                MachineWarning(
                    "no-fault-route",
                    state_path(machine_id, node),
                    "agent.fault",
                    f'no state at or above "{state_path(machine_id, node)}" takes agent.fault: if a Turn of Agent '
                    f'"{party.id}" cannot go on (a model error, a runaway), the run fails; add an `on` key '
                    '"agent.fault" to route it',
                )
            )
    for key in keys:
        owner = key.owner
        if owner is None or owner.kind != "gate":
            continue
        gate_node = next(n for n in (key.node, *key.node.ancestors) if n.id == owner.state)
        if not any(getattr(parties.get(a), "kind", None) == "agent" for a in gate_node.ancestors):
            continue
        if any(t.target is None for t in key.node.transitions.get(key.event, ())):
            out.append(
                MachineWarning(
                    "gate-event-without-target",
                    state_path(machine_id, key.node),
                    key.event,
                    f'the Gate in "{state_path(machine_id, gate_node)}" takes "{key.event}" without a target: the Gate '
                    "stays open after it, so the Agent's state never comes to Rest and every pick is refused until "
                    "the Gate's state exits",
                )
            )
    return out
