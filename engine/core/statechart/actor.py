"""The running interpreter: a thin shell that feeds events to the pure core and performs what it returns.

As xstate's actor does: each action the macrostep resolves runs at once while the actor runs (custom actions and
`log` act then; other built-ins queue their effect: start/stop a child, send, schedule or cancel a delayed event,
emit), or waits in the deferred queue while the actor starts. The queued effects run, in order, after the new
snapshot is stored; then observers are told. An exception anywhere puts the actor in status "error".
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
import threading
from collections.abc import Callable
from typing import Any

from engine.core.statechart.actions.base import ExecutableAction
from engine.core.statechart.clock import Clock, RealClock
from engine.core.statechart.errors import StatechartError
from engine.core.statechart.events import STOP, Event, done_actor_event, error_actor_event, init_event, to_event
from engine.core.statechart.logic import ActorSnapshot, to_logic
from engine.core.statechart.mailbox import Mailbox
from engine.core.statechart.observers import Observers, Subscription
from engine.core.statechart.refs import ActorRef
from engine.core.statechart.scheduler import Scheduler
from engine.core.statechart.snapshot import Snapshot, Timer

__all__ = ["Actor", "ActorSystem", "Subscription", "create_actor"]

log = logging.getLogger("engine.core.statechart")

NOT_STARTED, RUNNING, STOPPED = "not_started", "running", "stopped"


def _default_logger(*args: Any) -> None:
    log.info(" ".join(str(a) for a in args))


class Signal:
    """Tells a promise-like actor's function that its actor stopped (`signal.aborted`)."""

    __slots__ = ("aborted",)

    def __init__(self) -> None:
        self.aborted = False


class ActorSystem:
    """What a root actor and all its descendants share: the clock, the logger, system ids."""

    def __init__(self, clock: Clock, logger: Callable[..., None]) -> None:
        self.clock = clock
        self.logger = logger
        self.lock = threading.RLock()
        self._keyed: dict[str, Actor] = {}
        self._next_id = 0

    def get(self, system_id: str) -> Actor | None:
        return self._keyed.get(system_id)

    def _book_id(self) -> str:
        self._next_id += 1
        return f"x:{self._next_id - 1}"

    def _set(self, system_id: str, actor: Actor) -> None:
        existing = self._keyed.get(system_id)
        if existing is not None and existing is not actor:
            raise StatechartError(f"an actor with system id '{system_id}' already exists")
        self._keyed[system_id] = actor

    def _unregister(self, actor: Actor) -> None:
        if actor.system_id and self._keyed.get(actor.system_id) is actor:
            del self._keyed[actor.system_id]


class Actor:
    """A running instance of some logic: a Machine, or promise/callback/transition logic."""

    def __init__(
        self,
        logic: Any,
        *,
        input: Any = None,
        snapshot: Any = None,
        clock: Clock | None = None,
        id: str | None = None,
        system_id: str | None = None,
        parent: Actor | None = None,
        logger: Callable[..., None] | None = None,
        src: Any = None,
        sync_snapshot: bool = False,
        ref: ActorRef | None = None,
    ) -> None:
        self.logic = logic
        self.parent = parent
        self.system: ActorSystem = (
            parent.system if parent is not None else ActorSystem(clock or RealClock(), logger or _default_logger)
        )
        self.clock = self.system.clock
        self.logger = logger or self.system.logger
        self.session_id = self.system._book_id()
        self.id = id if id is not None else self.session_id
        self.system_id = system_id
        self.src = src if src is not None else logic
        self.input = input
        self.ref = ref
        self.signal = Signal()
        self._is_machine = getattr(logic, "kind", None) == "machine"
        self._status = NOT_STARTED
        self._starting = False
        self._mailbox: Mailbox[Event] = Mailbox(self._process)
        self._running: Callable[[], bool] = self.status_is_running  # bound once: asked before every event
        self.sink: Callable[[ExecutableAction], None] = self._execute_action
        self.scope: Any = None  # the Scope of this actor's macrosteps (StateMachine.transition_in)
        self._observers = Observers()
        self._deferred: list[Callable[[], None]] = []
        self._scheduler = Scheduler(self.clock, self.system.lock, self._fire)
        self._restored = snapshot is not None
        self._callback_state: dict[str, Any] = {}
        self._task: Any = None
        self._sync_snapshot = sync_snapshot
        if system_id:
            self.system._set(system_id, self)
        self._snapshot: Any
        self._init_state(snapshot)
        if system_id and self._snapshot.status != "active":
            self.system._unregister(self)

    def _init_state(self, persisted: Any) -> None:
        try:
            if persisted is not None:
                if isinstance(persisted, Snapshot):
                    persisted = persisted.to_json()
                self._snapshot = self.logic.restore_snapshot(persisted, self)
                if self._is_machine:
                    for ref in self._snapshot.children.values():
                        self._create_child(ref)
            else:
                self._snapshot = self.logic.get_initial_snapshot(self, self.input)
        except Exception as err:
            self._snapshot = ActorSnapshot(status="error", error=err, input=self.input)

    # -- public surface ------------------------------------------------------------------------------------

    @property
    def snapshot(self) -> Any:
        return self._snapshot

    def get_snapshot(self) -> Any:
        return self._snapshot

    def get_persisted_snapshot(self) -> Any:
        return self.logic.get_persisted_snapshot(self._snapshot, self)

    def status_is_running(self) -> bool:
        return self._status == RUNNING

    def start(self) -> Actor:
        if self._status == RUNNING:
            return self
        if self._sync_snapshot and self.parent is not None:
            parent, child_id = self.parent, self.id
            self.subscribe(
                next=lambda snap: (
                    parent._send({"type": f"xstate.snapshot.{child_id}", "snapshot": snap})
                    if snap.status == "active"
                    else None
                ),
                error=lambda err: None,
            )
        if self.system_id:
            self.system._set(self.system_id, self)
        self._status = RUNNING
        init = init_event(self.input)
        status = self._snapshot.status
        if status == "done":
            self._update(self._snapshot, init)
            return self
        if status == "error":
            self._error(self._snapshot.error)
            return self
        self._starting = True
        try:
            try:
                if self._is_machine:
                    if self._restored:
                        for timer in list(self._snapshot.timers.values()):
                            self._scheduler.schedule(timer)
                    self._start_children()
                else:
                    self.logic.start(self._snapshot, self)
            except Exception as err:
                self._snapshot = self._with_error(self._snapshot, err)
                self._error(err)
                return self
            self._update(self._snapshot, init)
        finally:
            self._starting = False
        self._drain()
        return self

    def send(self, event: Any) -> None:
        """Deliver an event. A bad event raises at once (TypeError/EventError); a stopped actor ignores events.

        The event joins the mailbox; a running actor then processes it (under the system's lock, so a timer
        thread waits its turn). A send from this actor's own actions only queues: the loop already running takes
        it after the current event."""
        if type(event) is not Event:
            event = to_event(event)
        if self._status == STOPPED:
            return
        mailbox = self._mailbox
        mailbox.push(event)
        if self._status == RUNNING and not self._starting:
            with self.system.lock:
                mailbox.run(self._running)

    _send = _deliver = send  # what the engine itself sends with (children, timers, promises)

    def stop(self) -> Actor:
        if self.parent is not None:
            raise StatechartError(f"actor '{self.id}' is a child: stop it with stop_child from its parent")
        return self._stop()

    def subscribe(
        self, next: Any = None, error: Callable[[Any], None] | None = None, complete: Callable[[], None] | None = None
    ) -> Subscription:
        return self._observers.subscribe(
            next, error, complete, ended=self._snapshot if self._status == STOPPED else None
        )

    def on(self, event_type: str, handler: Callable[[Event], None]) -> Subscription:
        """Listen to events this actor emits (`emit(...)`); `"*"` hears all of them."""
        return self._observers.on(event_type, handler)

    # -- the mailbox ---------------------------------------------------------------------------------------

    def _drain(self) -> None:
        """Process queued events one at a time. Re-entrant sends (from this actor's own actions) only queue;
        a timer thread waits for the lock, then drains what it queued."""
        with self.system.lock:
            self._mailbox.run(self._running)

    def _process(self, event: Event) -> None:
        try:
            if self._is_machine:
                snapshot = self.logic.transition_in(self._snapshot, event, self)
            else:
                snapshot = self.logic.transition(self._snapshot, event, self)
        except Exception as err:
            self._deferred.clear()
            self._snapshot = self._with_error(self._snapshot, err)
            self._error(err)
            return
        self._update(snapshot, event)
        if event["type"] == STOP:
            self._stop_procedure()
            self._observers.complete()

    def _update(self, snapshot: Any, event: Event) -> None:
        self._snapshot = snapshot
        while self._deferred:
            fn = self._deferred.pop(0)
            try:
                fn()
            except Exception as err:
                self._deferred.clear()
                self._snapshot = self._with_error(snapshot, err)
        status = self._snapshot.status
        if status == "active":
            self._observers.next(snapshot)
        elif status == "done":
            self._observers.next(snapshot)
            self._stop_procedure()
            self._observers.complete()
            if self.parent is not None:
                self.parent._send(done_actor_event(self.id, self._snapshot.output))
        elif status == "error":
            self._error(self._snapshot.error)

    # -- executing what the core returns -------------------------------------------------------------------

    def _execute_action(self, action: ExecutableAction) -> None:
        """The sink of a running actor's macrosteps (xstate's actionExecutor): the action's exec runs at once while
        the actor runs, or waits in the deferred queue while it starts. A custom action or a log acts in its exec;
        other built-ins only queue their effect there, so it comes after the step, or after the custom actions
        of the start."""
        kind = action.type
        exec_: Callable[[], Any]
        if action.exec is not None:
            exec_ = action.run
        elif kind == "xstate.log":
            exec_ = functools.partial(self._log, action.params)
        elif kind == "xstate.stopChild":
            ref = action.params["actorRef"]
            if ref is not None:
                ref.stopped = True  # so a start queued earlier in this step does not happen
            exec_ = functools.partial(self._stop_child, ref)
        else:
            if kind == "xstate.spawnChild":
                self._create_child(action.params["actorRef"])
            exec_ = functools.partial(self._deferred.append, functools.partial(self._execute_builtin, action))
        if self._status == RUNNING:
            exec_()
        else:
            self._deferred.append(exec_)

    def _create_child(self, ref: ActorRef) -> None:
        if ref.actor is not None or ref.stopped:
            return
        child = Actor(
            ref.logic,
            input=ref.input,
            id=ref.id,
            system_id=ref.system_id,
            parent=self,
            src=ref.src,
            sync_snapshot=ref.sync_snapshot,
            snapshot=ref.persisted,
            ref=ref,
        )
        ref.bind(child)

    def _execute_builtin(self, action: ExecutableAction) -> None:
        kind, params = action.type, action.params
        if kind == "xstate.spawnChild":
            ref = params["actorRef"]
            if ref.actor is not None and not ref.stopped and ref.actor._status == NOT_STARTED:
                ref.actor.start()
        elif params is not None and params.get("timer") is not None:
            self._scheduler.schedule(params["timer"])
        elif kind == "xstate.cancel":
            self._scheduler.cancel(params["sendId"])
        elif kind == "xstate.sendTo":
            to = params["to"]
            if isinstance(to, ActorRef) and to.actor is None:
                return  # a child that never came to life: the event reaches nobody, as in xstate
            target = self._resolve_target(to)
            if target is None:
                raise StatechartError(
                    f"cannot send event '{params['event']['type']}' from actor '{self.id}': "
                    f"no actor {params.get('targetId') or params['to']!r}"
                )
            event = params["event"]
            if event["type"] == "xstate.error":
                event = error_actor_event(self.id, event.get("data"))
            target._send(event)
        elif kind == "xstate.emit":
            self._emit(params["event"])

    def _stop_child(self, ref: ActorRef | None) -> None:
        """As xstate's executeStop: the child's system ids are free at once (a new child may take them in the same
        step); a child that never started stops now, a running one after the events already sent to it."""
        child = ref.actor if ref is not None else None
        if child is None:
            return
        self._unregister_recursively(child)
        if child._status == RUNNING:
            self._deferred.append(child._stop)
        else:
            child._stop()

    def _unregister_recursively(self, actor: Actor) -> None:
        snapshot = actor._snapshot
        for child in getattr(snapshot, "children", {}).values():
            if child.actor is not None:
                self._unregister_recursively(child.actor)
        self.system._unregister(actor)

    def _resolve_target(self, to: Any) -> Any:
        if to == "#_parent":
            return self.parent
        if to is None or to == "#_internal":
            return self
        if isinstance(to, str):
            ref = getattr(self._snapshot, "children", {}).get(to)
            return ref.actor if ref is not None else None
        if isinstance(to, ActorRef):
            return to.actor
        return to

    def _start_children(self) -> None:
        """The snapshot's active children start before the start's deferred actions run (xstate's `logic.start`):
        those of the initial snapshot, or those of a restored one, which come back to life first."""
        for ref in list(self._snapshot.children.values()):
            if ref.stopped:
                continue
            self._create_child(ref)
            if ref.actor._status == NOT_STARTED and ref.actor._snapshot.status == "active":
                ref.actor.start()

    def _log(self, params: dict[str, Any]) -> None:
        if params["label"]:
            self.logger(params["label"], params["value"])
        else:
            self.logger(params["value"])

    def _emit(self, event: Any) -> None:
        self._observers.emit(event)

    # -- timers --------------------------------------------------------------------------------------------

    def _fire(self, timer: Timer) -> None:
        """A delayed event is due: it leaves the snapshot's listing (unless a later one of its id took its place)
        and goes to its target."""
        if isinstance(self._snapshot, Snapshot) and self._snapshot.timers.get(timer.id) is timer:
            self._snapshot = self._snapshot.without_timer(timer.id)
        target = self._resolve_target(timer.target)
        if target is not None:
            target._send(timer.event)

    # -- promises ------------------------------------------------------------------------------------------

    def _run_task(self, awaitable: Any, resolve_type: str, reject_type: str) -> None:
        def settle(ok: bool, value: Any) -> None:
            if self.signal.aborted:
                return
            self._send({"type": resolve_type if ok else reject_type, "data": value})

        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        if loop is None:
            try:
                value = asyncio.run(_as_coroutine(awaitable))
            except Exception as err:
                settle(False, err)
            else:
                settle(True, value)
            return
        task = asyncio.ensure_future(awaitable)
        self._task = task

        def done(t: asyncio.Future[Any]) -> None:
            if t.cancelled():
                return
            err = t.exception()
            settle(err is None, t.result() if err is None else err)

        task.add_done_callback(done)

    def _cancel_task(self) -> None:
        self.signal.aborted = True
        if self._task is not None and not self._task.done():
            self._task.cancel()

    # -- stopping and errors -------------------------------------------------------------------------------

    def _stop(self) -> Actor:
        if self._status == STOPPED:
            return self
        self._mailbox.clear()
        if self._status == NOT_STARTED:
            self._status = STOPPED
            return self
        self._mailbox.push(Event(type=STOP))
        self._drain()
        return self

    def _stop_procedure(self) -> None:
        if self._status != RUNNING:
            return
        self._scheduler.cancel_all()
        self._mailbox.clear()
        self._status = STOPPED
        self.system._unregister(self)

    def _error(self, err: Any) -> None:
        self._stop_procedure()
        if self._is_machine is False:
            self._cancel_task()
        self._observers.error(err, root=self.parent is None)
        if self.parent is not None:
            self.parent._send(error_actor_event(self.id, err))

    @staticmethod
    def _with_error(snapshot: Any, err: Any) -> Any:
        return snapshot.replace(status="error", error=err)

    def __repr__(self) -> str:
        return f"Actor({self.id!r}, {self._status}, status={getattr(self._snapshot, 'status', None)!r})"


async def _as_coroutine(awaitable: Any) -> Any:
    return await awaitable


def create_actor(
    logic: Any,
    *,
    input: Any = None,
    snapshot: Any = None,
    clock: Clock | None = None,
    id: str | None = None,
    system_id: str | None = None,
    logger: Callable[..., None] | None = None,
) -> Actor:
    """An actor for `logic`, not yet started (call `.start()`)."""
    resolved = to_logic(logic)
    if resolved is None:
        raise StatechartError(f"{logic!r} is not actor logic")
    if not inspect.isclass(type(resolved)):
        raise StatechartError(f"{logic!r} is not actor logic")
    return Actor(resolved, input=input, snapshot=snapshot, clock=clock, id=id, system_id=system_id, logger=logger)
