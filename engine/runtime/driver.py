"""`RunDriver`: the one asyncio task that owns a run's Session.

Every outside input (a pick from a Turn loop, a Gate answer, an Effect's result, a timer, a fault, a cancel)
reaches the run through `submit`, into its inbox, and is applied in order. A step is: bring the Session's clock
up to real time (a journaled `advance`), apply the input, then write the journal entries, the Run's new state and
every record that follows from them in one transaction; only then tell: the input's sender, the Turn loops,
the Effects, the timer, and the channel layer groups `run-<id>` and `workflow-<name>`.
"""
from __future__ import annotations

import asyncio
import dataclasses
import functools
import json
import logging
import os
import signal
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterable

from engine.runtime.errors import SeatError
from engine.core.outputs import (
    AllowedChanged, EffectCancelled, EffectRequested, Output, PickAnswered, PickResult, PickStopped, TurnEnded,
    TurnStarted,
)
from engine.core.session import PendingEffect, Session
from engine.core.text import without_nul
from engine.core.workflow import Machine

from engine.core.prompts import WORKSPACE_BRIEFING
from engine.runtime.providers import human
from engine.runtime.workspace.sandbox import Workspace, WorkspaceError

from engine.runtime import relay
from engine.runtime import store
from engine.runtime.effects import EffectOutcome, run_effect
from engine.runtime.index import Indexed
from engine.runtime.players import Player, player_for
from engine.runtime.turns import Conversation, TurnLoop
from engine.runtime.workspace.tools import effect_folder, workspace_for

if TYPE_CHECKING:
    from engine.runtime.host import Host

__all__ = ["RunDriver", "Item", "SeatError", "wall_ms", "run_status"]

log = logging.getLogger("engine.runtime")

SESSION_STATUS = {"done": "done", "failed": "failed", "cancelled": "cancelled"}

#: The tool result of a call whose Turn ended before the call was answered, read when the conversation continues.
UNANSWERED = ("No answer: the Turn that made this call ended first. Anything kept for you from it comes as a "
              "notice with the next prompt.")


def wall_ms() -> float:
    """Real time as the Session counts it: milliseconds since the epoch, whole."""
    return float(int(time.time() * 1000))


def run_status(session: Session, seated: Iterable[str] = ()) -> str:
    """running, or waiting when only a person (a Gate, or an Agent's seat a person holds) or a timer can move the
    run: no Effect runs, and every open Turn waits on an outstanding pick or on the person in its seat. Or how it
    ended."""
    if session.status != "active":
        return SESSION_STATUS[session.status]
    people = set(seated)
    if session.effects or any(turn.outstanding is None and turn.agent not in people for turn in session.turns):
        return "running"
    return "waiting"


@dataclass
class Item:
    """One input in a run's inbox, with the future its sender awaits."""

    kind: str
    args: dict[str, Any]
    future: asyncio.Future[Any]
    #: A relayed input's RunInput row, answered in the transaction of this item's step.
    input_id: int | None = None


@dataclass
class TurnMeta:
    agent: str
    player: Player
    dials: dict[str, Any]
    pending_call: str = ""
    faulted: str = ""


@dataclass
class _Plan:
    ops: list[store.Op] = field(default_factory=list)
    after: list[Callable[[], object]] = field(default_factory=list)



class RunDriver:
    """Owns one run's Session; its task applies the inbox in order (see the module docstring)."""

    def __init__(self, host: Host, run_id: str, workflow: str, machine: Machine, session: Session, *, seq: int,
                 snapshot_seq: int, resume: store.Resume | None = None,
                 seats: dict[str, tuple[int, str]] | None = None) -> None:
        self.host = host
        self.run_id = run_id
        self.workflow = workflow
        self.machine = machine
        self.session = session
        self.seq = seq
        self.snapshot_seq = snapshot_seq
        self.conversations: dict[str, Conversation] = {}
        self.turns: dict[str, TurnMeta] = {}
        self.loops: dict[str, TurnLoop] = {}
        self.effects: dict[str, asyncio.Task[None]] = {}
        self.inbox: asyncio.Queue[Item | None] = asyncio.Queue()
        self.task: asyncio.Task[None] | None = None
        self.resume = resume
        self._model_calls = resume.model_calls if resume is not None else 0
        self._timer: asyncio.TimerHandle | None = None
        self._latest: dict[str, str] = {}
        self._deferred: list[store.Op] = []
        self.visited: set[str] = set(resume.run.view.get("visited", [])) if resume is not None else set()
        #: The people playing Agents' seats: agent -> (user id, username).
        self.seats: dict[str, tuple[int, str]] = dict(resume.seats if resume is not None else seats or {})
        self.status = run_status(session, self.seats)
        #: The view last committed: the next step's search and inbox records are what changed since.
        self.committed_view: dict[str, Any] = dict(resume.run.view or {}) if resume is not None else {}
        self._relayed: set[int] = set()

    # -- what Turn loops and the host call -------------------------------------------------------------------

    def submit(self, kind: str, **args: Any) -> asyncio.Future[Any]:
        """Queue an input; the future gets its result once the step is committed."""
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        if self.session.status != "active" and kind not in ("effect_started",):
            future.set_result(_ended(self.session, kind))
            return future
        self.inbox.put_nowait(Item(kind, args, future))
        return future

    def relayed(self, input_id: int, kind: str, args: dict[str, Any]) -> None:
        """An input another process wrote for this run (relay.py): applied once, its row answered with the step it
        causes. Seen again while still in the inbox, it is ignored."""
        if input_id in self._relayed:
            return
        self._relayed.add(input_id)
        if kind == "seat" and args.get("user") is not None:
            args = {**args, "user": tuple(args["user"])}
        if kind == "offer" or self.session.status != "active":
            result = None if kind == "offer" else _ended(self.session, kind)
            if kind == "offer":
                human.offer(self.run_id, args["agent"], args["event"], args.get("params") or {})
            task = asyncio.get_running_loop().create_task(
                self.host.db(store.answer_input, input_id, relay.encode(result), self.host.owner))
            task.add_done_callback(lambda _: self._relayed.discard(input_id))
            return
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        future.add_done_callback(lambda _: self._relayed.discard(input_id))
        self.inbox.put_nowait(Item(kind, args, future, input_id))

    async def write(self, ops: list[store.Op]) -> None:
        """Records that change nothing in the Session (model calls, replies, refusals), in order with the steps;
        what was deferred goes first."""
        ops = self._take_deferred() + list(ops)
        if ops:
            updated = await self.host.db(store.write, self.run_id, ops, self.host.owner)
            self.host.notify(self.run_id, self.workflow, self.status, self.seq, updated)

    def defer(self, ops: list[store.Op]) -> None:
        """Records to write with the run's next commit, whichever that is (a step or a write), before its own."""
        self._deferred.extend(ops)

    def _take_deferred(self) -> list[store.Op]:
        ops, self._deferred = self._deferred, []
        return ops

    def dials(self, turn: str) -> dict[str, Any]:
        meta = self.turns.get(turn)
        return dict(meta.dials) if meta is not None else {}

    def next_call_seq(self) -> int:
        self._model_calls += 1
        return self._model_calls

    def workspace_of(self, agent: str) -> Workspace | None:
        """The Agent's workspace in this run (engine/runtime/workspace/sandbox.py), or None when it asks for none."""
        return workspace_for(self.run_id, agent, self.session.slot_of(agent))

    def new_conversation(self, base: str, agent: str | None = None) -> Conversation:
        """A fresh conversation; with `agent`, the one that Agent's next Turn that continues reads (a reroll)."""
        name, n = base, 1
        while name in self.conversations:
            n += 1
            name = f"{base}{n}"
        conversation = self.conversations[name] = Conversation(name)
        if agent is not None:
            self._latest[agent] = name
        return conversation

    # -- the task --------------------------------------------------------------------------------------------

    def start(self, resumed: bool = False) -> None:
        self.task = asyncio.get_running_loop().create_task(self._main(resumed), name=f"run {self.run_id}")

    async def begin(self, create: dict[str, Any], lease: tuple[str, float] | None) -> None:
        """The run's first step: its start entry, what starting produced and its first snapshot, with the Run row
        itself; then the run's task starts and its first Turns and Effects with it. Without a `lease` (a web
        process starting it) the run is only written: a worker claims it and takes it up from that first step."""
        session = self.session
        entries = list(session.journal)
        del session.journal[:]
        plan = _Plan([store.SeatChanged(agent, user_id) for agent, (user_id, _) in self.seats.items()])
        for output in session.drain():
            self._plan_output(output, plan)
        self.status = run_status(session, self.seats)
        scripted = any(meta.player.scripted for meta in self.turns.values()) or any(
            slot.model.startswith("script/") for slot in self.machine.agents.values())
        run_fields = self._run_fields(self.status)
        plan.ops.append(self._indexed(run_fields, entries, plan.ops, door=create.get("input")))
        updated = await self.host.db(store.commit, store.Step(
            self.run_id, 1, entries, run_fields, session.to_json(), plan.ops,
            create={**create, "scripted": scripted}, lease=lease))
        self.committed_view = run_fields["view"]
        self.seq = self.snapshot_seq = len(entries)
        if session.status == "active" and lease is not None:
            self.host.drivers[self.run_id] = self  # only now: the lease is in the row, so a renewal keeps it
            self.start()
            for after in plan.after:
                after()
        self.host.notify(self.run_id, self.workflow, self.status, self.seq, updated, gates=bool(
            self.committed_view.get("gates")))

    def _indexed(self, run_fields: dict[str, Any], entries: list[dict[str, Any]], ops: list[store.Op],
                 door: Any = None) -> Indexed:
        """The step's inbox and search records: what changed since the view last committed."""
        return Indexed(self.workflow, self.committed_view, run_fields["view"], entries,
                       [op.agent for op in ops if isinstance(op, store.TurnOpened)], first=not self.committed_view,
                       door=door, output=run_fields.get("output"))

    def _run_fields(self, status: str) -> dict[str, Any]:
        session = self.session
        return {"status": status, "view": self._view(), "output": session.output, "reason": session.reason or ""}

    async def stop(self) -> None:
        """Stop driving (the host is going away); the run stays as committed, to be taken up again."""
        self._cancel_timer()
        for loop in list(self.loops.values()):
            loop.stop()
            if loop.task is not None:
                loop.task.cancel()
        for task in list(self.effects.values()):
            task.cancel()
        current = asyncio.current_task()  # a step that failed reloads the run from its own task: not itself
        if self.task is not None and self.task is not current:
            self.task.cancel()
        tasks = [t for t in (self.task, *self.effects.values(), *(l.task for l in self.loops.values()))
                 if t is not None and t is not current]
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _main(self, resumed: bool) -> None:
        if resumed:
            self._take_up()
        self._schedule_timer()
        while True:
            item = await self.inbox.get()
            if item is None:
                return
            try:
                await self._step(item)
            except asyncio.CancelledError:
                if not item.future.done():
                    item.future.cancel()
                raise
            except Exception as err:  # noqa: BLE001 - the step did not commit: the run goes on from the database
                log.exception("run %s: a step failed; reloading the run from the database", self.run_id)
                if not item.future.done():
                    item.future.set_exception(err)
                await self.host.reload(self)
                return
            if self.session.status != "active":
                await self._finish()
                return

    async def _step(self, item: Item) -> None:
        session = self.session
        mark = len(session.journal)
        host_entries: list[dict[str, Any]] = []
        plan = _Plan(self._take_deferred())
        result = self._apply(item, host_entries, plan, wall_ms())
        entries = session.journal[mark:] + host_entries
        if item.kind == "pick" and isinstance(result, PickResult):
            self._pick_records(item, result, plan)
        if item.input_id is not None:
            plan.ops.append(store.InputAnswered(item.input_id, relay.encode(result), self.host.owner))
        if item.kind == "gate" and item.args.get("by"):
            for entry in entries:
                if entry.get("kind") == "gate" and entry.get("gate") == item.args["gate"]:
                    entry["by"] = str(item.args["by"])
        for output in session.drain():
            self._plan_output(output, plan)
        status = run_status(session, self.seats)
        run_fields = self._run_fields(status)
        gates_before = [g["id"] for g in self.committed_view.get("gates", ())]
        first = self.seq + 1
        last = self.seq + len(entries)
        snapshot = None
        every = max(1, self.host.snapshot_every)
        if entries and (session.status != "active" or last // every > self.snapshot_seq // every):
            snapshot = session.to_json()
        updated = None
        if entries or plan.ops:
            plan.ops.append(self._indexed(run_fields, entries, plan.ops))
            updated = await self.host.db(store.commit, store.Step(self.run_id, first, entries, run_fields, snapshot,
                                                                  plan.ops, owner=self.host.owner))
            self.committed_view = run_fields["view"]
            self.host.crash_point(entries)
        del session.journal[:]
        self.seq = last
        if snapshot is not None:
            self.snapshot_seq = last
        if not item.future.done():
            item.future.set_result(result)
        for after in plan.after:
            after()
        self.status = status
        self._schedule_timer()
        if updated is not None:
            gates_after = [g["id"] for g in run_fields["view"].get("gates", ())]
            self.host.notify(self.run_id, self.workflow, status, last, updated,
                             gates=gates_after != gates_before or any(e.get("kind") == "gate" for e in entries))

    def _apply(self, item: Item, host_entries: list[dict[str, Any]], plan: _Plan, now: float) -> Any:
        """Apply one input at the real time `now` (the Session journals the time that passed)."""
        session, args = self.session, item.args
        if item.kind == "pick":
            result = session.pick(args["agent"], args["event"], args.get("params"), at=now)
            if result.outcome != "refused" and session.journal:
                meta = self.turns.get(args.get("turn", ""))
                session.journal[-1].update(call=args.get("call", ""), turn=args.get("turn", ""),
                                           player=meta.player.model if meta is not None else "")
            return result
        if item.kind == "gate":
            return session.send_gate(args["gate"], args["event"], args.get("params"), at=now)
        if item.kind == "effect_done":
            plan.ops.append(store.EffectChanged(args["effect"], "done", args.get("value"),
                                                args.get("duration_ms")))
            return session.effect_done(args["effect"], args.get("value"), at=now)
        if item.kind == "effect_failed":
            plan.ops.append(store.EffectChanged(args["effect"], "failed", args.get("value"),
                                                args.get("duration_ms")))
            return session.effect_failed(args["effect"], args.get("value"), at=now)
        if item.kind == "effect_started":
            host_entries.append({"kind": "effect_started", "effect": args["effect"], "slot": args.get("slot", ""),
                                 "at": session.now,
                                 "attempt": args.get("attempt", 1)})
            plan.ops.append(store.EffectChanged(args["effect"], "started"))
            return None
        if item.kind == "fault":
            turn = args.get("turn") or ""
            if turn in self.turns:
                self.turns[turn].faulted = args["reason"]
                plan.ops.append(store.TurnClosed(turn, "faulted", args["reason"]))
            session.fault(args["agent"], args["reason"], at=now)
            return None
        if item.kind == "cancel":
            session.cancel(at=now)
            return None
        if item.kind == "seat":
            try:
                return self._seat(args["agent"], args.get("user"), plan)
            except SeatError as err:
                return err
        if item.kind == "advance":
            if now > session.now:
                session.advance(now - session.now)
            return None
        raise ValueError(f"unknown input kind {item.kind!r}")

    # -- what a step writes and does after its commit -----------------------------------------------------------

    def _pick_records(self, item: Item, result: PickResult, plan: _Plan) -> None:
        turn, call = item.args.get("turn", ""), item.args.get("call", "")
        loop = self.loops.get(turn)
        if loop is None or not call:
            return
        if result.outcome == "outstanding":
            self.turns[turn].pending_call = call
            plan.ops.append(store.TurnChanged(turn, pending_call=call))
            return
        content = [{"type": "tool_result", "tool_use_id": call, "content": result.text(),
                    "is_error": result.outcome == "refused"}]
        plan.ops.append(loop.conversation.add(turn, "user", "tool_result", content))

    def _plan_output(self, output: Output, plan: _Plan) -> None:
        if isinstance(output, TurnStarted):
            self._open_turn(output, plan)
        elif isinstance(output, TurnEnded):
            meta = self.turns.get(output.turn)
            if meta is not None and not meta.faulted:
                plan.ops.append(store.TurnClosed(output.turn))
            loop = self.loops.pop(output.turn, None)
            self.turns.pop(output.turn, None)
            if loop is not None:
                plan.after.append(loop.stop)
        elif isinstance(output, (PickAnswered, PickStopped)):
            self._answer_pending(output.turn, output.message if isinstance(output, PickAnswered) else output.answer,
                                 plan)
        elif isinstance(output, AllowedChanged):
            loop = self.loops.get(output.turn)
            if loop is not None and not loop.reads_allowed_later():
                plan.ops.append(loop.conversation.add(output.turn, "user", "allowed_changed",
                                                      [{"type": "text", "text": output.message}]))
        elif isinstance(output, EffectRequested):
            plan.ops.append(store.EffectOpened(output.effect, output.slot, output.effect_kind, output.state,
                                               _json(output.spec), _json(output.input), output.idempotent))
            pending = next((e for e in self.session.effects if e.id == output.effect), None)
            if pending is not None:
                plan.after.append(functools.partial(self._start_effect, pending))
        elif isinstance(output, EffectCancelled):
            plan.ops.append(store.EffectChanged(output.effect, "cancelled"))
            task = self.effects.pop(output.effect, None)
            if task is not None:
                plan.after.append(task.cancel)

    def _answer_pending(self, turn: str, text: str, plan: _Plan) -> None:
        meta, loop = self.turns.get(turn), self.loops.get(turn)
        if meta is None or loop is None or not meta.pending_call:
            return
        call, meta.pending_call = meta.pending_call, ""
        plan.ops.append(loop.conversation.add(turn, "user", "tool_result",
                                              [{"type": "tool_result", "tool_use_id": call, "content": text,
                                                "is_error": False}]))
        plan.ops.append(store.TurnChanged(turn, pending_call=""))
        plan.after.append(loop.wake)

    def _open_turn(self, started: TurnStarted, plan: _Plan) -> None:
        slot = self.session.slot_of(started.agent)
        declared = slot.model if slot is not None else "script/unknown"
        system = started.system
        if slot is not None and slot.workspace != "none":
            system = f"{system}\n\n{WORKSPACE_BRIEFING}"
        player = player_for(self.workflow, started.agent, declared, self._holder(started.agent))
        if started.continues and started.agent in self._latest:
            conversation = self.conversations[self._latest[started.agent]]
        else:
            conversation = self.new_conversation(f"{started.agent}@{started.turn}")
        self._latest[started.agent] = conversation.id
        self.turns[started.turn] = TurnMeta(started.agent, player, dict(started.dials))
        plan.ops.append(store.TurnOpened(started.turn, started.agent, started.state, player.model, declared,
                                         player.scripted, _json(started.dials), conversation.id, started.prompt,
                                         system))
        unanswered = conversation.unanswered_calls()
        if unanswered:
            # Calls an earlier Turn left without a result (it ended on another call of the same reply, or a
            # route ended it while its pick was outstanding): they get one here, so the new Turn's loop does not
            # take them for its own picks, and the APIs accept the conversation.
            ended = next(m["turn"] for m in reversed(conversation.messages) if m["role"] == "assistant")
            plan.ops.append(conversation.add(ended, "user", "tool_result", [
                {"type": "tool_result", "tool_use_id": call.get("id", ""), "content": UNANSWERED, "is_error": True}
                for call in unanswered]))
        plan.ops.append(conversation.add(started.turn, "user", "prompt", [{"type": "text", "text": started.message}]))
        loop = TurnLoop(self, started.turn, started.agent, player, conversation, started.prompt, system,
                        tuple(started.notices))
        self.loops[started.turn] = loop
        plan.after.append(loop.start)

    # -- seats ---------------------------------------------------------------------------------------------

    def _holder(self, agent: str) -> str | None:
        held = self.seats.get(agent)
        return held[1] if held is not None else None

    def _seat(self, agent: str, user: tuple[int, str] | None, plan: _Plan) -> str:
        """A person takes an Agent's seat (`user`), or gives it back (None): its Turns, the open one from its next
        request on, are played by that person, or by the model again."""
        if self.session.slot_of(agent) is None:
            raise SeatError(f'no Agent "{agent}" in this run (Agents: {", ".join(sorted(self.machine.agents))})')
        held = self.seats.get(agent)
        if user is not None and held is not None and held[0] != user[0]:
            raise SeatError(f'{held[1]} holds the seat of {agent}; they must give it back first')
        if user is None and held is None:
            return "nobody held it"
        if user is not None:
            self.seats[agent] = tuple(user)  # type: ignore[assignment]
        else:
            self.seats.pop(agent, None)
            plan.after.append(functools.partial(human.give_back, self.run_id, agent))
        plan.ops.append(store.SeatChanged(agent, user[0] if user is not None else None))
        for turn, meta in self.turns.items():
            if meta.agent == agent:
                meta.player = player_for(self.workflow, agent, meta.player.declared, self._holder(agent))
                plan.ops.append(store.TurnChanged(turn, model=meta.player.model))
        return "taken" if user is not None else "given back"

    # -- Effects ---------------------------------------------------------------------------------------------

    def _start_effect(self, pending: PendingEffect, attempt: int = 1) -> None:
        self.effects[pending.id] = asyncio.get_running_loop().create_task(
            self._effect(pending, attempt), name=f"effect {self.run_id}/{pending.id}")

    async def _effect(self, pending: PendingEffect, attempt: int) -> None:
        """Journal that the Effect started, run it, and hand its result to the run."""
        await self.submit("effect_started", effect=pending.id, slot=pending.slot, attempt=attempt)
        if self.session.status != "active":
            return
        try:
            request = await self._in_workspace(pending.id, pending.request())
        except WorkspaceError as err:
            outcome = EffectOutcome(False, {"message": f"the workspace: {err}"}, 0.0)
        else:
            outcome = await run_effect(request, self.session.effect_slot(pending.id))
        kind = "effect_done" if outcome.ok else "effect_failed"
        try:
            await self.submit(kind, effect=pending.id, value=without_nul(outcome.value),
                              duration_ms=outcome.duration_ms)
        finally:
            # Listed until its result is committed, so a draining host waits for the commit, not only the process.
            if self.effects.get(pending.id) is asyncio.current_task():
                del self.effects[pending.id]

    async def _in_workspace(self, effect_id: str, request: EffectRequested) -> EffectRequested:
        """A command Effect given `workspace="<agent>"` runs in that Agent's folder (WorkspaceError: it cannot)."""
        if "workspace" not in request.spec:
            return request
        folder = await asyncio.to_thread(effect_folder, self.run_id, effect_id, request.spec, self.session.slot_of)
        return dataclasses.replace(request, spec={**request.spec, "cwd": folder})

    # -- time ------------------------------------------------------------------------------------------------

    def _schedule_timer(self) -> None:
        self._cancel_timer()
        due = self.session.next_due() if self.session.status == "active" else None
        if due is None:
            return
        delay = max(0.0, (due - wall_ms()) / 1000)
        self._timer = asyncio.get_running_loop().call_later(delay, self._tick)

    def _tick(self) -> None:
        self._timer = None
        self.submit("advance")

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    # -- taking a run up again after a restart ---------------------------------------------------------------

    def _take_up(self) -> None:
        """Start what a restarted host must: a loop for every open Turn, from its recorded conversation, and every
        Effect the run waits on (again only if it is idempotent; otherwise its state gets the error "interrupted by
        a restart")."""
        resume = self.resume
        assert resume is not None
        for name, messages in resume.conversations.items():
            self.conversations[name] = Conversation(name, list(messages), resume.message_seqs.get(name, 0))
        self._latest.update(resume.latest)
        for turn in self.session.turns:
            found = resume.turns.get(turn.id)
            if found is None:
                continue
            record = found
            player = Player(record.model, record.declared_model, record.scripted)
            self.turns[turn.id] = TurnMeta(turn.agent, player, dict(turn.dials), record.pending_call)
            conversation = self.conversations.setdefault(record.conversation, Conversation(record.conversation))
            loop = TurnLoop(self, turn.id, turn.agent, player, conversation, turn.prompt, record.system,
                            tuple(turn.notices), pending_call=record.pending_call)
            self.loops[turn.id] = loop
            loop.start()
        for pending in self.session.effects:
            effect = resume.effects.get(pending.id)
            started = effect is not None and effect.status == "started"
            if started and not pending.idempotent:
                self.submit("effect_failed", effect=pending.id,
                            value={"message": f'the Effect "{pending.slot}" was interrupted by a restart; it is not '
                                              "idempotent, so it was not run again"})
            else:
                self._start_effect(pending, (effect.attempts + 1) if effect is not None else 1)
        self.resume = None

    async def _finish(self) -> None:
        self._cancel_timer()
        for loop in list(self.loops.values()):
            loop.stop()
        for task in list(self.effects.values()):
            task.cancel()
        while not self.inbox.empty():
            item = self.inbox.get_nowait()
            if item is not None and not item.future.done():
                item.future.set_result(_ended(self.session, item.kind))
        await self.write([])
        self.host.forget(self)

    def _view(self) -> dict[str, Any]:
        """The run as readers see it: the API and the Console read this, never the Session."""
        session = self.session
        active = session.active_paths
        self.visited.update(active)
        return {
            "value": session.value,
            "active": active,
            "visited": sorted(self.visited),
            "context": _json(session.context),
            "gates": [gate.to_json() for gate in session.gates],
            "turns": [{"id": t.id, "agent": t.agent, "state": t.path, "prompt": t.prompt,
                       "outstanding": None if t.outstanding is None else {"pick": t.outstanding.id,
                                                                          "event": t.outstanding.event},
                       "allowed": session.allowed_picks(t.agent),
                       "model": self.turns[t.id].player.label if t.id in self.turns else "",
                       "scripted": self.turns[t.id].player.scripted if t.id in self.turns else False}
                      for t in session.turns],
            "effects": [{"id": e.id, "slot": e.slot, "state": e.state, "kind": e.kind} for e in session.effects],
            "next_due": session.next_due(),
            "seats": {agent: name for agent, (_, name) in self.seats.items()},
        }


def _ended(session: Session, kind: str) -> Any:
    error = f"the run has ended ({session.status}); nothing was delivered"
    if kind == "pick":
        return PickResult("refused", error=error)
    from engine.core.outputs import Delivery
    return Delivery("refused", error=error, code="ended")


def _json(value: Any) -> Any:
    """A JSON-ready copy of workflow data for the database (anything odd becomes its string)."""
    return json.loads(json.dumps(value, default=str))


def crash_now() -> None:
    """For the crash tests: die as a killed process does, with nothing flushed."""
    os.kill(os.getpid(), signal.SIGKILL)
