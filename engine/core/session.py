"""`Session`: the deterministic core of one run. No I/O, no model calls, no sleeping.

Everything a party does goes in as an input (a pick, a Gate's event, an Effect's result, time passing); everything
the run asks for comes out of `drain()` as data. Each accepted input is one journal entry; feeding the journal to
a new Session (`Session.replay`) rebuilds the same run.
"""
from __future__ import annotations

import functools
import hashlib
import json
from collections import deque
from dataclasses import dataclass, field, fields, replace
from typing import Any, Callable, Mapping

from pydantic import ValidationError

from engine.core.statechart.actions.base import ExecutableAction
from engine.core.statechart.actor import create_actor
from engine.core.statechart.callables import call_with
from engine.core.statechart.clock import SimulatedClock
from engine.core.statechart.errors import GuardError
from engine.core.statechart.events import Event, done_actor_event, error_actor_event
from engine.core.statechart.nodes import StateNode
from engine.core.statechart.refs import ActorRef
from engine.core.statechart.selection import select_transitions
from engine.core.statechart.snapshot import Snapshot

from engine.core.seats import state_path
from engine.core.text import NUL_REFUSED, nul_at
from engine.core.words import error_text, exception_text, validation_text
from engine.core.prompts import allowed_changed_message, answer_message, system_prompt, user_message
from engine.core.outputs import (
    AllowedChanged, EffectCancelled, EffectRequested, GateClosed, GateOpened, Delivery, NoticeKept, Output,
    PickAnswered,
    PickResult, PickStopped, RunEnded, TurnEnded, TurnStarted,
)
from engine.core.routes import Answer
from engine.core.slots import AgentSlot, EffectSlot, FailSlot, GateSlot
from engine.core.workflow import Machine, SlotLogic

__all__ = ["Session", "Turn", "Gate", "SessionError"]

#: Journal entries a host writes for itself, which a Session skips on replay.
HOST_KINDS = frozenset({"effect_started"})

DID_NOT_FINISH = "The pick did not finish: the state that asked for it was left before its work was done."


class SessionError(Exception):
    """A journal that does not replay: the entry and what differed."""


@dataclass
class Pick:
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
    outstanding: Pick | None = None
    chain: list[Any] = field(default_factory=list)
    answer: Any = None
    answered: bool = False
    told: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "agent": self.agent, "state": self.state, "path": self.path, "prompt": self.prompt,
                "continue": self.continues, "dials": self.dials, "notices": list(self.notices),
                "outstanding": None if self.outstanding is None else {"id": self.outstanding.id,
                                                                      "event": self.outstanding.event}}


@dataclass
class Gate:
    """An open Gate: addressed by its invoke id; accepts the events its seat gives it."""

    id: str
    state: str
    path: str
    accepts: tuple[str, ...]
    meta: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "state": self.state, "path": self.path, "accepts": list(self.accepts),
                "meta": self.meta}


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
        return EffectRequested(self.id, self.slot, self.kind, dict(self.spec), self.input, self.idempotent,
                               self.state)


class PartyEvent(Event):
    """An event a party delivered (a pick, a Gate's event): its input reads as attributes, as a dict, or as its
    pydantic model would dump it (`event.model_dump()`), and `event.sender` says who sent it."""

    __slots__ = ()

    def model_dump(self, **_: Any) -> dict[str, Any]:
        return {key: value for key, value in self.items() if key not in ("type", "sender")}


class _PickInputRead(BaseException):
    """A guard read the pick's input while the Allowed picks were being probed. A BaseException, so a guard that
    swallows every Exception cannot hide the read."""


class _ProbeEvent(PartyEvent):
    """An event with only `type` and `sender`: reading anything else, directly or through a copy (`dict(event)`,
    `{**event}`, `.items()`, iteration, `.model_dump()`...), tells us the guard needs the pick's input."""

    __slots__ = ()

    def __getitem__(self, key: str) -> Any:
        if key in ("type", "sender"):
            return dict.__getitem__(self, key)
        raise _PickInputRead(key)

    def get(self, key: str, default: Any = None) -> Any:
        if key in ("type", "sender"):
            return dict.get(self, key, default)
        raise _PickInputRead(key)

    def __getattr__(self, name: str) -> Any:
        if name in ("type", "sender"):
            return dict.get(self, name)
        raise _PickInputRead(name)

    def __contains__(self, key: object) -> bool:
        if key in ("type", "sender"):
            return dict.__contains__(self, key)
        raise _PickInputRead(str(key))

    def _whole(self, *args: Any, **kwargs: Any) -> Any:
        raise _PickInputRead("the whole input")

    __iter__ = keys = items = values = copy = model_dump = __len__ = __eq__ = __ne__ = _whole  # type: ignore
    __or__ = __ror__ = __reduce__ = __reduce_ex__ = _whole  # type: ignore
    __hash__ = None  # type: ignore[assignment]


def _journaled(method: Callable[..., Any]) -> Callable[..., Any]:
    """An input method. Its journal entry records a digest of the outputs it produced, so a replay can name the
    first entry whose outputs differ. `at=` (the host's clock) lets time pass first: timers that come due by then
    fire as an `advance` step of its own; otherwise the time moves, as a journaled `advance`, only if the input is
    accepted, so a refused input changes nothing, not even the time."""
    @functools.wraps(method)
    def wrapper(self: Session, *args: Any, at: float | None = None, **kwargs: Any) -> Any:
        if at is not None and at > self.now and self.status == "active":
            due = self.next_due()
            if due is not None and due <= at:
                self.advance(at - self.now)
            else:
                self._lag = at
        entries, emitted = len(self.journal), len(self._emitted)
        self._input_at = None
        self._depth += 1
        try:
            result = method(self, *args, **kwargs)
        finally:
            self._lag = None
            self._depth -= 1
        if len(self.journal) > entries:
            index = self._input_at if self._input_at is not None else entries
            self.journal[index]["out"] = _digest(self._emitted[emitted:])
        if not self._depth:
            del self._emitted[:]
        return result
    return wrapper


def _digest(outputs: list[Output]) -> str:
    text = json.dumps([o.to_json() for o in outputs], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


class Session:
    """One run of a Machine, driven only by its inputs."""

    def __init__(self, machine: Machine, input: Any = None, clock: SimulatedClock | None = None, *,
                 counters: dict[str, int] | None = None) -> None:
        self._setup(machine, clock, counters)
        door = machine.validate_door(input)
        self.journal.append({"kind": "start", "input": _plain(input), "at": self.now})
        snapshot, actions = self.statechart.initial_transition(door)
        self._snapshot: Snapshot = snapshot
        try:
            self._apply(snapshot, actions)
        except Exception as err:  # noqa: BLE001 - an entry action of the workflow raised: the run fails at once
            self._end("failed", reason=f"the Machine raised while starting in {self._where()}: {exception_text(err)}")
        self._settle()
        self.journal[0]["out"] = _digest(self._emitted)
        del self._emitted[:]

    def _setup(self, machine: Machine, clock: SimulatedClock | None, counters: dict[str, int] | None) -> None:
        """The fields every Session has, started or restored. `counters` is shared by a run's nested Sessions, so
        Turn, pick and Effect ids are unique in the whole run."""
        self.machine = machine
        self.statechart = machine.statechart
        self.clock = clock or SimulatedClock()
        self.now = self.clock.now()
        self.journal: list[dict[str, Any]] = []
        self.status = "active"
        self.output: Any = None
        self.reason: str | None = None
        self._outputs: list[Output] = []
        self._emitted: list[Output] = []
        self._turns: dict[str, Turn] = {}
        self._gates: dict[str, Gate] = {}
        self._effects: dict[str, PendingEffect] = {}
        self._effect_by_invoke: dict[str, str] = {}
        self._children: dict[str, Any] = {}
        self._subs: dict[str, Session] = {}
        self._notices: dict[str, list[Any]] = {}
        self._counters = counters if counters is not None else {"turn": 0, "pick": 0, "effect": 0}
        self._current_pick: Pick | None = None
        self._closing: dict[str, Turn] = {}
        self._picking: str | None = None
        self._routing: set[str] = set()
        self._last_event: Event | None = None
        self._lag: float | None = None
        self._input_at: int | None = None
        self._depth = 0
        self._queue: deque[Event] = deque()
        self._delivering = False
        self._invoke_nodes: dict[str, StateNode] = {
            inv.id: node for node in machine.nodes for inv in node.invoke}

    # -- persisting ----------------------------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        """Everything needed to go on from here (`Session.restore`), as plain JSON: the statechart snapshot with
        its timers, the open Turns with their picks and Chains, Gates, Effects, notices, child Machines and the
        id counters. The journal is not in it: a host keeps that apart, and a restored Session journals on."""
        return {
            "version": 1, "machine": self.machine.id, "digest": self.machine.digest, "status": self.status,
            "output": self.output, "reason": self.reason, "now": self.now, "counters": dict(self._counters),
            "statechart": self._snapshot.to_json(),
            "turns": [_turn_json(t) for t in self._turns.values()],
            "gates": [g.to_json() for g in self._gates.values()],
            "effects": [vars(e) for e in self._effects.values()],
            "notices": {k: list(v) for k, v in self._notices.items() if v},
            "subs": {prefix: sub.to_json() for prefix, sub in self._subs.items()},
        }

    @classmethod
    def restore(cls, machine: Machine, data: Mapping[str, Any], *,
                counters: dict[str, int] | None = None) -> Session:
        """The Session `to_json()` was taken from, ready for its next input. Refuses (SessionError) a state
        written under another shape of the Machine: the run has drifted, and the reason names both digests."""
        if data.get("machine") != machine.id or data.get("digest") != machine.digest:
            raise SessionError(
                f'the run was written under machine "{data.get("machine")}" with shape {str(data.get("digest"))[:12]}, '
                f'but the workflow now has machine "{machine.id}" with shape {machine.digest[:12]}: the run has '
                "drifted")
        session = cls.__new__(cls)
        shared = counters if counters is not None else {k: int(v) for k, v in data["counters"].items()}
        session._setup(machine, SimulatedClock(data["now"]), shared)
        session.now = data["now"]
        session.status, session.output, session.reason = data["status"], data.get("output"), data.get("reason")
        session._snapshot = machine.statechart.resolve_snapshot(data["statechart"])
        for turn in data.get("turns", ()):
            restored = _turn_from(turn)
            session._turns[restored.invoke_id] = restored
        for gate in data.get("gates", ()):
            session._gates[gate["id"]] = Gate(gate["id"], gate["state"], gate["path"], tuple(gate["accepts"]),
                                              dict(gate["meta"]))
        for effect in data.get("effects", ()):
            pending = PendingEffect(**effect)
            session._effects[pending.id] = pending
            session._effect_by_invoke[pending.invoke_id] = pending.id
        session._notices = {k: list(v) for k, v in data.get("notices", {}).items()}
        for prefix, sub in data.get("subs", {}).items():
            slot = machine.slots.get(_invoke_src(session._invoke_nodes.get(prefix), prefix))
            if not isinstance(slot, Machine):
                raise SessionError(f'the run has a child Machine "{prefix}" that the workflow no longer invokes')
            session._subs[prefix] = cls.restore(slot, sub, counters=shared)
        for ref in session._snapshot.children.values():
            if not isinstance(ref.logic, SlotLogic):
                session._revive(ref)
        return session

    def next_due(self) -> float | None:
        """When the next timer of the run (child Machines included) is due, on the Session's clock; None when
        no timer is set. A host sleeps until then and feeds `advance`."""
        due = [t.started_at + t.delay for t in self._snapshot.timers.values() if t.started_at is not None]
        due.extend(d for sub in self._subs.values() if (d := sub.next_due()) is not None)
        return min(due) if due else None

    @property
    def effects(self) -> list[PendingEffect]:
        """The Effects the run is waiting on, child Machines' included (ids `<invoke id>/effect-N`)."""
        effects = list(self._effects.values())
        for prefix, sub in self._subs.items():
            effects.extend(replace(e, id=f"{prefix}/{e.id}") for e in sub.effects)
        return effects

    # -- reading the run -----------------------------------------------------------------------------------

    @property
    def snapshot(self) -> dict[str, Any]:
        """The run as plain JSON: the statechart snapshot and the Session's own bookkeeping."""
        return {
            "machine": self.machine.id, "digest": self.machine.digest, "status": self.status,
            "output": self.output, "reason": self.reason, "now": self.now,
            "statechart": self._snapshot.to_json(),
            "turns": [t.to_json() for t in self._turns.values()],
            "gates": [g.to_json() for g in self._gates.values()],
            "effects": [{"id": e.id, "slot": e.slot, "state": e.state} for e in self._effects.values()],
            "notices": {k: list(v) for k, v in self._notices.items() if v},
        }

    @property
    def value(self) -> Any:
        return self._snapshot.value

    @property
    def active_paths(self) -> list[str]:
        """The active states as dotted paths below the root (`writing.asking`), in document order."""
        return [".".join(n.path) for n in sorted(self._snapshot.nodes, key=lambda n: n.order) if n.path]

    @property
    def context(self) -> Any:
        return self._snapshot.context

    @property
    def turns(self) -> list[Turn]:
        """Open Turns, those of child Machines included (their ids and Agents named `<invoke id>/<name>`)."""
        turns = list(self._turns.values())
        for prefix, sub in self._subs.items():
            turns.extend(replace(t, id=f"{prefix}/{t.id}", agent=f"{prefix}/{t.agent}") for t in sub.turns)
        return turns

    @property
    def gates(self) -> list[Gate]:
        gates = list(self._gates.values())
        for prefix, sub in self._subs.items():
            gates.extend(replace(g, id=f"{prefix}/{g.id}") for g in sub.gates)
        return gates

    def turn_of(self, agent: str) -> Turn | None:
        target, local, prefix = self._route(agent)
        if prefix is not None:
            turn = target.turn_of(local)
            return None if turn is None else replace(turn, id=f"{prefix}/{turn.id}", agent=agent)
        for turn in self._turns.values():
            if turn.agent == agent:
                return turn
        return None

    def menu(self, agent: str) -> list[dict[str, Any]]:
        target, local, prefix = self._route(agent)
        return target.menu(local) if prefix is not None else self.machine.menu(agent)

    def slot_of(self, agent: str) -> AgentSlot | None:
        """The Agent slot behind `agent` (`<invoke id>/<name>` reaches into a child Machine)."""
        target, local, prefix = self._route(agent)
        if prefix is not None:
            return target.slot_of(local)
        slot = self.machine.slots.get(agent)
        return slot if isinstance(slot, AgentSlot) else None

    def menu_names(self, agent: str) -> tuple[str, ...]:
        target, local, prefix = self._route(agent)
        return target.menu_names(local) if prefix is not None else self.machine.menu_names(agent)

    def menu_json(self, agent: str) -> str:
        """The Agent's tools block, byte-stable: the same bytes for every request of the slot."""
        target, local, prefix = self._route(agent)
        return target.menu_json(local) if prefix is not None else self.machine.menu_json(agent)

    def effect_slot(self, effect_id: str) -> EffectSlot | None:
        """The Effect slot a running Effect (`effect-N`, or `<invoke id>/effect-N`) was asked of."""
        target, local, prefix = self._route(effect_id)
        if prefix is not None:
            return target.effect_slot(local)
        pending = self._effects.get(effect_id)
        slot = self.machine.slots.get(pending.slot) if pending is not None else None
        return slot if isinstance(slot, EffectSlot) else None

    def allowed_picks(self, agent: str) -> list[str]:
        """The part of the Agent's Menu its Turn can pick now, read from the live Machine."""
        target, local, prefix = self._route(agent)
        if prefix is not None:
            return target.allowed_picks(local)
        turn = self.turn_of(agent)
        if turn is None or self.status != "active" or turn.outstanding is not None or not self._at_rest(turn):
            return []
        allowed = []
        sender = {"party": "agent", "id": agent}
        active = self._snapshot.node_set
        for name in self.machine.menu_names(agent):
            if self.machine.takers(name).isdisjoint(active):
                continue
            probe = _ProbeEvent(type=name, sender=sender)
            try:
                transitions = select_transitions(self._snapshot, probe)
            except GuardError as err:
                if isinstance(err.__cause__, _PickInputRead):
                    allowed.append(name)
                continue
            except _PickInputRead:
                allowed.append(name)
                continue
            if any(t.target is not None or t.actions for t in transitions):
                allowed.append(name)
        return allowed

    def _emit(self, output: Output) -> None:
        self._outputs.append(output)
        self._emitted.append(output)

    def drain(self) -> list[Output]:
        """Outputs since the last drain, oldest first."""
        out, self._outputs = self._outputs, []
        return out

    # -- inputs --------------------------------------------------------------------------------------------

    @_journaled
    def pick(self, agent: str, event: str, params: Mapping[str, Any] | None = None) -> PickResult:
        """An Agent's tool call. Refused (nothing changes) unless it is on the Menu, valid, and nothing is
        outstanding; "unmoved" if the Machine would not take it now."""
        if self.status != "active":
            return PickResult("refused", error=f"the run has ended ({self.status}); nothing was delivered")
        target, local, prefix = self._route(agent)
        if prefix is not None:
            self._catch_up()
            result = target.pick(local, event, params)
            if result.outcome != "refused":
                self._record({"kind": "pick", "agent": agent, "event": event, "params": _plain(params),
                              "outcome": result.outcome})
            self._pull(prefix)
            return result
        turn = self.turn_of(agent)
        if turn is None:
            return PickResult("refused", error=f'agent "{agent}" has no open Turn; nothing was delivered')
        result = self._pick(turn, agent, event, params)
        if result.outcome != "refused" and self._turns.get(turn.invoke_id) is turn:
            turn.told = tuple(result.allowed) if result.outcome != "outstanding" else ()
        return result

    def _pick(self, turn: Turn, agent: str, event: str, params: Mapping[str, Any] | None) -> PickResult:
        menu = self.machine.menu_names(agent)
        if event not in menu:
            return PickResult("refused", allowed=tuple(self.allowed_picks(agent)),
                              error=f'"{event}" is not on the Menu of agent "{agent}" (its Menu: {list(menu)})')
        if turn.outstanding is not None or not self._at_rest(turn):
            what = f'the pick "{turn.outstanding.event}" is outstanding' if turn.outstanding else \
                "the Agent's state is not at Rest"
            return PickResult("refused", error=f"{what}: every other pick is refused and nothing is delivered "
                                               "until its work is done")
        validated, error = self._validate(event, params)
        if error is not None:
            return PickResult("refused", allowed=tuple(self.allowed_picks(agent)), error=error)
        allowed = self.allowed_picks(agent)
        delivered = PartyEvent({**validated, "type": event, "sender": {"party": "agent", "id": agent}})
        taken = False
        if event in allowed:
            try:
                taken = bool(select_transitions(self._snapshot, delivered))
            except Exception as err:  # noqa: BLE001 - a guard of the workflow raised on this input
                return PickResult("refused", allowed=tuple(allowed),
                                  error=f'a guard on "{event}" raised {exception_text(err)} with this input; nothing '
                                        "moved")
        entry = {"kind": "pick", "agent": agent, "event": event, "params": validated, "outcome": "unmoved"}
        self._record(entry)
        if event not in allowed:
            return PickResult("unmoved", allowed=tuple(allowed),
                              error=f'"{event}" is on the Menu but not allowed now; nothing moved')
        if not taken:
            return PickResult("unmoved", allowed=tuple(allowed),
                              error=f'the Machine did not take "{event}" with this input (a guard said no); '
                                    "nothing moved")
        self._counters["pick"] += 1
        pick = Pick(f"pick-{self._counters['pick']}", event)
        turn.outstanding, turn.chain, turn.answer, turn.answered = pick, [], None, False
        self._current_pick, self._picking = pick, agent
        self._work_ended(self._invoke_nodes.get(turn.invoke_id), validated)
        try:
            self._deliver(delivered)
        finally:
            self._current_pick, self._picking = None, None
        if self._turns.get(turn.invoke_id) is not turn:
            result = PickResult("ended", answer=turn.answer, pick=pick.id)
        elif turn.outstanding is None:
            result = PickResult("answered", answer=turn.answer, allowed=tuple(self.allowed_picks(agent)),
                                pick=pick.id)
        else:
            result = PickResult("outstanding", pick=pick.id)
        entry["outcome"] = result.outcome
        return result

    @_journaled
    def send_gate(self, gate: str, event: str, params: Mapping[str, Any] | None = None) -> Delivery:
        """An event from a Gate's caller (a human in the Console, a webhook, the CLI)."""
        if self.status != "active":
            return Delivery("refused", error=f"the run has ended ({self.status})", code="ended")
        target, local, prefix = self._route(gate)
        if prefix is not None:
            self._catch_up()
            result = target.send_gate(local, event, params)
            if result.outcome == "delivered":
                self._record({"kind": "gate", "gate": gate, "event": event, "params": _plain(params)})
            self._pull(prefix)
            return result
        open_gate = self._gates.get(gate)
        if open_gate is None:
            return Delivery("refused", error=f'no open Gate "{gate}" (open Gates: {sorted(g.id for g in self.gates)})',
                            code="no-gate")
        if event not in open_gate.accepts:
            return Delivery("refused", accepts=open_gate.accepts, code="not-accepted",
                            error=f'Gate "{gate}" does not accept "{event}" (it accepts {list(open_gate.accepts)})')
        validated, error = self._validate(event, params)
        if error is not None:
            return Delivery("refused", accepts=open_gate.accepts, error=error, code="invalid")
        delivered = PartyEvent({**validated, "type": event, "sender": {"party": "gate", "id": gate}})
        try:
            taken = bool(select_transitions(self._snapshot, delivered))
        except Exception as err:  # noqa: BLE001 - a guard of the workflow raised on this input
            return Delivery("refused", accepts=open_gate.accepts, code="invalid",
                            error=f'a guard on "{event}" raised {exception_text(err)} with this input; nothing moved')
        if not taken:
            return Delivery("unmoved", accepts=open_gate.accepts,
                            error=f'the Machine takes no "{event}" now; nothing moved')
        self._record({"kind": "gate", "gate": gate, "event": event, "params": validated})
        self._work_ended(self._invoke_nodes.get(gate), validated)
        self._deliver(delivered)
        return Delivery("delivered", accepts=open_gate.accepts)

    @_journaled
    def effect_done(self, effect_id: str, output: Any = None) -> Delivery:
        """An Effect finished: its output is the invoke's done event, and a reply to the Turns above it."""
        return self._effect_result(effect_id, "effect_done", output)

    @_journaled
    def effect_failed(self, effect_id: str, error: Any) -> Delivery:
        """An Effect failed: the invoke's error event (not a reply; `answer` on `onError` tells the Agent)."""
        return self._effect_result(effect_id, "effect_failed", error)

    def _effect_result(self, effect_id: str, kind: str, value: Any) -> Delivery:
        field_name = "output" if kind == "effect_done" else "error"
        target, local, prefix = self._route(effect_id)
        if prefix is not None and self.status == "active":
            self._catch_up()
            result = target._effect_result(local, kind, value)
            if result.outcome == "delivered":
                self._record({"kind": kind, "effect": effect_id, field_name: _plain(value)})
            self._pull(prefix)
            return result
        pending = self._effects.get(effect_id)
        if pending is None or self.status != "active":
            return Delivery("refused", error=f'no running Effect "{effect_id}" (running: {sorted(self._effects)})',
                            code="no-effect")
        self._record({"kind": kind, "effect": effect_id, field_name: _plain(value)})
        self._finish_effect(pending)
        if kind == "effect_done":
            self._work_ended(self._invoke_nodes.get(pending.invoke_id), value)
            self._deliver(done_actor_event(pending.invoke_id, value))
        else:
            self._work_ended(self._invoke_nodes.get(pending.invoke_id))
            self._deliver(error_actor_event(pending.invoke_id, value))
        return Delivery("delivered")

    @_journaled
    def fault(self, agent: str, reason: str) -> None:
        """A Turn that cannot go on: `agent.fault` goes into the Machine with the reason."""
        if self.status != "active":
            return
        self._record({"kind": "fault", "agent": agent, "reason": reason})
        self._fault(agent, reason)

    def _fault(self, agent: str, reason: str) -> None:
        target, local, prefix = self._route(agent)
        if prefix is not None:
            target._fault(local, reason)
            self._pull(prefix)
            return
        turn = self.turn_of(agent)
        self._deliver(Event(type="agent.fault", agent=agent, reason=reason))
        if turn is not None and self.status == "active" and self._turns.get(turn.invoke_id) is turn:
            self._end("failed", reason=f'the Turn of Agent "{agent}" could not go on ({reason}), and the Machine has '
                                       f"no route for agent.fault that leaves {turn.path}")

    @_journaled
    def advance(self, ms: float) -> None:
        """Let `ms` pass: every timer that comes due fires, in order."""
        if ms < 0:
            raise ValueError(f"advance takes a non-negative number of ms; got {ms}")
        self.journal.append({"kind": "advance", "ms": ms, "at": self.now})
        target = self.now + ms
        while self.status == "active":
            due = [(t.started_at + t.delay, t.id) for t in self._snapshot.timers.values()
                   if t.started_at is not None and t.started_at + t.delay <= target]
            if not due:
                break
            at, key = min(due)
            timer = self._snapshot.timers[key]
            self.now = max(self.now, at)
            self._snapshot = self._snapshot.without_timer(key)
            if self._to_self(timer.target):
                self._deliver(timer.event)
            else:
                self._send_to_child(timer.target, timer.event)
        self.now = target
        for prefix in list(self._subs):
            sub = self._subs.get(prefix)
            if sub is not None:
                sub._advance_to(target)
                self._pull(prefix)
        if self.clock.now() < target:
            self.clock.set(target)

    def _advance_to(self, target: float) -> None:
        if target > self.now and self.status == "active":
            self.advance(target - self.now)

    @_journaled
    def cancel(self) -> None:
        if self.status != "active":
            return
        self._record({"kind": "cancel"})
        self._end("cancelled")

    # -- replay --------------------------------------------------------------------------------------------

    @classmethod
    def replay(cls, machine: Machine, journal: list[dict[str, Any]]) -> Session:
        """A new Session fed the same inputs; raises SessionError naming the first entry that does not apply."""
        if not journal or journal[0].get("kind") != "start":
            raise SessionError("a journal starts with its 'start' entry")
        session = cls(machine, input=journal[0].get("input"), clock=SimulatedClock(journal[0].get("at", 0)))
        _check_outputs(session, 0, journal[0])
        for index, entry in enumerate(journal[1:], start=1):
            session.apply(entry, index)
        return session

    def apply(self, entry: Mapping[str, Any], index: int | None = None) -> None:
        """Feed one recorded journal entry again (replay, or a restored run's journal tail). Raises SessionError
        when it does not apply the same way or produces different outputs. Entries a host writes for itself
        (`HOST_KINDS`, such as an Effect having started) change nothing here."""
        kind = entry.get("kind")
        where = f"journal entry {index}" if index is not None else "a journal entry"
        if kind in HOST_KINDS:
            return
        mark = len(self.journal)
        if kind == "pick":
            result = self.pick(entry["agent"], entry["event"], entry.get("params"))
            ok = result.outcome == entry.get("outcome", result.outcome)
        elif kind == "gate":
            ok = self.send_gate(entry["gate"], entry["event"], entry.get("params")).outcome == "delivered"
        elif kind == "effect_done":
            ok = self.effect_done(entry["effect"], entry.get("output")).outcome == "delivered"
        elif kind == "effect_failed":
            ok = self.effect_failed(entry["effect"], entry.get("error")).outcome == "delivered"
        elif kind == "advance":
            self.advance(entry["ms"])
            ok = True
        elif kind == "fault":
            self.fault(entry["agent"], entry["reason"])
            ok = True
        elif kind == "cancel":
            self.cancel()
            ok = True
        else:
            raise SessionError(f"{where} has unknown kind {kind!r}")
        if not ok:
            raise SessionError(f"{where} ({kind}: {json.dumps(dict(entry), default=str)[:200]}) did not apply the "
                               "same way on replay: the Machine or the run diverged here")
        expected = entry.get("out")
        got = self.journal[mark].get("out") if mark < len(self.journal) else None
        if expected is not None and got != expected:
            raise SessionError(f"{where} ({kind}) produced different outputs on replay: the Machine or the run "
                               "diverged here")

    # -- the core loop -------------------------------------------------------------------------------------

    def _validate(self, event: str, params: Mapping[str, Any] | None) -> tuple[dict[str, Any], str | None]:
        """The event's input, validated by its model and made JSON-ready, or the reason it is refused. Nothing a
        party sends leaves here as an exception: a host never has to catch one."""
        if params is None:
            params = {}
        if not isinstance(params, Mapping):
            return {}, f'the input of "{event}" must be an object; got {type(params).__name__}'
        if any(not isinstance(key, str) for key in params):
            return {}, f'the input of "{event}" must have string keys; got {sorted(map(repr, params))}'
        nul = nul_at(dict(params))
        if nul is not None:
            return {}, f'the input of "{event}" is not valid: {".".join(map(str, nul))}: {NUL_REFUSED}'
        for reserved, why in (("sender", "the engine writes it on every delivered event"),
                              ("type", "it is the event's name")):
            if reserved in params:
                return {}, f"no party can write `{reserved}`: {why}"
        try:
            model = self.machine.events[event].input.model_validate(dict(params))
            validated = model.model_dump(mode="json")
        except ValidationError as err:
            return {}, f'the input of "{event}" is not valid: {validation_text(err)}'
        except Exception as err:  # noqa: BLE001 - a validator of the workflow's own raised: the input is refused
            return {}, f'the input of "{event}" is not valid: its model raised {type(err).__name__}: {err}'
        for reserved in ("sender", "type"):
            if reserved in validated:
                return {}, f'the input of "{event}" carries `{reserved}` after validation; no party can write it'
        return validated, None

    def _deliver(self, event: Event) -> None:
        """Run one event to completion. An event raised while one is being applied (a child that finished as it
        started) waits its turn, as in an actor's mailbox."""
        self._queue.append(event)
        if self._delivering:
            return
        self._delivering = True
        try:
            while self._queue and self.status == "active":
                event = self._last_event = self._queue.popleft()
                try:
                    snapshot, actions = self.statechart.transition(self._snapshot, event)
                    self._apply(snapshot, actions)
                except Exception as err:  # noqa: BLE001 - the workflow's guard or action raised: the run fails
                    self._end("failed", reason=f'the Machine raised while taking "{event.type}" in '
                                               f"{self._where()}: {exception_text(err)}")
                for agent in list(self._closing):
                    self._flush_closing(agent)
                self._routing.clear()
                self._settle()
        finally:
            self._delivering = False
            self._queue.clear()

    def _catch_up(self) -> None:
        """Time the host said has passed (`at=`), now that an input is accepted: a journaled `advance` that fires
        nothing (the wrapper made sure no timer is due by then)."""
        if self._lag is None or self._lag <= self.now:
            return
        target, self._lag = self._lag, None
        self.journal.append({"kind": "advance", "ms": target - self.now, "at": self.now, "out": _digest([])})
        self.now = target
        for prefix in list(self._subs):
            self._subs[prefix]._advance_to(target)
            self._pull(prefix)
        if self.clock.now() < target:
            self.clock.set(target)

    def _record(self, entry: dict[str, Any]) -> None:
        """Journal an accepted input, after the time it came at."""
        self._catch_up()
        entry["at"] = self.now
        self.journal.append(entry)
        self._input_at = len(self.journal) - 1

    def _apply(self, snapshot: Snapshot, actions: list[ExecutableAction]) -> None:
        """Perform what the pure transition asked for, in order."""
        self._snapshot = snapshot
        for action in actions:
            if isinstance(action.exec, Answer):
                self._route_answer(action)
            elif action.exec is not None:
                action.run()
            elif action.type == "xstate.spawnChild":
                self._start(action.params["actorRef"])
            elif action.type == "xstate.stopChild":
                if action.params["actorRef"] is not None:
                    self._stop(action.params["actorRef"])
            elif action.type == "xstate.sendTo" and action.params["delay"] is None:
                self._send_to_child(action.params["to"], action.params["event"])
        for timer in self._snapshot.timers.values():
            if timer.started_at is None:
                timer.started_at = self.now

    def _settle(self) -> None:
        """After every step: answer outstanding picks whose state came to Rest; notice the run's end."""
        for turn in list(self._turns.values()):
            if turn.outstanding is not None and self._at_rest(turn):
                pick = turn.outstanding
                turn.outstanding = None
                if not turn.answered:
                    turn.answer = turn.chain[-1] if turn.chain else None
                turn.answered = True
                if pick is not self._current_pick:
                    allowed = tuple(self.allowed_picks(turn.agent))
                    turn.told = allowed
                    self._emit(PickAnswered(turn.id, pick.id, pick.event, turn.answer, allowed,
                                            answer_message(turn.answer, allowed)))
        for turn in list(self._turns.values()):
            if turn.outstanding is not None or (self._current_pick is not None and turn.agent == self._picking):
                continue
            allowed = tuple(self.allowed_picks(turn.agent))
            if allowed != turn.told:
                turn.told = allowed
                self._emit(AllowedChanged(turn.id, turn.agent, allowed, allowed_changed_message(allowed)))
        if self.status == "active" and self._snapshot.status == "done":
            self._end("done", output=self._snapshot.output)
        elif self.status == "active" and self._snapshot.status == "error":
            self._end("failed", reason=self._error_reason(self._snapshot.error))

    def _route_answer(self, action: ExecutableAction) -> None:
        answer: Answer = action.exec  # type: ignore[assignment]
        agent = answer.agent or ""
        target = self._answer_target(agent)
        chain = list(target.chain) if target is not None else []
        value = call_with(answer.fn, context=action.info.get("context"), event=action.info.get("event"),
                          chain=chain)
        if target is None:
            self._notices.setdefault(agent, []).append(value)
            self._emit(NoticeKept(agent, "", value))
            return
        target.answer, target.answered = value, True
        if self._turns.get(target.invoke_id) is not target:
            self._keep_notice(target, value)

    def _answer_target(self, agent: str) -> Turn | None:
        """The Turn whose pick an `answer` bound to `agent` answers: placement decides (SPEC.md 4). That Agent's
        waiting pick; else its Turn that this route just closed (the answer becomes its notice); else none."""
        turn = self.turn_of(agent)
        if turn is not None and turn.outstanding is not None:
            return turn
        return self._closing.get(agent)

    def _flush_closing(self, agent: str) -> None:
        """A Turn its own route closed: its answer (the route's `answer`, else the last reply) is a notice."""
        turn = self._closing.pop(agent, None)
        if turn is None or turn.answered:
            return
        turn.answered = True
        if turn.chain:
            turn.answer = turn.chain[-1]
            self._keep_notice(turn, turn.answer)

    def _keep_notice(self, turn: Turn, value: Any) -> None:
        self._notices.setdefault(turn.agent, []).append(value)
        self._emit(NoticeKept(turn.agent, turn.id, value))

    def _work_ended(self, node: StateNode | None, *reply: Any) -> None:
        """The work that `node` ran ended: its output, a Gate's event or a nested Agent's pick (a `reply`), or its
        error (no reply). Every Turn above `node` that waits on a pick runs that pick's route now, so its state
        being left is not "did not finish"; a reply joins their Chains."""
        if node is None:
            return
        for turn in self._turns.values():
            state = self.statechart.id_map[turn.state]
            if turn.outstanding is not None and state in node.ancestor_set:
                if reply:
                    turn.chain.append(reply[0])
                self._routing.add(turn.id)

    def _at_rest(self, turn: Turn) -> bool:
        """Rest: nothing runs below the Agent's state, and no timer is set that could move it to another state
        inside it."""
        state = self.statechart.id_map[turn.state]
        for child_id in self._snapshot.children:
            node = self._invoke_nodes.get(child_id)
            if node is not None and state in node.ancestor_set:
                return False
        return not any(self._moves_inside(timer.event["type"], state)
                       for timer in self._snapshot.timers.values() if self._to_self(timer.target))

    def _moves_inside(self, event_type: str, state: StateNode) -> bool:
        """Whether an event, when it comes, could move `state` to another state inside it: a transition of an
        active state at or below it that targets below it. Guards are not asked: they decide when the timer
        fires, so such a timer keeps the state from Rest until it has fired."""
        for node in self._snapshot.node_set:
            if node is not state and state not in node.ancestor_set:
                continue
            for t in node.candidates(event_type):
                if any(target is not state and state in target.ancestor_set for target in t.target or ()):
                    return True
        return False

    def _to_self(self, target: Any) -> bool:
        """A timer's target is this Machine: a delayed `raise_`, an `after`, or a delayed `send_to` itself (a
        restored snapshot names itself by the Machine's id)."""
        if isinstance(target, str):
            return target == "#_internal" or (target == self.statechart.id and target not in self._snapshot.children)
        return target is None or getattr(target, "logic", None) is self.statechart

    def _where(self) -> str:
        return ", ".join(state_path(self.machine.id, n) for n in self._snapshot.nodes if n.is_atomic) or \
            self.machine.id

    def _error_reason(self, error: Any) -> str:
        """Why the Machine is in error: the error of an invoked actor that no onError route took, named by its
        state, its slot and its own words."""
        event = self._last_event
        actor_id = event.get("actorId") if event is not None else None
        node = self._invoke_nodes.get(actor_id) if isinstance(actor_id, str) else None
        what = error_text(error)
        if node is None:
            return f"the Machine stopped with an error: {what}"
        src = next((inv.src for inv in node.invoke if inv.id == actor_id), None)
        slot = self.machine.slots.get(src) if isinstance(src, str) else None
        kind = "child Machine" if isinstance(slot, Machine) else \
            {"effect": "Effect", "agent": "Agent", "gate": "Gate"}.get(getattr(slot, "kind", ""), "actor")
        name = f'"{actor_id}" ({src})' if kind == "child Machine" else f'"{src}"'
        return (f"the {kind} {name} in state {state_path(self.machine.id, node)} failed and no onError route took "
                f"its error: {what}")

    # -- children ------------------------------------------------------------------------------------------

    def _start(self, ref: ActorRef) -> None:
        logic = ref.logic
        node = self._invoke_nodes.get(ref.id)
        state_id = node.id if node is not None else ""
        if isinstance(logic, SlotLogic):
            slot = logic.slot
            if isinstance(slot, AgentSlot):
                self._open_turn(ref, logic.name, slot, node)
            elif isinstance(slot, GateSlot):
                self._open_gate(ref, node)
            elif isinstance(slot, EffectSlot):
                self._counters["effect"] += 1
                effect_id = f"effect-{self._counters['effect']}"
                pending = PendingEffect(effect_id, ref.id, logic.name, state_id, slot.effect, _plain(dict(slot.spec)),
                                        _plain(ref.input), slot.idempotent)
                self._effects[effect_id] = pending
                self._effect_by_invoke[ref.id] = effect_id
                self._emit(pending.request())
            elif isinstance(slot, FailSlot):
                reason = (ref.input or {}).get("reason") if isinstance(ref.input, Mapping) else None
                self._end("failed", reason=str(reason or "the run failed"))
            elif isinstance(slot, Machine):
                self._subs[ref.id] = Session(slot, input=ref.input, clock=SimulatedClock(self.now),
                                             counters=self._counters)
                self._pull(ref.id)
            return
        self._revive(ref)

    def _revive(self, ref: ActorRef) -> None:
        """Run a statechart child (a promise, a callback, an inline machine) here, from its persisted snapshot
        when the run was restored."""
        child = create_actor(ref.logic, input=ref.input, snapshot=ref.persisted, clock=self.clock)
        child.subscribe(error=functools.partial(self._child_error, ref.id),
                        complete=functools.partial(self._child_done, ref.id, child))
        ref.bind(child)
        self._children[ref.id] = child
        child.start()

    def _route(self, name: str) -> tuple[Session, str, str | None]:
        """`<invoke id>/<name>` names a party, Gate or Effect of a child Machine's nested Session."""
        if "/" in name:
            prefix, rest = name.split("/", 1)
            sub = self._subs.get(prefix)
            if sub is not None:
                return sub, rest, prefix
        return self, name, None

    def _pull(self, prefix: str) -> None:
        """Take a child Machine's outputs as ours (names prefixed); its end is the invoke's done or error."""
        sub = self._subs.get(prefix)
        if sub is None:
            return
        self._forward(prefix, sub.drain())
        if sub.status == "active":
            return
        del self._subs[prefix]
        if prefix not in self._snapshot.children:
            return
        if sub.status == "done":
            self._work_ended(self._invoke_nodes.get(prefix), sub.output)
            self._deliver(done_actor_event(prefix, sub.output))
        else:
            self._work_ended(self._invoke_nodes.get(prefix))
            self._deliver(error_actor_event(prefix, {"status": sub.status, "reason": sub.reason}))

    def _forward(self, prefix: str, outputs: list[Output]) -> None:
        for out in outputs:
            if isinstance(out, RunEnded):
                continue
            changes = {name: f"{prefix}/{getattr(out, name)}" for name in ("turn", "agent", "gate", "effect", "pick")
                       if getattr(out, name, None)}
            self._emit(replace(out, **changes))

    def _child_done(self, child_id: str, child: Any) -> None:
        if child.snapshot.status == "done" and child_id in self._snapshot.children:
            self._work_ended(self._invoke_nodes.get(child_id), child.snapshot.output)
            self._deliver(done_actor_event(child_id, child.snapshot.output))

    def _child_error(self, child_id: str, err: Any) -> None:
        if child_id in self._snapshot.children:
            self._work_ended(self._invoke_nodes.get(child_id))
            self._deliver(error_actor_event(child_id, err))

    def _send_to_child(self, to: Any, event: Event) -> None:
        key = to if isinstance(to, str) else getattr(to, "id", None)
        if key in self._subs:
            self._subs[key]._deliver(event)
            self._pull(key)
            return
        ref = self._snapshot.children.get(to) if isinstance(to, str) else to
        if isinstance(ref, ActorRef) and ref.actor is not None:
            ref.actor.send(event)

    def _stop(self, ref: ActorRef) -> None:
        turn = self._turns.get(ref.id)
        if turn is not None:
            self._close_turn(turn)
        gate = self._gates.pop(ref.id, None)
        if gate is not None:
            self._emit(GateClosed(gate.id, gate.state))
        effect_id = self._effect_by_invoke.get(ref.id)
        if effect_id is not None and effect_id in self._effects:
            pending = self._effects[effect_id]
            self._finish_effect(pending)
            self._emit(EffectCancelled(effect_id, pending.slot))
        child = self._children.pop(ref.id, None)
        if child is not None and child.status_is_running():
            child._stop()
        sub = self._subs.pop(ref.id, None)
        if sub is not None:
            sub.cancel()
            self._forward(ref.id, sub.drain())

    def _finish_effect(self, pending: PendingEffect) -> None:
        self._effects.pop(pending.id, None)
        self._effect_by_invoke.pop(pending.invoke_id, None)

    def _open_turn(self, ref: ActorRef, agent: str, slot: AgentSlot, node: StateNode | None) -> None:
        data = ref.input if isinstance(ref.input, Mapping) else {}
        self._counters["turn"] += 1
        continues = bool(data.get("continue", False))
        self._flush_closing(agent)
        pending = self._notices.pop(agent, [])
        notices = tuple(pending) if continues else ()
        state_id = node.id if node is not None else ""
        turn = Turn(f"turn-{self._counters['turn']}", agent, state_id,
                    state_path(self.machine.id, node) if node is not None else "", ref.id,
                    str(data.get("prompt", "")), continues, {**slot.dials, **dict(data.get("dials") or {})}, notices)
        self._turns[ref.id] = turn
        allowed = tuple(self.allowed_picks(agent))
        turn.told = allowed
        self._emit(TurnStarted(turn.id, agent, turn.path, turn.prompt, continues, turn.dials, notices, allowed,
                               system_prompt(slot.instructions), user_message(turn.prompt, allowed, notices)))

    def _close_turn(self, turn: Turn) -> None:
        del self._turns[turn.invoke_id]
        pick = turn.outstanding
        if pick is not None:
            if pick is self._current_pick or turn.id in self._routing:
                self._closing[turn.agent] = turn
            else:
                turn.outstanding = None
                self._emit(PickStopped(turn.id, pick.id, pick.event, DID_NOT_FINISH))
        self._emit(TurnEnded(turn.id, turn.agent, turn.path))

    def _open_gate(self, ref: ActorRef, node: StateNode | None) -> None:
        seat = self.machine.seat_of(node.id) if node is not None else None
        data = ref.input if isinstance(ref.input, Mapping) else {}
        meta = dict(data.get("meta") or {})
        gate = Gate(ref.id, node.id if node is not None else "", state_path(self.machine.id, node) if node else "",
                    seat.events if seat is not None else (), _plain(meta))
        self._gates[ref.id] = gate
        self._emit(GateOpened(gate.id, gate.path, gate.accepts, gate.meta))

    def _end(self, status: str, output: Any = None, reason: str | None = None) -> None:
        """The run ends: every Turn, Gate, Effect and child Machine still open is closed, then RunEnded."""
        if self.status != "active":
            return
        self.status, self.output, self.reason = status, _plain(output), reason
        for turn in list(self._turns.values()):
            self._close_turn(turn)
        for gate in list(self._gates.values()):
            del self._gates[gate.id]
            self._emit(GateClosed(gate.id, gate.state))
        for pending in list(self._effects.values()):
            self._finish_effect(pending)
            self._emit(EffectCancelled(pending.id, pending.slot))
        for prefix, sub in list(self._subs.items()):
            del self._subs[prefix]
            sub.cancel()
            self._forward(prefix, sub.drain())
        self._emit(RunEnded(status, self.output, reason))


def _check_outputs(session: Session, index: int, recorded: Mapping[str, Any]) -> None:
    expected = recorded.get("out")
    got = session.journal[index].get("out") if index < len(session.journal) else None
    if expected is not None and got != expected:
        raise SessionError(f"journal entry {index} ({recorded.get('kind')}) produced different outputs on replay: "
                           "the Machine or the run diverged here")


def _turn_json(turn: Turn) -> dict[str, Any]:
    data = {f.name: getattr(turn, f.name) for f in fields(Turn)}
    data["outstanding"] = None if turn.outstanding is None else vars(turn.outstanding)
    data["notices"], data["told"] = list(turn.notices), list(turn.told)
    return _plain(data)


def _turn_from(data: Mapping[str, Any]) -> Turn:
    turn = Turn(**{k: v for k, v in data.items() if k != "outstanding"})
    turn.notices, turn.told = tuple(turn.notices), tuple(turn.told)
    turn.outstanding = Pick(**data["outstanding"]) if data.get("outstanding") else None
    return turn


def _invoke_src(node: StateNode | None, invoke_id: str) -> Any:
    if node is None:
        return None
    return next((inv.src for inv in node.invoke if inv.id == invoke_id), None)


def _plain(value: Any) -> Any:
    """A JSON-ready copy (pydantic models dumped), so journals and outputs are data."""
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, BaseException):
        return {"name": type(value).__name__, "message": str(value)}
    return value

