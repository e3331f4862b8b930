"""`jr2_setup(...).create_machine(config)`: a statechart plus everything derived from it once — Menus, seats,
Gate accepts, warnings, the shape digest — and every refusal of SPEC.md 4."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_core import PydanticCustomError

from engine.core.assignment import refuse_assign
from engine.core.errors import MachineError
from engine.core.events import EventDef
from engine.core.refusals import MachineWarning, refuse, warnings_for
from engine.core.routes import Answer, SeatGuard
from engine.core.seats import OnKey, Party, Seat, derive_seats, on_keys, party_of, state_path
from engine.core.slots import GATE, AgentSlot, EffectSlot, FailSlot, GateSlot
from engine.core.statechart import create_machine as create_statechart
from engine.core.statechart.errors import ConfigError, StatechartError
from engine.core.statechart.logic import ActorLogic
from engine.core.statechart.machine import StateMachine
from engine.core.statechart.nodes import StateNode
from engine.core.text import NUL_REFUSED, nul_at
from engine.core.workspace import TOOL_NAMES as WORKSPACE_TOOLS

__all__ = ["jr2_setup", "Setup", "Machine", "SlotLogic"]

Slot = Any


class SlotLogic(ActorLogic):
    """What an Agent, Gate, Effect, `fail` or child Machine slot is to the statechart: inert logic the Session
    hosts itself (a child Machine as a nested Session)."""

    kind = "slot"

    def __init__(self, name: str, slot: Slot) -> None:
        self.name, self.slot = name, slot

    def __repr__(self) -> str:
        return f"SlotLogic({self.name!r}, {self.slot.kind})"


class Setup:
    """The events and actor slots a Machine is built with (`gate` is always there)."""

    def __init__(
        self,
        events: Iterable[EventDef],
        actors: Mapping[str, Any] | None = None,
        guards: Mapping[str, Any] | None = None,
        actions: Mapping[str, Any] | None = None,
        delays: Mapping[str, Any] | None = None,
    ) -> None:
        self.events: dict[str, EventDef] = {}
        for event in events:
            if not isinstance(event, EventDef):
                raise ConfigError(f"jr2_setup(events=...) takes define_event(...) results; got {event!r}")
            if event.name in self.events:
                raise ConfigError(f'jr2_setup: event "{event.name}" is listed twice')
            self.events[event.name] = event
        self.slots: dict[str, Any] = {"gate": GATE, **(actors or {})}
        self.guards = dict(guards or {})
        self.actions = dict(actions or {})
        self.delays = dict(delays or {})

    def create_machine(self, config: Mapping[str, Any]) -> Machine:
        return Machine(self, dict(config))


def jr2_setup(
    events: Iterable[EventDef],
    actors: Mapping[str, Any] | None = None,
    guards: Mapping[str, Any] | None = None,
    actions: Mapping[str, Any] | None = None,
    delays: Mapping[str, Any] | None = None,
    types: Any = None,
) -> Setup:
    return Setup(events, actors=actors, guards=guards, actions=actions, delays=delays)


class Machine:
    """A jr2 Machine: the statechart, its events, slots and door, and what is derived from them."""

    def __init__(self, setup: Setup, config: dict[str, Any]) -> None:
        self.setup = setup
        self.events = setup.events
        self.slots = setup.slots
        door = config.get("input")
        if door is not None and not (isinstance(door, type) and issubclass(door, BaseModel)):
            raise MachineError(f'machine "{config.get("id")}": `input` (the door) must be a pydantic model class')
        self.door: type[BaseModel] | None = door
        actors: dict[str, Any] = {}
        for name, slot in self.slots.items():
            if isinstance(slot, (Machine, AgentSlot, GateSlot, EffectSlot, FailSlot)):
                actors[name] = SlotLogic(name, slot)
            else:
                actors[name] = slot
        config = _default_invoke_ids(config, self.slots)
        try:
            self.statechart: StateMachine = create_statechart(
                config, guards=setup.guards, actions=setup.actions, actors=actors, delays=setup.delays
            )
        except StatechartError as err:
            raise MachineError(f'machine "{config.get("id") or "(machine)"}": {err}') from err
        self.id = self.statechart.id
        self.nodes: list[StateNode] = sorted(self.statechart.id_map.values(), key=lambda n: n.order)
        self.parties: dict[StateNode, Party | None] = {n: party_of(n, self.slots, self.id) for n in self.nodes}
        self.keys: list[OnKey] = on_keys(self.nodes, self.parties)
        refuse(self.id, self.nodes, self.slots, self.events, self.keys, self.parties)
        refuse_assign(self.id, self.nodes, self.slots)
        self._bind_answers()
        senders: dict[tuple[StateNode, str], set[tuple[str, str]]] = {}
        self._seats = derive_seats(self.id, self.nodes, self.parties, self.keys, self.events, senders)
        self._guard_seats(senders)
        self._warnings = warnings_for(self.id, self.nodes, self.parties, self.keys)
        self._menus: dict[str, tuple[str, ...]] = {}
        for seat in self._seats:
            if seat.party.kind == "agent":
                self._menus[seat.party.id] = tuple(sorted({*self._menus.get(seat.party.id, ()), *seat.events}))
        self._tools = {
            slot: json.dumps([self.events[e].tool() for e in names], sort_keys=True)
            for slot, names in self._menus.items()
        }
        self._check_workspaces()
        self.digest = _digest(self.nodes)
        self._takers: dict[str, frozenset[StateNode]] = {}

    def takers(self, event: str) -> frozenset[StateNode]:
        """The states with a transition for `event` (wildcards included): if none is active, nothing takes it."""
        found = self._takers.get(event)
        if found is None:
            found = frozenset(n for n in self.nodes if n.candidates(event))
            self._takers[event] = found
        return found

    # -- derived once --------------------------------------------------------------------------------------

    def _bind_answers(self) -> None:
        """Each `answer` on a transition answers the Agent invoked nearest at or above the transition's source."""
        for node in self.nodes:
            for action in (*node.entry, *node.exit):
                if isinstance(action, Answer):
                    raise MachineError(
                        f'machine "{self.id}": state "{state_path(self.id, node)}" has `answer` in '
                        "entry/exit; it belongs on a transition (the route of a reply)",
                        self.id,
                        state_path(self.id, node),
                    )
            for t in node.all_transitions():
                if not any(isinstance(a, Answer) for a in t.actions):
                    continue
                agent = self.agent_above(node)
                if agent is None:
                    raise MachineError(
                        f'machine "{self.id}": the `answer` on event "{t.event_type}" in state '
                        f'"{state_path(self.id, node)}" has no Agent at or above that state to answer',
                        self.id,
                        state_path(self.id, node),
                        t.event_type,
                    )
                t.actions = tuple(a.bound(agent.id) if isinstance(a, Answer) else a for a in t.actions)

    def _guard_seats(self, senders: Mapping[tuple[StateNode, str], set[tuple[str, str]]]) -> None:
        """Every transition of a listed event is taken only for the parties whose seat holds its `on` key."""
        for key in self.keys:
            if key.event not in self.events:
                continue
            allowed = frozenset(senders.get((key.node, key.event), ()))
            for t in key.node.transitions.get(key.event, ()):
                t.guard = SeatGuard(allowed, t.guard)

    def _check_workspaces(self) -> None:
        """An Agent with a workspace has the workspace tools beside its Menu, so no event of its Menu may take
        their names; an Effect or a Gate that uses an Agent's workspace names an Agent of this Machine that has
        one."""
        for name, slot in self.slots.items():
            if isinstance(slot, AgentSlot) and slot.workspace != "none":
                taken = sorted(set(self._menus.get(name, ())) & set(WORKSPACE_TOOLS))
                if taken:
                    raise MachineError(
                        f'machine "{self.id}": the Agent "{name}" has a workspace, whose tools are '
                        f"named {', '.join(WORKSPACE_TOOLS)}; rename its event(s) "
                        f"{', '.join(taken)}",
                        self.id,
                    )
            if isinstance(slot, EffectSlot) and "workspace" in slot.spec:
                self._workspace_agent(slot.spec["workspace"], f'the Effect "{name}"')
            if isinstance(slot, GateSlot) and slot.workspace is not None:
                self._workspace_agent(slot.workspace, f'the Gate slot "{name}"')

    def _workspace_agent(self, agent: str, user: str) -> None:
        slot = self.slots.get(agent)
        if not isinstance(slot, AgentSlot):
            agents = ", ".join(sorted(self.agents)) or "none"
            raise MachineError(
                f'machine "{self.id}": {user} uses the workspace of "{agent}", which is not an Agent '
                f"of this Machine (Agents: {agents})",
                self.id,
            )
        if slot.workspace == "none":
            raise MachineError(
                f'machine "{self.id}": {user} uses the workspace of the Agent "{agent}", which has '
                'none; give it agent(..., workspace="run") or workspace="shared"',
                self.id,
            )

    def agent_above(self, node: StateNode) -> Party | None:
        for candidate in (node, *node.ancestors):
            party = self.parties.get(candidate)
            if party is not None and party.kind == "agent":
                return party
        return None

    def seats(self) -> list[Seat]:
        return list(self._seats)

    def seats_text(self, name: str | None = None) -> str:
        """The seats listing of SPEC.md 7, headed by the Workflow's name (its file name; the Machine's id when no
        name is given); child Machines' seats sit under the state that invokes them."""
        lines = [f'seats: workflow "{name or self.id}" — who may send what, per state']
        lines.extend(self.seat_lines())
        return "\n".join(lines)

    def seat_lines(self, indent: int = 1) -> list[str]:
        pad = "  " * indent
        lines = []
        invoking = {node.id: node for node in self.nodes if self.child_machines(node)}
        seats = {seat.state: seat for seat in self._seats}
        for node in self.nodes:
            if node.id in seats:
                lines.append(pad + seats[node.id].line())
            if node.id in invoking:
                for invoke_id, child in self.child_machines(node):
                    below = child.seat_lines(indent + 1)
                    if below:
                        lines.append(
                            f'{pad}{state_path(self.id, node)} child Machine "{child.id}" (invoke '
                            f"{invoke_id}; its parties are named {invoke_id}/<name>):"
                        )
                        lines.extend(below)
        return lines

    def child_machines(self, node: StateNode) -> list[tuple[str, Machine]]:
        """The child Machines `node` invokes, with their invoke ids."""
        found = []
        for inv in node.invoke:
            slot = self.slots.get(inv.src) if isinstance(inv.src, str) else None
            if isinstance(slot, Machine):
                found.append((inv.id, slot))
        return found

    def seats_json(self) -> list[dict[str, Any]]:
        """The seats as data, in document order, child Machines' nested under their invoking state."""
        out: list[dict[str, Any]] = [seat.to_json() for seat in self._seats]
        for node in self.nodes:
            for invoke_id, child in self.child_machines(node):
                out.append(
                    {
                        "state": node.id,
                        "path": state_path(self.id, node),
                        "invoke": invoke_id,
                        "machine": child.id,
                        "seats": child.seats_json(),
                    }
                )
        return out

    def seat_of(self, state_id: str) -> Seat | None:
        for seat in self._seats:
            if seat.state == state_id:
                return seat
        return None

    def menus(self) -> dict[str, list[str]]:
        return {slot: list(names) for slot, names in self._menus.items()}

    def menu_names(self, slot: str) -> tuple[str, ...]:
        return self._menus.get(slot, ())

    def menu(self, slot: str) -> list[dict[str, Any]]:
        """The tools block of an Agent: sorted, and byte-stable (`menu_json`)."""
        return json.loads(self._tools.get(slot, "[]"))

    def menu_json(self, slot: str) -> str:
        return self._tools.get(slot, "[]")

    def gate_event(self, gate: str, name: str) -> EventDef | None:
        """The event `name` as a Gate accepts it: from this Machine, or from the child Machine the Gate lives in
        (`<invoke id>/<gate id>`)."""
        machine, _ = self.child_for(gate)
        return machine.events.get(name) if machine is not None else None

    def gate_slot(self, gate: str) -> GateSlot | None:
        """The Gate slot an open Gate (`<gate id>`, or `<invoke id>/<gate id>` in a child Machine) was made from."""
        machine, local = self.child_for(gate)
        if machine is None:
            return None
        src = next((inv.src for n in machine.nodes for inv in n.invoke if inv.id == local), None)
        slot = machine.slots.get(src) if isinstance(src, str) else None
        return slot if isinstance(slot, GateSlot) else None

    def agent_slot(self, agent: str) -> AgentSlot | None:
        """The Agent slot behind `agent` (`<invoke id>/<name>` reaches into a child Machine)."""
        machine, local = self.child_for(agent)
        slot = machine.slots.get(local) if machine is not None else None
        return slot if isinstance(slot, AgentSlot) else None

    def child_for(self, address: str) -> tuple[Machine | None, str]:
        """The Machine a party's or Gate's address lives in (`<invoke id>/...` walks into child Machines), and the
        address's last part."""
        machine: Machine | None = self
        while machine is not None and "/" in address:
            prefix, address = address.split("/", 1)
            src = next((inv.src for n in machine.nodes for inv in n.invoke if inv.id == prefix), None)
            slot = machine.slots.get(src) if isinstance(src, str) else None
            machine = slot if isinstance(slot, Machine) else None
        return machine, address

    def warnings(self) -> list[MachineWarning]:
        return list(self._warnings)

    @property
    def agents(self) -> dict[str, AgentSlot]:
        return {name: slot for name, slot in self.slots.items() if isinstance(slot, AgentSlot)}

    def validate_door(self, data: Any) -> Any:
        """The run's input, validated against the door (a ValidationError names the field)."""
        if self.door is None:
            return data
        if isinstance(data, self.door):
            return data
        nul = nul_at(data)
        if nul is not None:
            found = data
            for key in nul:
                found = found[key]
            raise ValidationError.from_exception_data(
                self.door.__name__,
                [{"type": PydanticCustomError("nul_character", NUL_REFUSED), "loc": nul, "input": found}],
            )
        return self.door.model_validate(data if data is not None else {})

    def __repr__(self) -> str:
        return f"Machine({self.id!r})"


def _default_invoke_ids(
    config: Mapping[str, Any], slots: Mapping[str, Any], path: tuple[str, ...] = ()
) -> dict[str, Any]:
    """The config with an `id` on each Gate and child-Machine invoke that has none: its state's dotted path below
    the root (`writing.asking`), since these ids appear in URLs and commands. Only the dicts on the way are
    copied; the author's config is left as it was."""
    out = dict(config)
    invoke = config.get("invoke")
    if invoke is not None:
        invokes = invoke if isinstance(invoke, list) else [invoke]
        named = []
        for index, inv in enumerate(invokes):
            src = inv.get("src") if isinstance(inv, Mapping) else None
            slot = slots.get(src) if isinstance(src, str) else None
            if isinstance(inv, Mapping) and inv.get("id") is None and isinstance(slot, (GateSlot, Machine)):
                default = ".".join(path) or str(config.get("id") or "root")
                inv = {**inv, "id": default if index == 0 else f"{default}:{index}"}
            named.append(inv)
        out["invoke"] = named if isinstance(invoke, list) else named[0]
    states = config.get("states")
    if isinstance(states, Mapping):
        out["states"] = {
            key: _default_invoke_ids(state, slots, (*path, key)) if isinstance(state, Mapping) else state
            for key, state in states.items()
        }
    return out


def _digest(nodes: list[StateNode]) -> str:
    """A digest of the Machine's shape: states, transitions and invokes (not guards, prompts or descriptions)."""
    shape = []
    for node in nodes:
        shape.append(
            {
                "id": node.id,
                "type": node.type,
                "history": node.history,
                "initial": node.initial.target[0].id if node.initial and node.initial.target else None,
                "transitions": [
                    [t.event_type, None if t.target is None else [x.id for x in t.target], t.reenter]
                    for t in node.all_transitions()
                ],
                "invoke": [[i.id, i.src if isinstance(i.src, str) else "(inline)"] for i in node.invoke],
            }
        )
    return hashlib.sha256(json.dumps(shape, sort_keys=True).encode()).hexdigest()
