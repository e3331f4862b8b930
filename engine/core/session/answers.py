"""The Session's book of parties: open Turns and Gates, each Turn's outstanding pick with its Chain and answer, and
the notices kept for later Turns (SPEC.md 4, "Allowed picks and delivery").

The rules it keeps:
- a reply (a child's output, a Gate's event, a nested Agent's pick below the Agent's state) joins the Chain of
  every Turn above it that waits on a pick (`work_ended`);
- an `answer(fn)` answers the pick of the Agent its placement names; when its route left that Agent's state, the
  answer is kept as a notice (`route_answer`);
- a pick is answered when its Agent's state comes to Rest, by the route's `answer` or else the last reply
  (`settle`); when something else leaves the state first, the pick did not finish.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.core.assignment import ASSIGN
from engine.core.assignment import resolve as resolve_assign
from engine.core.outputs import (
    AllowedChanged,
    GateClosed,
    GateOpened,
    NoticeKept,
    PickAnswered,
    PickStopped,
    TurnEnded,
    TurnStarted,
)
from engine.core.prompts import allowed_changed_message, answer_message, system_prompt, user_message
from engine.core.routes import Answer
from engine.core.seats import state_path
from engine.core.session.ports import SessionPort
from engine.core.session.records import Gate, Outstanding, Turn, plain
from engine.core.slots import AgentSlot
from engine.core.statechart.actions.base import ExecutableAction
from engine.core.statechart.callables import call_with
from engine.core.statechart.nodes import StateNode
from engine.core.statechart.refs import ActorRef

__all__ = ["DID_NOT_FINISH", "Parties"]

DID_NOT_FINISH = "The pick did not finish: the state that asked for it was left before its work was done."


class Parties:
    """The open Turns and Gates of one Session, with their picks, answers and notices."""

    def __init__(self, session: SessionPort) -> None:
        self.session = session
        self.turns: dict[str, Turn] = {}
        self.gates: dict[str, Gate] = {}
        self.notices: dict[str, list[Any]] = {}
        #: The pick being delivered now, and its Agent.
        self.current: Outstanding | None = None
        self.picking: str | None = None
        #: Turns whose route closed them while their pick's work ended: their answer becomes a notice.
        self.closing: dict[str, Turn] = {}
        #: Turns whose pick's route runs in this step (its state being left is not "did not finish").
        self.routing: set[str] = set()

    # -- reading ----------------------------------------------------------------------------------------------

    def turn_of(self, agent: str) -> Turn | None:
        for turn in self.turns.values():
            if turn.agent == agent:
                return turn
        return None

    def state_of(self, turn: Turn) -> StateNode:
        return self.session.statechart.id_map[turn.state]

    # -- Turns and Gates open and close -------------------------------------------------------------------

    def open_turn(self, ref: ActorRef, agent: str, slot: AgentSlot, node: StateNode | None) -> None:
        session = self.session
        data = ref.input if isinstance(ref.input, Mapping) else {}
        session.counters["turn"] += 1
        continues = bool(data.get("continue", False))
        self.flush_closing(agent)
        pending = self.notices.pop(agent, [])
        notices = tuple(pending) if continues else ()
        state_id = node.id if node is not None else ""
        turn = Turn(
            f"turn-{session.counters['turn']}",
            agent,
            state_id,
            state_path(session.machine.id, node) if node is not None else "",
            ref.id,
            str(data.get("prompt", "")),
            continues,
            {**slot.dials, **dict(data.get("dials") or {})},
            notices,
        )
        self.turns[ref.id] = turn
        allowed = tuple(session.allowed_picks(agent))
        turn.told = allowed
        session.emit(
            TurnStarted(
                turn.id,
                agent,
                turn.path,
                turn.prompt,
                continues,
                turn.dials,
                notices,
                allowed,
                system_prompt(slot.instructions),
                user_message(turn.prompt, allowed, notices),
            )
        )

    def close_turn(self, turn: Turn) -> None:
        del self.turns[turn.invoke_id]
        pick = turn.outstanding
        if pick is not None:
            if pick is self.current or turn.id in self.routing:
                self.closing[turn.agent] = turn
            else:
                turn.outstanding = None
                self.session.emit(PickStopped(turn.id, pick.id, pick.event, DID_NOT_FINISH))
        self.session.emit(TurnEnded(turn.id, turn.agent, turn.path))

    def open_gate(self, ref: ActorRef, node: StateNode | None) -> None:
        session = self.session
        seat = session.machine.seat_of(node.id) if node is not None else None
        data = ref.input if isinstance(ref.input, Mapping) else {}
        meta = dict(data.get("meta") or {})
        assign, assign_error = resolve_assign(data, session.statechart_snapshot.context)
        if assign is not None and data.get(ASSIGN) is not None and not isinstance(data.get(ASSIGN), list):
            ref.input = {**data, ASSIGN: list(assign)}  # a callable's answer, so the snapshot holds data
        gate = Gate(
            ref.id,
            node.id if node is not None else "",
            state_path(session.machine.id, node) if node else "",
            seat.events if seat is not None else (),
            plain(meta),
            assign,
            assign_error,
        )
        self.gates[ref.id] = gate
        session.emit(GateOpened(gate.id, gate.path, gate.accepts, gate.meta))

    def close_gate(self, gate_id: str) -> None:
        gate = self.gates.pop(gate_id, None)
        if gate is not None:
            self.session.emit(GateClosed(gate.id, gate.state))

    def close_all(self) -> None:
        """The run ended: every Turn and Gate still open closes."""
        for turn in list(self.turns.values()):
            self.close_turn(turn)
        for gate_id in list(self.gates):
            self.close_gate(gate_id)

    # -- picks, replies and answers ----------------------------------------------------------------------

    def begin_pick(self, turn: Turn, pick: Outstanding, agent: str) -> None:
        turn.outstanding, turn.chain, turn.answer, turn.answered = pick, [], None, False
        self.current, self.picking = pick, agent

    def end_pick(self) -> None:
        self.current, self.picking = None, None

    def work_ended(self, node: StateNode | None, *reply: Any) -> None:
        """The work that `node` ran ended: its output, a Gate's event or a nested Agent's pick (a `reply`), or its
        error (no reply). Every Turn above `node` that waits on a pick runs that pick's route now, so its state
        being left is not "did not finish"; a reply joins their Chains."""
        if node is None:
            return
        for turn in self.turns.values():
            if turn.outstanding is not None and self.state_of(turn) in node.ancestor_set:
                if reply:
                    turn.chain.append(reply[0])
                self.routing.add(turn.id)

    def route_answer(self, action: ExecutableAction) -> None:
        """An `answer(fn)` on the route just taken: the answer of the pick its placement names, or a notice."""
        answer: Answer = action.exec  # type: ignore[assignment]
        agent = answer.agent or ""
        target = self._answer_target(agent)
        chain = list(target.chain) if target is not None else []
        value = call_with(answer.fn, context=action.info.get("context"), event=action.info.get("event"), chain=chain)
        if target is None:
            self.notices.setdefault(agent, []).append(value)
            self.session.emit(NoticeKept(agent, "", value))
            return
        target.answer, target.answered = value, True
        if self.turns.get(target.invoke_id) is not target:
            self._keep_notice(target, value)

    def _answer_target(self, agent: str) -> Turn | None:
        """The Turn whose pick an `answer` bound to `agent` answers: placement decides (SPEC.md 4). That Agent's
        waiting pick; else its Turn that this route just closed (the answer becomes its notice); else none."""
        turn = self.session.turn_of(agent)
        if turn is not None and turn.outstanding is not None:
            return turn
        return self.closing.get(agent)

    def flush_closing(self, agent: str) -> None:
        """A Turn its own route closed: its answer (the route's `answer`, else the last reply) is a notice."""
        turn = self.closing.pop(agent, None)
        if turn is None or turn.answered:
            return
        turn.answered = True
        if turn.chain:
            turn.answer = turn.chain[-1]
            self._keep_notice(turn, turn.answer)

    def step_done(self) -> None:
        """After each event: the routes of this step have run."""
        for agent in list(self.closing):
            self.flush_closing(agent)
        self.routing.clear()

    def _keep_notice(self, turn: Turn, value: Any) -> None:
        self.notices.setdefault(turn.agent, []).append(value)
        self.session.emit(NoticeKept(turn.agent, turn.id, value))

    def settle(self) -> None:
        """After every step: answer outstanding picks whose state came to Rest; tell every other Turn whose
        Allowed picks changed."""
        session = self.session
        for turn in list(self.turns.values()):
            if turn.outstanding is not None and session.at_rest(turn):
                pick = turn.outstanding
                turn.outstanding = None
                if not turn.answered:
                    turn.answer = turn.chain[-1] if turn.chain else None
                turn.answered = True
                if pick is not self.current:
                    allowed = tuple(session.allowed_picks(turn.agent))
                    turn.told = allowed
                    session.emit(
                        PickAnswered(
                            turn.id, pick.id, pick.event, turn.answer, allowed, answer_message(turn.answer, allowed)
                        )
                    )
        for turn in list(self.turns.values()):
            if turn.outstanding is not None or (self.current is not None and turn.agent == self.picking):
                continue
            allowed = tuple(session.allowed_picks(turn.agent))
            if allowed != turn.told:
                turn.told = allowed
                session.emit(AllowedChanged(turn.id, turn.agent, allowed, allowed_changed_message(allowed)))

    # -- persisting ----------------------------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        return {
            "turns": [t.persisted() for t in self.turns.values()],
            "gates": [g.to_json() for g in self.gates.values()],
            "notices": {k: list(v) for k, v in self.notices.items() if v},
        }

    def restore(self, data: Mapping[str, Any]) -> None:
        for turn in data.get("turns", ()):
            restored = Turn.restored(turn)
            self.turns[restored.invoke_id] = restored
        for gate in data.get("gates", ()):
            self.gates[gate["id"]] = Gate.restored(gate)
        self.notices = {k: list(v) for k, v in data.get("notices", {}).items()}
