"""`Session`: the deterministic core of one run. No I/O, no model calls, no sleeping.

Everything a party does goes in as an input (a pick, a Gate's event, an Effect's result, time passing, a fault,
a cancel); everything the run asks for comes out of `drain()` as data. Each accepted input is one journal entry;
feeding the journal to a new Session (`Session.replay`) rebuilds the same run.

The Session's jobs each have a module: its parties, picks, answers and notices (answers.py), what runs below it
(nest.py: child Machines, statechart children, Effects), reading the live Machine (probe.py: Allowed picks,
Rest), its records and their JSON (records.py) and its words (status.py). This class takes the inputs, runs each
event to completion through its mailbox, performs what the pure transition asked for, and persists.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from engine.core.journal.entries import (
    Advance,
    Cancel,
    EffectDone,
    EffectFailed,
    Entry,
    Fault,
    GateAnswer,
    Pick,
    Start,
)
from engine.core.outputs import Delivery, DeliveryOutcome, Output, PickOutcome, PickResult, RunEnded, RunState
from engine.core.routes import Answer
from engine.core.session.admission import Admitted, admit_gate_event, admit_pick
from engine.core.session.answers import Parties
from engine.core.session.errors import SessionError
from engine.core.session.nest import Nest
from engine.core.session.probe import targets_self
from engine.core.session.records import Outstanding, Turn, plain
from engine.core.session.replaying import apply_entry, replay_journal
from engine.core.session.status import RunReading, error_reason, where
from engine.core.slots import AgentSlot, EffectSlot, FailSlot, GateSlot
from engine.core.statechart.actions.base import ExecutableAction
from engine.core.statechart.clock import SimulatedClock
from engine.core.statechart.events import Event, done_actor_event, error_actor_event
from engine.core.statechart.mailbox import Mailbox
from engine.core.statechart.nodes import StateNode
from engine.core.statechart.refs import ActorRef
from engine.core.statechart.snapshot import Snapshot
from engine.core.words import exception_text
from engine.core.workflow import Machine, SlotLogic

__all__ = ["Session"]


def _journaled(method: Callable[..., Any]) -> Callable[..., Any]:
    """An input method. Its journal entry records a digest of the outputs it produced, so a replay can name the
    first entry whose outputs differ. `at=` (the host's clock) lets time pass first: timers that come due by then
    fire as an `advance` step of its own; otherwise the time moves, as a journaled `advance`, only if the input is
    accepted, so a refused input changes nothing, not even the time."""

    @functools.wraps(method)
    def wrapper(self: Session, *args: Any, at: float | None = None, **kwargs: Any) -> Any:
        if at is not None and at > self.now and self.status == RunState.ACTIVE:
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
            self.journal[index] = self.journal[index].with_out(_digest(self._emitted[emitted:]))
        if not self._depth:
            del self._emitted[:]
        return result

    return wrapper


def _digest(outputs: list[Output]) -> str:
    if not outputs:
        return _NOTHING
    text = json.dumps([o.to_json() for o in outputs], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


#: The digest of no outputs (every clock advance's): the same every time.
_NOTHING = hashlib.sha256(b"[]").hexdigest()[:16]


class Session(RunReading):
    """One run of a Machine, driven only by its inputs."""

    def __init__(
        self,
        machine: Machine,
        input: Any = None,
        clock: SimulatedClock | None = None,
        *,
        counters: dict[str, int] | None = None,
    ) -> None:
        self._setup(machine, clock, counters)
        door = machine.validate_door(input)
        self.journal.append(Start(input=plain(input), at=self.now))
        snapshot, actions = self.statechart.initial_transition(door)
        self.statechart_snapshot: Snapshot = snapshot
        try:
            self._perform(snapshot, actions)
        except Exception as err:
            self._end(
                RunState.FAILED, reason=f"the Machine raised while starting in {self._where()}: {exception_text(err)}"
            )
        self.parties.settle()
        self._notice_end()
        self.journal[0] = self.journal[0].with_out(_digest(self._emitted))
        del self._emitted[:]

    def _setup(self, machine: Machine, clock: SimulatedClock | None, counters: dict[str, int] | None) -> None:
        """The fields every Session has, started or restored. `counters` is shared by a run's nested Sessions, so
        Turn, pick and Effect ids are unique in the whole run."""
        self.machine = machine
        self.statechart = machine.statechart
        self.clock = clock or SimulatedClock()
        self.now = self.clock.now()
        self.journal: list[Entry] = []
        self.status = RunState.ACTIVE
        self.output: Any = None
        self.reason: str | None = None
        self.counters = counters if counters is not None else {"turn": 0, "pick": 0, "effect": 0}
        self.parties = Parties(self)
        self.nest = Nest(self)
        self.invoke_nodes: dict[str, StateNode] = {inv.id: node for node in machine.nodes for inv in node.invoke}
        self._outputs: list[Output] = []
        self._emitted: list[Output] = []
        self._mailbox: Mailbox[Event] = Mailbox(self._process)
        self._last_event: Event | None = None
        self._lag: float | None = None
        self._input_at: int | None = None
        self._depth = 0

    # -- persisting ----------------------------------------------------------------------------------------

    @classmethod
    def restore(cls, machine: Machine, data: Mapping[str, Any], *, counters: dict[str, int] | None = None) -> Session:
        """The Session `to_json()` was taken from, ready for its next input. Refuses (SessionError) a state
        written under another shape of the Machine: the run has drifted, and the reason names both digests."""
        if data.get("machine") != machine.id or data.get("digest") != machine.digest:
            raise SessionError(
                f'the run was written under machine "{data.get("machine")}" with shape {str(data.get("digest"))[:12]}, '
                f'but the workflow now has machine "{machine.id}" with shape {machine.digest[:12]}: the run has '
                "drifted"
            )
        session = cls.__new__(cls)
        shared = counters if counters is not None else {k: int(v) for k, v in data["counters"].items()}
        session._setup(machine, SimulatedClock(data["now"]), shared)
        session.now = data["now"]
        session.status, session.output, session.reason = data["status"], data.get("output"), data.get("reason")
        session.statechart_snapshot = machine.statechart.resolve_snapshot(data["statechart"])
        session.parties.restore(data)
        session.nest.restore(data, shared)
        for ref in session.statechart_snapshot.children.values():
            if not isinstance(ref.logic, SlotLogic):
                session.nest.revive(ref)
        return session

    # -- inputs --------------------------------------------------------------------------------------------

    @_journaled
    def pick(self, agent: str, event: str, params: Mapping[str, Any] | None = None) -> PickResult:
        """An Agent's tool call. Refused (nothing changes) unless it is on the Menu, valid, and nothing is
        outstanding; "unmoved" if the Machine would not take it now."""
        if self.status != RunState.ACTIVE:
            return PickResult(PickOutcome.REFUSED, error=f"the run has ended ({self.status}); nothing was delivered")
        sub, local, prefix = self.nest.route(agent)
        if prefix is not None:
            self._catch_up()
            result = sub.pick(local, event, params)
            if result.outcome != "refused":
                self._record(Pick(agent=agent, event=event, params=plain(params), outcome=result.outcome))
            self.nest.pull(prefix)
            return result
        turn = self.turn_of(agent)
        if turn is None:
            return PickResult(PickOutcome.REFUSED, error=f'agent "{agent}" has no open Turn; nothing was delivered')
        result = self._pick(turn, agent, event, params)
        if result.outcome != "refused" and self.parties.turns.get(turn.invoke_id) is turn:
            turn.told = tuple(result.allowed) if result.outcome != "outstanding" else ()
        return result

    def _pick(self, turn: Turn, agent: str, event: str, params: Mapping[str, Any] | None) -> PickResult:
        admitted = admit_pick(self, turn, agent, event, params)
        if isinstance(admitted, PickResult):
            return admitted
        validated, delivered, allowed, taken = admitted.validated, admitted.delivered, admitted.allowed, admitted.taken
        recorded = self._record(Pick(agent=agent, event=event, params=validated, outcome="unmoved"))
        if event not in allowed:
            return PickResult(
                PickOutcome.UNMOVED,
                allowed=tuple(allowed),
                error=f'"{event}" is on the Menu but not allowed now; nothing moved',
            )
        if not taken:
            return PickResult(
                PickOutcome.UNMOVED,
                allowed=tuple(allowed),
                error=f'the Machine did not take "{event}" with this input (a guard said no); nothing moved',
            )
        self.counters["pick"] += 1
        pick = Outstanding(f"pick-{self.counters['pick']}", event)
        self.parties.begin_pick(turn, pick, agent)
        self.parties.work_ended(self.invoke_nodes.get(turn.invoke_id), validated)
        try:
            self.deliver(delivered)
        finally:
            self.parties.end_pick()
        if self.parties.turns.get(turn.invoke_id) is not turn:
            result = PickResult(PickOutcome.ENDED, answer=turn.answer, pick=pick.id)
        elif turn.outstanding is None:
            result = PickResult(
                PickOutcome.ANSWERED, answer=turn.answer, allowed=tuple(self.allowed_picks(agent)), pick=pick.id
            )
        else:
            result = PickResult(PickOutcome.OUTSTANDING, pick=pick.id)
        self.journal[recorded] = dataclasses.replace(self.journal[recorded], outcome=result.outcome)  # type: ignore[call-arg]
        return result

    @_journaled
    def send_gate(self, gate: str, event: str, params: Mapping[str, Any] | None = None) -> Delivery:
        """An event from a Gate's caller (a human in the Console, a webhook, the CLI)."""
        if self.status != RunState.ACTIVE:
            return Delivery(DeliveryOutcome.REFUSED, error=f"the run has ended ({self.status})", code="ended")
        sub, local, prefix = self.nest.route(gate)
        if prefix is not None:
            self._catch_up()
            result = sub.send_gate(local, event, params)
            if result.outcome == "delivered":
                self._record(GateAnswer(gate=gate, event=event, params=plain(params)))
            self.nest.pull(prefix)
            return result
        open_gate = self.parties.gates.get(gate)
        admitted = admit_gate_event(self, open_gate, gate, event, params)
        if not isinstance(admitted, Admitted):
            return admitted
        assert open_gate is not None
        validated, delivered = admitted.validated, admitted.delivered
        self._record(GateAnswer(gate=gate, event=event, params=validated))
        self.parties.work_ended(self.invoke_nodes.get(gate), validated)
        self.deliver(delivered)
        return Delivery(DeliveryOutcome.DELIVERED, accepts=open_gate.accepts)

    @_journaled
    def effect_done(self, effect_id: str, output: Any = None) -> Delivery:
        """An Effect finished: its output is the invoke's done event, and a reply to the Turns above it."""
        return self.effect_result(effect_id, "effect_done", output)

    @_journaled
    def effect_failed(self, effect_id: str, error: Any) -> Delivery:
        """An Effect failed: the invoke's error event (not a reply; `answer` on `onError` tells the Agent)."""
        return self.effect_result(effect_id, "effect_failed", error)

    def effect_result(self, effect_id: str, kind: str, value: Any) -> Delivery:
        """An Effect's result, journaled by `effect_done` / `effect_failed` (or by the parent of a child Machine)."""
        sub, local, prefix = self.nest.route(effect_id)
        if prefix is not None and self.status == RunState.ACTIVE:
            self._catch_up()
            result = sub.effect_result(local, kind, value)
            if result.outcome == "delivered":
                self._record(_effect_entry(kind, effect_id, plain(value)))
            self.nest.pull(prefix)
            return result
        pending = self.nest.effects.get(effect_id)
        if pending is None or self.status != RunState.ACTIVE:
            return Delivery(
                DeliveryOutcome.REFUSED,
                code="no-effect",
                error=f'no running Effect "{effect_id}" (running: {sorted(self.nest.effects)})',
            )
        self._record(_effect_entry(kind, effect_id, plain(value)))
        self.nest.finish_effect(pending)
        node = self.invoke_nodes.get(pending.invoke_id)
        if kind == "effect_done":
            self.parties.work_ended(node, value)
            self.deliver(done_actor_event(pending.invoke_id, value))
        else:
            self.parties.work_ended(node)
            self.deliver(error_actor_event(pending.invoke_id, value))
        return Delivery(DeliveryOutcome.DELIVERED)

    @_journaled
    def fault(self, agent: str, reason: str) -> None:
        """A Turn that cannot go on: `agent.fault` goes into the Machine with the reason."""
        if self.status != RunState.ACTIVE:
            return
        self._record(Fault(agent=agent, reason=reason))
        self.fault_inside(agent, reason)

    def fault_inside(self, agent: str, reason: str) -> None:
        """`agent.fault` delivered, journaled by `fault` (or by the parent of a child Machine)."""
        sub, local, prefix = self.nest.route(agent)
        if prefix is not None:
            sub.fault_inside(local, reason)
            self.nest.pull(prefix)
            return
        turn = self.turn_of(agent)
        self.deliver(Event(type="agent.fault", agent=agent, reason=reason))
        if turn is not None and self.status == RunState.ACTIVE and self.parties.turns.get(turn.invoke_id) is turn:
            self._end(
                "failed",
                reason=f'the Turn of Agent "{agent}" could not go on ({reason}), and the Machine has '
                f"no route for agent.fault that leaves {turn.path}",
            )

    @_journaled
    def advance(self, ms: float) -> None:
        """Let `ms` pass: every timer that comes due fires, in order."""
        if ms < 0:
            raise ValueError(f"advance takes a non-negative number of ms; got {ms}")
        self.journal.append(Advance(ms=ms, at=self.now))
        target = self.now + ms
        while self.status == RunState.ACTIVE:
            due = [
                (t.started_at + t.delay, t.id)
                for t in self.statechart_snapshot.timers.values()
                if t.started_at is not None and t.started_at + t.delay <= target
            ]
            if not due:
                break
            at, key = min(due)
            timer = self.statechart_snapshot.timers[key]
            self.now = max(self.now, at)
            self.statechart_snapshot = self.statechart_snapshot.without_timer(key)
            if self._to_self(timer.target):
                self.deliver(timer.event)
            else:
                self.nest.send_to(timer.target, timer.event)
        self.now = target
        self.nest.time_reaches(target)

    def advance_to(self, target: float) -> None:
        """Time reaches `target` (a child Machine's clock following its parent's)."""
        if target > self.now and self.status == RunState.ACTIVE:
            self.advance(target - self.now)

    @_journaled
    def cancel(self) -> None:
        if self.status != RunState.ACTIVE:
            return
        self._record(Cancel())
        self._end(RunState.CANCELLED)

    # -- replay --------------------------------------------------------------------------------------------

    @classmethod
    def replay(cls, machine: Machine, journal: Sequence[Mapping[str, Any] | Entry]) -> Session:
        """A new Session fed the same inputs; raises SessionError naming the first entry that does not apply."""
        return replay_journal(cls, machine, journal)

    def apply(self, entry: Mapping[str, Any] | Entry, index: int | None = None) -> None:
        """Feed one recorded journal entry again (replay, or a restored run's journal tail); see replaying.py."""
        apply_entry(self, entry, index)

    # -- the core loop -------------------------------------------------------------------------------------

    def deliver(self, event: Event) -> None:
        """Run one event to completion. An event raised while one is being applied (a child that finished as it
        started) waits its turn in the mailbox, as in an actor's."""
        self._mailbox.push(event)
        if self._mailbox.busy:
            return
        try:
            self._mailbox.run(lambda: self.status == RunState.ACTIVE)
        finally:
            self._mailbox.clear()

    def _process(self, event: Event) -> None:
        self._last_event = event
        try:
            snapshot, actions = self.statechart.transition(self.statechart_snapshot, event)
            self._perform(snapshot, actions)
        except Exception as err:
            self._end(
                "failed",
                reason=f'the Machine raised while taking "{event.type}" in {self._where()}: {exception_text(err)}',
            )
        self.parties.step_done()
        self.parties.settle()
        self._notice_end()

    def _catch_up(self) -> None:
        """Time the host said has passed (`at=`), now that an input is accepted: a journaled `advance` that fires
        nothing (the wrapper made sure no timer is due by then)."""
        if self._lag is None or self._lag <= self.now:
            return
        target, self._lag = self._lag, None
        self.journal.append(Advance(ms=target - self.now, at=self.now, out=_digest([])))
        self.now = target
        self.nest.time_reaches(target)

    def _record(self, entry: Entry) -> int:
        """Journal an accepted input, after the time it came at; its index in the journal."""
        self._catch_up()
        self.journal.append(dataclasses.replace(entry, at=self.now))  # type: ignore[call-arg]
        self._input_at = len(self.journal) - 1
        return self._input_at

    def _perform(self, snapshot: Snapshot, actions: list[ExecutableAction]) -> None:
        """Perform what the pure transition asked for, in order (the Session is the statechart's executor here,
        as a running Actor is elsewhere)."""
        self.statechart_snapshot = snapshot
        for action in actions:
            if isinstance(action.exec, Answer):
                self.parties.route_answer(action)
            elif action.exec is not None:
                action.run()
            elif action.type == "xstate.spawnChild":
                self._start(action.params["actorRef"])
            elif action.type == "xstate.stopChild":
                if action.params["actorRef"] is not None:
                    self._stop(action.params["actorRef"])
            elif action.type == "xstate.sendTo" and action.params["delay"] is None:
                self.nest.send_to(action.params["to"], action.params["event"])
        for timer in self.statechart_snapshot.timers.values():
            if timer.started_at is None:
                timer.started_at = self.now

    def _notice_end(self) -> None:
        """The statechart reached its end: the run ends with it."""
        if self.status == RunState.ACTIVE and self.statechart_snapshot.status == RunState.DONE:
            self._end(RunState.DONE, output=self.statechart_snapshot.output)
        elif self.status == RunState.ACTIVE and self.statechart_snapshot.status == "error":
            self._end(
                "failed",
                reason=error_reason(self.machine, self.invoke_nodes, self._last_event, self.statechart_snapshot.error),
            )

    def _to_self(self, target: Any) -> bool:
        return targets_self(self.statechart, self.statechart_snapshot, target)

    def _where(self) -> str:
        return where(self.machine, self.statechart_snapshot)

    # -- children ------------------------------------------------------------------------------------------

    def _start(self, ref: ActorRef) -> None:
        logic = ref.logic
        if not isinstance(logic, SlotLogic):
            self.nest.revive(ref)
            return
        node = self.invoke_nodes.get(ref.id)
        slot = logic.slot
        if isinstance(slot, AgentSlot):
            self.parties.open_turn(ref, logic.name, slot, node)
        elif isinstance(slot, GateSlot):
            self.parties.open_gate(ref, node)
        elif isinstance(slot, EffectSlot):
            self.nest.request_effect(ref, logic.name, slot, node.id if node is not None else "")
        elif isinstance(slot, FailSlot):
            reason = (ref.input or {}).get("reason") if isinstance(ref.input, Mapping) else None
            self._end(RunState.FAILED, reason=str(reason or "the run failed"))
        elif isinstance(slot, Machine):
            self.nest.start_machine(ref, slot)

    def _stop(self, ref: ActorRef) -> None:
        turn = self.parties.turns.get(ref.id)
        if turn is not None:
            self.parties.close_turn(turn)
        self.parties.close_gate(ref.id)
        self.nest.stop(ref)

    def _end(self, status: str, output: Any = None, reason: str | None = None) -> None:
        """The run ends: every Turn, Gate, Effect and child Machine still open is closed, then RunEnded."""
        if self.status != RunState.ACTIVE:
            return
        self.status, self.output, self.reason = status, plain(output), reason
        self.parties.close_all()
        self.nest.end()
        self.emit(RunEnded(status, self.output, reason))


def _effect_entry(kind: str, effect_id: str, value: Any) -> Entry:
    return (
        EffectDone(effect=effect_id, output=value)
        if kind == "effect_done"
        else EffectFailed(effect=effect_id, error=value)
    )
