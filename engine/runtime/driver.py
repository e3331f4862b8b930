"""`RunDriver`: the one asyncio task that owns a run's Session.

Every outside input (a pick from a Turn loop, a Gate answer, an Effect's result, a timer, a fault, a cancel)
reaches the run through `submit`, into its inbox, and is applied in order. A step is: bring the Session's clock
up to real time (a journaled `advance`), apply the input, then write the journal entries, the Run's new state and
every record that follows from them in one transaction; only then tell: the input's sender, the Turn loops,
the Effects, the timer, and the channel layer groups `run-<id>` and `workflow-<name>`.

What a step writes and what it does after its commit is worked out by engine/runtime/plan.py, the view readers
see by engine/runtime/view.py; this module runs the step around them. The driver reaches its host only through
`RunHost`, the few members of `Host` it uses, so it never imports the host.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from django.conf import settings

from engine.core.journal.entries import Claim, GateAnswer
from engine.core.outputs import EffectRequested, TurnStarted
from engine.core.session import PendingEffect, Session
from engine.core.text import without_nul
from engine.core.workflow import Machine
from engine.models import EffectRecord, Run
from engine.runtime import faults, relay, store, telemetry
from engine.runtime.claims import claims_json, claims_of
from engine.runtime.conversation import Conversation
from engine.runtime.effects import EffectOutcome, run_effect
from engine.runtime.kept import KeptInputs
from engine.runtime.outboxing import Outboxed, put_any
from engine.runtime.plan import (
    Books,
    CancelEffect,
    GiveBack,
    Loop,
    OpenTurn,
    Plan,
    StartEffect,
    StartLoop,
    StopLoop,
    Todo,
    WakeLoop,
    apply_input,
    ended,
    indexed,
    plan_outputs,
    run_fields,
)
from engine.runtime.players import Player
from engine.runtime.providers import human
from engine.runtime.turns import TurnLoop
from engine.runtime.view import build_view, run_status
from engine.runtime.waiting import Inbox
from engine.runtime.workspace.sandbox import Workspace, WorkspaceError
from engine.runtime.workspace.tools import effect_folder, workspace_for

__all__ = ["RunDriver", "RunHost", "Item", "wall_ms"]

log = logging.getLogger("engine.runtime")
T = TypeVar("T")


def wall_ms() -> float:
    """Real time as the Session counts it: milliseconds since the epoch, whole."""
    return float(int(time.time() * 1000))


class RunHost(Protocol):
    """What a driver needs of the host it runs in (engine/runtime/host.py): who the host is in lease rows, how
    often to snapshot, its database thread, telling viewers, its table of drivers, taking a run up again or
    letting it go, and parking it (engine/runtime/parking.py)."""

    owner: str
    snapshot_every: int
    drivers: dict[str, RunDriver]

    async def db(self, fn: Callable[..., T], *args: Any) -> T: ...

    def notify(
        self,
        run_id: str,
        workflow: str,
        status: str,
        seq: int,
        updated: Any = None,
        gates: bool = False,
        outbox: bool = False,
    ) -> None: ...

    async def reload(self, driver: RunDriver) -> None: ...

    def forget(self, driver: RunDriver) -> None: ...

    def replied(self, input_id: int, outcome: dict[str, Any]) -> None: ...

    def park_wait(self, driver: RunDriver, idle: float) -> float | None: ...

    async def park(self, driver: RunDriver) -> None: ...


#: An inbox item that is no input: the driver only looks again whether it may park (`RunDriver.nudge`).
NUDGE = "nudge"


@dataclass
class Item:
    """One input in a run's inbox, with the future its sender awaits."""

    kind: str
    args: dict[str, Any]
    future: asyncio.Future[Any]
    #: A relayed input's RunInput row, answered in the transaction of this item's step.
    input_id: int | None = None
    #: When a kept input was sent (wall-clock ms): it is applied as of then, if the run has not moved past it.
    sent_at: float | None = None
    #: A Gate answer sent in this process, its row written by this item's step (relay.deliver_here).
    keeping: relay.Keeping | None = None


class RunDriver:
    """Owns one run's Session; its task applies the inbox in order (see the module docstring)."""

    def __init__(
        self,
        host: RunHost,
        run_id: str,
        workflow: str,
        machine: Machine,
        session: Session,
        *,
        seq: int,
        snapshot_seq: int,
        resume: store.Resume | None = None,
        seats: dict[str, tuple[int, str]] | None = None,
    ) -> None:
        self.host = host
        self.run_id = run_id
        self.workflow = workflow
        self.machine = machine
        self.session = session
        self.seq = seq
        self.snapshot_seq = snapshot_seq
        #: The open Turns, the conversations and the seats (engine/runtime/plan.py keeps them in step).
        self.books = Books(
            workflow,
            seats=dict(resume.seats if resume is not None else seats or {}),
            claims=claims_of(resume.run.view) if resume is not None else {},
            claim_minutes=float(getattr(settings, "JR2_CLAIM_MINUTES", 15.0)),
        )
        self.effects: dict[str, asyncio.Task[None]] = {}
        self.inbox: Inbox[Item | None] = Inbox()
        self.task: asyncio.Task[None] | None = None
        self.resume = resume
        self._model_calls = resume.model_calls if resume is not None else 0
        self._timer: asyncio.TimerHandle | None = None
        self._deferred: list[store.Op] = []
        #: The step that ended the run handed its lease back (`store.Step.release`).
        self.released = False
        self.visited: set[str] = set(resume.run.view.get("visited", [])) if resume is not None else set()
        self.status = run_status(session, self.books.seats)
        #: The view last committed: the next step's search and inbox records are what changed since.
        self.committed_view: dict[str, Any] = dict(resume.run.view or {}) if resume is not None else {}
        #: The inputs people sent that this driver took, with the future of each one's answer.
        self.kept = KeptInputs(self)
        #: Spans and metrics, told after each commit (engine/runtime/telemetry/).
        self.telemetry = telemetry.for_run(run_id, workflow, machine.id)
        #: When the driver last finished a step (monotonic seconds): it parks once idle long enough.
        self._idle_since = time.monotonic()

    @property
    def loops(self) -> dict[str, Loop]:
        """The loops of the open Turns, by Turn id."""
        return {turn: open_turn.loop for turn, open_turn in self.books.turns.items()}

    # -- what Turn loops and the host call -------------------------------------------------------------------

    def submit(self, kind: str, **args: Any) -> asyncio.Future[Any]:
        """Queue an input; the future gets its result once the step is committed."""
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        if self.session.status != "active" and kind not in ("effect_started",):
            future.set_result(ended(self.session, kind))
            return future
        self.inbox.put_nowait(Item(kind, args, future))
        return future

    def relayed(
        self, input_id: int, kind: str, args: dict[str, Any], sent_at: float | None = None
    ) -> asyncio.Future[Any]:
        """An input a person sent this run, kept as a RunInput row (engine/runtime/kept.py): applied once, in the
        order it was sent. One kept while no host held the run is applied as of when it was sent (`sent_at`, ms),
        so a timer that came due later, while no worker ran, does not beat it."""
        return self.kept.take(
            input_id,
            kind,
            args,
            lambda took, future: self.inbox.put_nowait(Item(kind, took, future, input_id, sent_at)),
        )

    def keep_here(self, keeping: relay.Keeping) -> asyncio.Future[Any] | None:
        """A Gate answer sent in this process (relay.deliver_here), queued with its row to be written by the step
        it causes; None when the run is no longer active (it is kept first then, as any input)."""
        if self.session.status != "active":
            return None
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.inbox.put_nowait(Item(keeping.kind, dict(keeping.args), future, keeping=keeping))
        return future

    def adopt(self, input_id: int, future: asyncio.Future[Any]) -> None:
        """A queued Gate answer's row, kept pending by its sender (relay.keep_pending, on the database thread):
        the kept inputs know it as taken already."""
        self.kept.adopt(input_id, future)

    async def write(self, ops: list[store.Op]) -> None:
        """Records that change nothing in the Session (model calls, replies, refusals), in order with the steps;
        what was deferred goes first. Once the step that ended the run handed its lease back, nobody holds the
        run: there is no lease left to fence on (a Turn stopping late still writes what it recorded)."""
        ops = self._take_deferred() + list(ops)
        if ops:
            owner = None if self.released else self.host.owner
            updated = await self.host.db(store.write, self.run_id, ops, owner)
            self.telemetry.committed(self.seq + 1, [], ops, self.committed_view, self.status)
            self.host.notify(self.run_id, self.workflow, self.status, self.seq, updated)

    def defer(self, ops: list[store.Op]) -> None:
        """Records to write with the run's next commit, whichever that is (a step or a write), before its own."""
        self._deferred.extend(ops)

    def _take_deferred(self) -> list[store.Op]:
        ops, self._deferred = self._deferred, []
        return ops

    def dials(self, turn: str) -> dict[str, Any]:
        open_turn = self.books.turns.get(turn)
        return dict(open_turn.dials) if open_turn is not None else {}

    def player_of(self, turn: str) -> Player | None:
        """Who plays the open Turn now (a seat can change hands between two of its requests)."""
        open_turn = self.books.turns.get(turn)
        return open_turn.player if open_turn is not None else None

    def next_call_seq(self) -> int:
        self._model_calls += 1
        return self._model_calls

    def workspace_of(self, agent: str) -> Workspace | None:
        """The Agent's workspace in this run (engine/runtime/workspace/sandbox.py), or None when it asks for none."""
        return workspace_for(self.run_id, agent, self.session.slot_of(agent))

    def new_conversation(self, base: str, agent: str | None = None) -> Conversation:
        """A fresh conversation; with `agent`, the one that Agent's next Turn that continues reads (a reroll)."""
        return self.books.new_conversation(base, agent)

    # -- the task --------------------------------------------------------------------------------------------

    def start(self, resumed: bool = False) -> None:
        self.task = asyncio.get_running_loop().create_task(self._main(resumed), name=f"run {self.run_id}")

    async def begin(self, create: dict[str, Any], lease: tuple[str, float] | None) -> None:
        """The run's first step: its start entry, what starting produced and its first snapshot, with the Run row
        itself; then the run's task starts and its first Turns and Effects with it. Without a `lease` (a web
        process starting it) the run is only written: a worker claims it and takes it up from that first step."""
        step, plan = _first_step(self, create, lease)
        entries, fields = step.entries, step.run
        updated = await self.host.db(store.commit, step)
        self.committed_view = fields["view"]
        self.seq = self.snapshot_seq = len(entries)
        self.telemetry.committed(1, entries, plan.ops, self.committed_view, self.status)
        if self.session.status == "active" and lease is not None:
            self.host.drivers[self.run_id] = self  # only now: the lease is in the row, so a renewal keeps it
            self.start()
            self._carry_out(plan.todo)
        self.host.notify(
            self.run_id,
            self.workflow,
            self.status,
            self.seq,
            updated,
            gates=bool(self.committed_view.get("gates")),
            outbox=put_any(step.ops),
        )

    def _run_fields(self, status: str) -> dict[str, Any]:
        gates = [gate.id for gate in self.session.gates]
        held = claims_json(self.books.claims, gates, wall_ms() / 1000)
        self.books.claims = {gate: claim for gate, claim in self.books.claims.items() if gate in held}
        view = build_view(self.session, self.visited, self.books.players(), self.books.seats, held)
        self.visited.update(view["visited"])
        return run_fields(self.session, status, view)

    async def stop(self) -> None:
        """Stop driving (the host is going away); the run stays as committed, to be taken up again."""
        self._cancel_timer()
        loops = list(self.loops.values())
        for loop in loops:
            loop.stop()
            if loop.task is not None:
                loop.task.cancel()
        for task in list(self.effects.values()):
            task.cancel()
        current = asyncio.current_task()  # a step that failed reloads the run from its own task: not itself
        if self.task is not None and self.task is not current:
            self.task.cancel()
        tasks = [
            t
            for t in (self.task, *self.effects.values(), *(loop.task for loop in loops))
            if t is not None and t is not current
        ]
        await asyncio.gather(*tasks, return_exceptions=True)

    def quiet(self) -> bool:
        """Nothing set to happen by itself: no Effect running, no timer, no records deferred, the lease held."""
        return not self.effects and self._timer is None and not self._deferred and not self.released

    def idle_seconds(self) -> float:
        """How long since the driver's last step."""
        return time.monotonic() - self._idle_since

    def nudge(self) -> None:
        """Have the task look again whether it may park, when it may now (whoever held the run off parking let go,
        a Turn came to wait for its pick's answer, or the host found it idle long enough)."""
        if (
            self.inbox.empty()
            and self.task is not None
            and not self.task.done()
            and self.host.park_wait(self, self.idle_seconds()) == 0
        ):
            future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
            future.set_result(None)
            self.inbox.put_nowait(Item(NUDGE, {}, future))

    async def _next(self) -> Item | None:
        """The next input; None when the task is to end: stopped, or parked by the host (which keeps the lease)."""
        while True:
            wait = self.host.park_wait(self, self.idle_seconds())
            if wait is not None and wait <= 0:
                await self.host.park(self)
                return None
            item = await self.inbox.get()  # idle longer than that, the host nudges it (`Parking.look`)
            if item is None or item.kind != NUDGE:
                return item

    async def _main(self, resumed: bool) -> None:
        if resumed:
            _take_up(self)
        self._schedule_timer()
        while True:
            item = await self._next()
            if item is None:
                return
            try:
                await self._step(item)
            except asyncio.CancelledError:
                if not item.future.done():
                    item.future.cancel()
                raise
            except Exception as err:
                log.exception("run %s: a step failed; reloading the run from the database", self.run_id)
                if not item.future.done():
                    item.future.set_exception(err)
                await self.host.reload(self)
                return
            if self.session.status != "active":
                await self._finish()
                return
            self._idle_since = time.monotonic()

    async def _step(self, item: Item) -> None:
        session = self.session
        plan = Plan(self._take_deferred())
        now = wall_ms()
        if item.sent_at is not None:
            now = min(now, max(item.sent_at, session.now))  # as of when it was sent; time never goes back
        result, entries = apply_input(session, self.books, item.kind, item.args, plan, now)
        answered = None if item.input_id is None and item.keeping is None else _answered(item, result, self.host.owner)
        plan_outputs(session.drain(), session, self.books, plan, self._new_loop)
        status = run_status(session, self.books.seats)
        fields = self._run_fields(status)
        gates_before = [g["id"] for g in self.committed_view.get("gates", ())]
        first = self.seq + 1
        last = self.seq + len(entries)
        snapshot = None
        every = max(1, self.host.snapshot_every)
        if entries and session.status == "active" and last // every > self.snapshot_seq // every:
            snapshot = session.to_json()  # a resume starts there; a run that ended is never resumed
        updated = None
        if entries or plan.ops or answered is not None:
            plan.ops.append(indexed(self.workflow, self.committed_view, fields, entries, plan.ops))
            plan.ops.append(
                Outboxed(
                    self.workflow, self.committed_view, fields["view"], status, first, entries, self.status in Run.LIVE
                )
            )
            if answered is not None:  # after the index: its words read the Gate records this step closed
                plan.ops.append(answered)
            ending = session.status != "active"
            if ending:  # the inputs still kept for it can never be delivered now: refused in this same step
                plan.ops.append(store.PendingRefused(status, self.host.owner))
            step = store.Step(
                self.run_id, first, entries, fields, snapshot, plan.ops, owner=self.host.owner, release=ending
            )
            updated = await self.host.db(store.commit, step)
            self.released = ending
            self.committed_view = fields["view"]
            faults.after_commit(entries)
            self.telemetry.committed(first, entries, plan.ops, self.committed_view, status)
        del session.journal[:]
        self.seq = last
        if snapshot is not None:
            self.snapshot_seq = last
        if not item.future.done():
            item.future.set_result(result)
        if isinstance(answered, store.InputAnswered):  # a sender in another process may wait for it
            self.host.replied(answered.input_id, answered.outcome)
        self._carry_out(plan.todo)
        self.status = status
        self._schedule_timer()
        if updated is not None:
            gates_after = [g["id"] for g in fields["view"].get("gates", ())]
            self.host.notify(
                self.run_id,
                self.workflow,
                status,
                last,
                updated,
                gates=gates_after != gates_before or any(isinstance(e, (GateAnswer, Claim)) for e in entries),
                outbox=put_any(plan.ops),
            )

    # -- after a commit ------------------------------------------------------------------------------------------

    def _carry_out(self, todo: list[Todo]) -> None:
        """Do, in order, what a committed step planned (engine/runtime/plan.py)."""
        for do in todo:
            if isinstance(do, StartLoop):
                do.loop.start()
            elif isinstance(do, StopLoop):
                do.loop.stop()
            elif isinstance(do, WakeLoop):
                do.loop.wake()
            elif isinstance(do, StartEffect):
                self._start_effect(do.effect)
            elif isinstance(do, CancelEffect):
                task = self.effects.pop(do.effect, None)
                if task is not None:
                    task.cancel()
            elif isinstance(do, GiveBack):
                human.give_back(self.run_id, do.agent)

    def _new_loop(self, started: TurnStarted, player: Player, conversation: Conversation, system: str) -> TurnLoop:
        return TurnLoop(
            self, started.turn, started.agent, player, conversation, started.prompt, system, tuple(started.notices)
        )

    # -- Effects ---------------------------------------------------------------------------------------------

    def _start_effect(self, pending: PendingEffect, attempt: int = 1) -> None:
        self.effects[pending.id] = asyncio.get_running_loop().create_task(
            self._effect(pending, attempt), name=f"effect {self.run_id}/{pending.id}"
        )

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
            await self.submit(
                kind, effect=pending.id, value=without_nul(outcome.value), duration_ms=outcome.duration_ms
            )
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

    async def _finish(self) -> None:
        self._cancel_timer()
        for loop in list(self.loops.values()):
            loop.stop()
        for task in list(self.effects.values()):
            task.cancel()
        kept = False  # an input relayed after the ending step's commit: its row is still pending
        while not self.inbox.empty():
            item = self.inbox.get_nowait()
            if item is not None and not item.future.done():
                item.future.set_result(ended(self.session, item.kind))
            kept = kept or (item is not None and item.input_id is not None)
        if kept or self._deferred or not self.released:
            await self.write([store.PendingRefused(self.status, self.host.owner)])
        self.telemetry.forget()
        self.host.forget(self)


def _first_step(driver: RunDriver, create: dict[str, Any], lease: tuple[str, float] | None) -> tuple[store.Step, Plan]:
    """The run's first Step (`RunDriver.begin`): its start entry, what starting produced, its first snapshot and the
    Run row itself; and the plan of what to carry out once it is committed."""
    session = driver.session
    entries = list(session.journal)
    del session.journal[:]
    plan = Plan([store.SeatChanged(agent, user_id) for agent, (user_id, _) in driver.books.seats.items()])
    plan_outputs(session.drain(), session, driver.books, plan, driver._new_loop)
    driver.status = run_status(session, driver.books.seats)
    scripted = any(t.player.scripted for t in driver.books.turns.values()) or any(
        slot.model.startswith("script/") for slot in driver.machine.agents.values()
    )
    fields = driver._run_fields(driver.status)
    door = create.get("input")
    plan.ops.append(indexed(driver.workflow, driver.committed_view, fields, entries, plan.ops, door=door))
    plan.ops.append(Outboxed(driver.workflow, {}, fields["view"], fields["status"], 1, entries))
    create = {**create, "scripted": scripted}
    step = store.Step(driver.run_id, 1, entries, fields, session.to_json(), plan.ops, create=create, lease=lease)
    return step, plan


def _take_up(driver: RunDriver) -> None:
    """Start what a restarted host must: a loop for every open Turn, from its recorded conversation, and every
    Effect the run waits on (again only if it is idempotent; otherwise its state gets the error "interrupted by
    a restart")."""
    resume, books = driver.resume, driver.books
    assert resume is not None
    for name, messages in resume.conversations.items():
        books.conversations[name] = Conversation(name, list(messages), resume.message_seqs.get(name, 0))
    books.latest.update(resume.latest)
    for turn in driver.session.turns:
        record = resume.turns.get(turn.id)
        if record is None:
            continue
        player = Player(record.model, record.declared_model, record.scripted)
        conversation = books.conversations.setdefault(record.conversation, Conversation(record.conversation))
        loop = TurnLoop(
            driver,
            turn.id,
            turn.agent,
            player,
            conversation,
            turn.prompt,
            record.system,
            tuple(turn.notices),
            pending_call=record.pending_call,
        )
        books.turns[turn.id] = OpenTurn(turn.agent, player, dict(turn.dials), loop, record.pending_call)
        loop.start()
    for pending in driver.session.effects:
        effect = resume.effects.get(pending.id)
        started = effect is not None and effect.status == EffectRecord.Status.STARTED
        if started and not pending.idempotent:
            driver.submit(
                "effect_failed",
                effect=pending.id,
                value={
                    "message": f'the Effect "{pending.slot}" was interrupted by a restart; it is not '
                    "idempotent, so it was not run again"
                },
            )
        else:
            driver._start_effect(pending, (effect.attempts + 1) if effect is not None else 1)
    driver.resume = None


def _answered(item: Item, result: Any, owner: str) -> store.Op:
    """The op that settles a kept input in the transaction of the step it caused (or writes it settled there)."""
    gate = str(item.args.get("gate") or "")
    if item.keeping is not None:
        return relay.KeptWithStep(item.keeping, relay.encode(result), owner, gate)
    return store.InputAnswered(item.input_id or 0, relay.encode(result), owner, item.kind, gate)
