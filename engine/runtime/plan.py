"""The pure half of a step: its input applied to the Session, and what the step writes and does after its commit.
The driver (engine/runtime/driver.py) runs the other half: the inbox, the commit, the tasks.

`apply_input` hands one input of the run's inbox to the Session; `plan_outputs` turns the Session's outputs into
records to commit beside the step's journal entries (`store.Op`s) and, as data, what to do once they are committed
(`Todo`): start, stop or wake a Turn loop, start or cancel an Effect, hand a seat back. The driver commits the ops
in one transaction and only then carries the todos out, so nothing is started or told for a step that did not
commit (journal first, then tell). `run_fields` and `indexed` are the step's Run row and its inbox and search
records.

Nothing here awaits, reads the clock or touches the database. What it keeps up to date beside the Session is the
driver's memory of the run (`Books`: the open Turns with their loops, the conversations, who holds the seats),
which nothing journals: a resume rebuilds it from the records these ops wrote.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from engine.core.journal.entries import Cancel, EffectStarted, Entry, GateAnswer
from engine.core.outputs import (
    AllowedChanged,
    Delivery,
    DeliveryOutcome,
    EffectCancelled,
    EffectRequested,
    Output,
    PickAnswered,
    PickOutcome,
    PickResult,
    PickStopped,
    TurnEnded,
    TurnStarted,
)
from engine.core.prompts import WORKSPACE_BRIEFING
from engine.core.session import PendingEffect, Session
from engine.models import EffectRecord, TurnRecord
from engine.runtime import claims, store
from engine.runtime.claims import Held
from engine.runtime.conversation import Conversation
from engine.runtime.errors import SeatError
from engine.runtime.index import Indexed
from engine.runtime.players import Player, player_for
from engine.runtime.view import as_json

__all__ = [
    "Plan",
    "Books",
    "OpenTurn",
    "Loop",
    "NewLoop",
    "Todo",
    "StartLoop",
    "StopLoop",
    "WakeLoop",
    "StartEffect",
    "CancelEffect",
    "GiveBack",
    "apply_input",
    "plan_outputs",
    "run_fields",
    "indexed",
    "ended",
    "UNANSWERED",
]

#: The tool result of a call whose Turn ended before the call was answered, read when the conversation continues.
UNANSWERED = (
    "No answer: the Turn that made this call ended first. Anything kept for you from it comes as a "
    "notice with the next prompt."
)


class Loop(Protocol):
    """What a plan reads and schedules of an open Turn's loop (engine/runtime/turns.py)."""

    conversation: Conversation
    task: asyncio.Task[None] | None
    #: Only waiting for its outstanding pick's answer (a Gate's, say): nothing to lose if the run is parked.
    idle: bool

    def start(self) -> None: ...

    def stop(self) -> None: ...

    def wake(self) -> None: ...

    def reads_allowed_later(self) -> bool: ...


#: Makes the loop of a Turn that opens (not started yet): from its start, who plays it, its conversation and its
#: system prompt.
NewLoop = Callable[[TurnStarted, Player, Conversation, str], Loop]


# -- what follows the commit, as data ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _OnLoop:
    loop: Loop


class StartLoop(_OnLoop):
    """A Turn opened: its loop starts."""


class StopLoop(_OnLoop):
    """A Turn ended: its loop stops."""


class WakeLoop(_OnLoop):
    """The loop may be waiting on what the step committed (its outstanding pick's answer)."""


@dataclass(frozen=True)
class StartEffect:
    effect: PendingEffect


@dataclass(frozen=True)
class CancelEffect:
    effect: str


@dataclass(frozen=True)
class GiveBack:
    """A person gave an Agent's seat back: the Turn waiting on them asks the model instead."""

    agent: str


Todo = StartLoop | StopLoop | WakeLoop | StartEffect | CancelEffect | GiveBack


@dataclass
class Plan:
    """A step's records, in the order they are written, and what to do once they are committed."""

    ops: list[store.Op] = field(default_factory=list)
    todo: list[Todo] = field(default_factory=list)


# -- the driver's memory of the run ------------------------------------------------------------------------------


@dataclass
class OpenTurn:
    """One open Turn as the driver keeps it beside the Session: who plays it, its Dials, the tool call whose pick is
    outstanding, the reason it faulted (its record is closed then), and its loop."""

    agent: str
    player: Player
    dials: dict[str, Any]
    loop: Loop
    pending_call: str = ""
    faulted: str = ""


@dataclass
class Books:
    """The open Turns by id, the run's conversations by id, each Agent's latest conversation (the next Turn that
    continues reads it), and the people holding Agents' seats: agent -> (user id, username)."""

    workflow: str
    turns: dict[str, OpenTurn] = field(default_factory=dict)
    conversations: dict[str, Conversation] = field(default_factory=dict)
    latest: dict[str, str] = field(default_factory=dict)
    seats: dict[str, tuple[int, str]] = field(default_factory=dict)
    #: The claims on open Gates, by Gate id (engine/runtime/claims.py).
    claims: dict[str, Held] = field(default_factory=dict)
    #: How long a claim holds (minutes): `JR2_CLAIM_MINUTES`.
    claim_minutes: float = 15.0

    def new_conversation(self, base: str, agent: str | None = None) -> Conversation:
        """A fresh conversation; with `agent`, the one that Agent's next Turn that continues reads (a reroll)."""
        name, n = base, 1
        while name in self.conversations:
            n += 1
            name = f"{base}{n}"
        conversation = self.conversations[name] = Conversation(name)
        if agent is not None:
            self.latest[agent] = name
        return conversation

    def holder(self, agent: str) -> str | None:
        """The username of the person holding the Agent's seat, or None."""
        held = self.seats.get(agent)
        return held[1] if held is not None else None

    def players(self) -> dict[str, Player]:
        """Who plays each open Turn, by Turn id."""
        return {turn: open_turn.player for turn, open_turn in self.turns.items()}


# -- outputs ------------------------------------------------------------------------------------------------------


def plan_outputs(outputs: Iterable[Output], session: Session, books: Books, plan: Plan, new_loop: NewLoop) -> None:
    """Add what each output of a step writes and does to `plan`, in order."""
    for output in outputs:
        if isinstance(output, TurnStarted):
            _open_turn(output, session, books, plan, new_loop)
        elif isinstance(output, TurnEnded):
            ended_turn = books.turns.pop(output.turn, None)
            if ended_turn is not None:
                if not ended_turn.faulted:
                    plan.ops.append(store.TurnClosed(output.turn))
                plan.todo.append(StopLoop(ended_turn.loop))
        elif isinstance(output, (PickAnswered, PickStopped)):
            _answer_pending(
                books, output.turn, output.message if isinstance(output, PickAnswered) else output.answer, plan
            )
        elif isinstance(output, AllowedChanged):
            open_turn = books.turns.get(output.turn)
            if open_turn is not None and not open_turn.loop.reads_allowed_later():
                plan.ops.append(
                    open_turn.loop.conversation.add(
                        output.turn, "user", "allowed_changed", [{"type": "text", "text": output.message}]
                    )
                )
        elif isinstance(output, EffectRequested):
            plan.ops.append(
                store.EffectOpened(
                    output.effect,
                    output.slot,
                    output.effect_kind,
                    output.state,
                    as_json(output.spec),
                    as_json(output.input),
                    output.idempotent,
                )
            )
            pending = next((e for e in session.effects if e.id == output.effect), None)
            if pending is not None:
                plan.todo.append(StartEffect(pending))
        elif isinstance(output, EffectCancelled):
            plan.ops.append(store.EffectChanged(output.effect, EffectRecord.Status.CANCELLED))
            plan.todo.append(CancelEffect(output.effect))


def _open_turn(started: TurnStarted, session: Session, books: Books, plan: Plan, new_loop: NewLoop) -> None:
    slot = session.slot_of(started.agent)
    declared = slot.model if slot is not None else "script/unknown"
    system = started.system
    if slot is not None and slot.workspace != "none":
        system = f"{system}\n\n{WORKSPACE_BRIEFING}"
    player = player_for(books.workflow, started.agent, declared, books.holder(started.agent))
    if started.continues and started.agent in books.latest:
        conversation = books.conversations[books.latest[started.agent]]
    else:
        conversation = books.new_conversation(f"{started.agent}@{started.turn}")
    books.latest[started.agent] = conversation.id
    plan.ops.append(
        store.TurnOpened(
            started.turn,
            started.agent,
            started.state,
            player.model,
            declared,
            player.scripted,
            as_json(started.dials),
            conversation.id,
            started.prompt,
            system,
        )
    )
    unanswered = conversation.unanswered_calls()
    if unanswered:
        # Calls an earlier Turn left without a result (it ended on another call of the same reply, or a route
        # ended it while its pick was outstanding): they get one here, so the new Turn's loop does not take them
        # for its own picks, and the APIs accept the conversation.
        ended_by = next(m["turn"] for m in reversed(conversation.messages) if m["role"] == "assistant")
        plan.ops.append(
            conversation.add(
                ended_by,
                "user",
                "tool_result",
                [
                    {"type": "tool_result", "tool_use_id": call.get("id", ""), "content": UNANSWERED, "is_error": True}
                    for call in unanswered
                ],
            )
        )
    plan.ops.append(conversation.add(started.turn, "user", "prompt", [{"type": "text", "text": started.message}]))
    loop = new_loop(started, player, conversation, system)
    books.turns[started.turn] = OpenTurn(started.agent, player, dict(started.dials), loop)
    plan.todo.append(StartLoop(loop))


def _answer_pending(books: Books, turn: str, text: str, plan: Plan) -> None:
    """The outstanding pick of `turn` is answered: its tool call gets `text` as its result, and the loop wakes."""
    open_turn = books.turns.get(turn)
    if open_turn is None or not open_turn.pending_call:
        return
    call, open_turn.pending_call = open_turn.pending_call, ""
    plan.ops.append(
        open_turn.loop.conversation.add(
            turn,
            "user",
            "tool_result",
            [{"type": "tool_result", "tool_use_id": call, "content": text, "is_error": False}],
        )
    )
    plan.ops.append(store.TurnChanged(turn, pending_call=""))
    plan.todo.append(WakeLoop(open_turn.loop))


# -- inputs -------------------------------------------------------------------------------------------------------


def apply_input(
    session: Session, books: Books, kind: str, args: Mapping[str, Any], plan: Plan, now: float
) -> tuple[Any, list[Entry]]:
    """Apply one input of the run's inbox to the Session at the real time `now` (the Session journals the time
    that passed), adding what it writes to `plan`. Returns the result its sender gets and the step's journal
    entries: the Session's, then the host's own (an Effect having started)."""
    mark = len(session.journal)
    host_entries: list[Entry] = []
    result = _apply(session, books, kind, args, plan, now, host_entries)
    entries = session.journal[mark:] + host_entries
    if kind == "gate" and (args.get("by") or args.get("door")):
        entries = [
            dataclasses.replace(e, by=_text(args.get("by")), door=_text(args.get("door")))
            if isinstance(e, GateAnswer) and e.gate == args["gate"]
            else e
            for e in entries
        ]
    if kind == "cancel":
        entries = [
            dataclasses.replace(
                e, by=_text(args.get("by")), door=_text(args.get("door")), reason=_text(args.get("reason"))
            )
            if isinstance(e, Cancel)
            else e
            for e in entries
        ]
    return result, entries


def _text(value: Any) -> str | None:
    return str(value) if value else None


def _apply(
    session: Session,
    books: Books,
    kind: str,
    args: Mapping[str, Any],
    plan: Plan,
    now: float,
    host_entries: list[Entry],
) -> Any:
    if kind == "pick":
        result = session.pick(args["agent"], args["event"], args.get("params"), at=now)
        if result.outcome != "refused" and session.journal:
            open_turn = books.turns.get(args.get("turn", ""))
            session.journal[-1] = dataclasses.replace(  # type: ignore[call-arg]
                session.journal[-1],
                call=args.get("call", ""),
                turn=args.get("turn", ""),
                player=open_turn.player.model if open_turn is not None else "",
            )
        _pick_records(books, args.get("turn", ""), args.get("call", ""), result, plan)
        return result
    if kind == "gate":
        claimed = claims.refusal(books.claims, args["gate"], args.get("by"), now / 1000)
        if claimed is not None:
            return claimed
        return session.send_gate(args["gate"], args["event"], args.get("params"), at=now)
    if kind == "claim":
        delivery, entry = claims.apply_claim(
            books.claims, [gate.id for gate in session.gates], args, now / 1000, books.claim_minutes
        )
        if entry is not None:
            host_entries.append(dataclasses.replace(entry, at=session.now))
        return delivery
    if kind == "effect_done":
        plan.ops.append(
            store.EffectChanged(args["effect"], EffectRecord.Status.DONE, args.get("value"), args.get("duration_ms"))
        )
        return session.effect_done(args["effect"], args.get("value"), at=now)
    if kind == "effect_failed":
        plan.ops.append(
            store.EffectChanged(args["effect"], EffectRecord.Status.FAILED, args.get("value"), args.get("duration_ms"))
        )
        return session.effect_failed(args["effect"], args.get("value"), at=now)
    if kind == "effect_started":
        host_entries.append(
            EffectStarted(
                effect=args["effect"], slot=args.get("slot", ""), at=session.now, attempt=args.get("attempt", 1)
            )
        )
        plan.ops.append(store.EffectChanged(args["effect"], EffectRecord.Status.STARTED))
        return None
    if kind == "fault":
        _fault_turn(books, args.get("turn") or "", args["reason"], plan)
        session.fault(args["agent"], args["reason"], at=now)
        return None
    if kind == "cancel":
        session.cancel(at=now)
        return None
    if kind == "seat":
        try:
            return _take_seat(session, books, args["agent"], args.get("user"), plan)
        except SeatError as err:
            return err
    if kind == "advance":
        if now > session.now:
            session.advance(now - session.now)
        return None
    raise ValueError(f"unknown input kind {kind!r}")


def _pick_records(books: Books, turn: str, call: str, result: PickResult, plan: Plan) -> None:
    """A pick's tool call answered at once (its result), or waiting as the Turn's pending call (outstanding)."""
    open_turn = books.turns.get(turn)
    if open_turn is None or not call:
        return
    if result.outcome == "outstanding":
        open_turn.pending_call = call
        plan.ops.append(store.TurnChanged(turn, pending_call=call))
        return
    content = [
        {"type": "tool_result", "tool_use_id": call, "content": result.text(), "is_error": result.outcome == "refused"}
    ]
    plan.ops.append(open_turn.loop.conversation.add(turn, "user", "tool_result", content))


def _fault_turn(books: Books, turn: str, reason: str, plan: Plan) -> None:
    """A Turn's loop faulted: its record closes with the reason (its end, which follows, closes nothing more)."""
    open_turn = books.turns.get(turn)
    if open_turn is not None:
        open_turn.faulted = reason
        plan.ops.append(store.TurnClosed(turn, TurnRecord.Status.FAULTED, reason))


def _take_seat(session: Session, books: Books, agent: str, user: tuple[int, str] | None, plan: Plan) -> str:
    """A person takes an Agent's seat (`user`), or gives it back (None): its Turns, the open one from its next
    request on, are played by that person, or by the model again. SeatError says why not."""
    if session.slot_of(agent) is None:
        raise SeatError(f'no Agent "{agent}" in this run (Agents: {", ".join(sorted(session.machine.agents))})')
    held = books.seats.get(agent)
    if user is not None and held is not None and held[0] != user[0]:
        raise SeatError(f"{held[1]} holds the seat of {agent}; they must give it back first")
    if user is None and held is None:
        return "nobody held it"
    if user is not None:
        books.seats[agent] = (user[0], user[1])
        if held is None or held[1] != user[1]:
            plan.todo.append(GiveBack(agent))  # a request waiting for another player (a person, a client) asks again
    else:
        books.seats.pop(agent, None)
        plan.todo.append(GiveBack(agent))
    plan.ops.append(store.SeatChanged(agent, user[0] if user is not None else None))
    for turn, open_turn in books.turns.items():
        if open_turn.agent == agent:
            open_turn.player = player_for(books.workflow, agent, open_turn.player.declared, books.holder(agent))
            plan.ops.append(store.TurnChanged(turn, model=open_turn.player.model))
    return "taken" if user is not None else "given back"


def ended(session: Session, kind: str) -> PickResult | Delivery:
    """The answer to an input for a run that has ended: nothing was delivered."""
    error = f"the run has ended ({session.status}); nothing was delivered"
    if kind == "pick":
        return PickResult(PickOutcome.REFUSED, error=error)
    return Delivery(DeliveryOutcome.REFUSED, error=error, code="ended")


# -- the Run row and the inbox and search records -------------------------------------------------------------------


def run_fields(session: Session, status: str, view: dict[str, Any]) -> dict[str, Any]:
    """The Run row's fields a step writes."""
    return {"status": status, "view": view, "output": session.output, "reason": session.reason or ""}


def indexed(
    workflow: str,
    committed_view: dict[str, Any],
    fields: dict[str, Any],
    entries: list[Entry],
    ops: list[store.Op],
    door: Any = None,
) -> Indexed:
    """The step's inbox and search records: what changed since the view last committed."""
    return Indexed(
        workflow,
        committed_view,
        fields["view"],
        entries,
        [op.agent for op in ops if isinstance(op, store.TurnOpened)],
        first=not committed_view,
        door=door,
        output=fields.get("output"),
    )
