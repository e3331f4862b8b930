"""What runs below a Session's own statechart: child Machines (each a nested Session of its own), statechart
children (a promise, a callback, an inline machine, run by the statechart's own Actor), and the Effects the run
waits on (asked of the host, answered by `effect_done` / `effect_failed`).

A party, Gate or Effect of a child Machine is named `<invoke id>/<name>` from the parent: `route` finds the
nested Session that owns such a name, and `routed` makes a read of the Session ask it there. A child Machine's
outputs become the parent's, their names prefixed (`forward`); its end is the invoke's done or error event.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any, TypeVar

from engine.core.outputs import EffectCancelled, Output, RunEnded, RunState
from engine.core.session.errors import SessionError
from engine.core.session.ports import SessionPort
from engine.core.session.records import PendingEffect, plain
from engine.core.slots import EffectSlot
from engine.core.statechart.actor import Actor, create_actor
from engine.core.statechart.clock import SimulatedClock
from engine.core.statechart.events import Event, done_actor_event, error_actor_event
from engine.core.statechart.nodes import StateNode
from engine.core.statechart.refs import ActorRef
from engine.core.workflow import Machine

__all__ = ["Nest", "routed", "invoke_src"]

F = TypeVar("F", bound=Callable[..., Any])


def routed(method: F) -> F:
    """A read of the Session that names a party, Gate or Effect: `<invoke id>/<name>` is asked of that child
    Machine's nested Session, by the same method."""

    @functools.wraps(method)
    def wrapper(self: Any, name: str, *args: Any, **kwargs: Any) -> Any:
        sub, local, prefix = self.nest.route(name)
        if prefix is None:
            return method(self, name, *args, **kwargs)
        return getattr(sub, method.__name__)(local, *args, **kwargs)

    return wrapper  # type: ignore[return-value]


class Nest:
    """The child Machines, statechart children and Effects below one Session."""

    def __init__(self, session: SessionPort) -> None:
        self.session = session
        self.subs: dict[str, SessionPort] = {}
        self.children: dict[str, Actor] = {}
        self.effects: dict[str, PendingEffect] = {}
        self.effect_by_invoke: dict[str, str] = {}

    # -- child Machines --------------------------------------------------------------------------------------

    def route(self, name: str) -> tuple[SessionPort, str, str | None]:
        """`<invoke id>/<name>` names a party, Gate or Effect of a child Machine's nested Session."""
        if "/" in name:
            prefix, rest = name.split("/", 1)
            sub = self.subs.get(prefix)
            if sub is not None:
                return sub, rest, prefix
        return self.session, name, None

    def start_machine(self, ref: ActorRef, slot: Machine) -> None:
        session = self.session
        make: Any = type(session)  # a nested Session is of its parent's class
        self.subs[ref.id] = make(slot, input=ref.input, clock=SimulatedClock(session.now), counters=session.counters)
        self.pull(ref.id)

    def pull(self, prefix: str) -> None:
        """Take a child Machine's outputs as ours (names prefixed); its end is the invoke's done or error."""
        sub = self.subs.get(prefix)
        if sub is None:
            return
        self.forward(prefix, sub.drain())
        if sub.status != RunState.ACTIVE:
            del self.subs[prefix]
            if prefix in self.session.statechart_snapshot.children:
                if sub.status == RunState.DONE:
                    self._child_ended(prefix, done_actor_event(prefix, sub.output), sub.output)
                else:
                    self._child_ended(prefix, error_actor_event(prefix, {"status": sub.status, "reason": sub.reason}))

    def forward(self, prefix: str, outputs: list[Output]) -> None:
        for out in outputs:
            if isinstance(out, RunEnded):
                continue
            changes = {
                name: f"{prefix}/{getattr(out, name)}"
                for name in ("turn", "agent", "gate", "effect", "pick")
                if getattr(out, name, None)
            }
            self.session.emit(replace(out, **changes))

    def time_reaches(self, target: float) -> None:
        """The parent's clock reached `target`: so does every child Machine's (their timers fire), and the clock
        the statechart children read."""
        for prefix in list(self.subs):
            sub = self.subs.get(prefix)
            if sub is not None:
                sub.advance_to(target)
                self.pull(prefix)
        clock = self.session.clock
        if clock.now() < target:
            clock.set(target)

    def cancel_all(self) -> None:
        for prefix, sub in list(self.subs.items()):
            del self.subs[prefix]
            sub.cancel()
            self.forward(prefix, sub.drain())

    # -- statechart children -------------------------------------------------------------------------------

    def revive(self, ref: ActorRef) -> None:
        """Run a statechart child (a promise, a callback, an inline machine) here, from its persisted snapshot
        when the run was restored."""
        child = create_actor(ref.logic, input=ref.input, snapshot=ref.persisted, clock=self.session.clock)
        child.subscribe(
            error=functools.partial(self._child_error, ref.id),
            complete=functools.partial(self._child_done, ref.id, child),
        )
        ref.bind(child)
        self.children[ref.id] = child
        child.start()

    def _child_done(self, child_id: str, child: Actor) -> None:
        if child.snapshot.status == RunState.DONE and child_id in self.session.statechart_snapshot.children:
            self._child_ended(child_id, done_actor_event(child_id, child.snapshot.output), child.snapshot.output)

    def _child_error(self, child_id: str, err: Any) -> None:
        if child_id in self.session.statechart_snapshot.children:
            self._child_ended(child_id, error_actor_event(child_id, err))

    def _child_ended(self, child_id: str, event: Event, *output: Any) -> None:
        """A child ended: its output is a reply to the Turns above it (an error is not), then its event."""
        session = self.session
        session.work_ended(session.invoke_nodes.get(child_id), *output)
        session.deliver(event)

    def send_to(self, to: Any, event: Event) -> None:
        key = to if isinstance(to, str) else getattr(to, "id", None)
        if key in self.subs:
            self.subs[key].deliver(event)
            self.pull(key)
            return
        ref = self.session.statechart_snapshot.children.get(to) if isinstance(to, str) else to
        if isinstance(ref, ActorRef) and ref.actor is not None:
            ref.actor.send(event)

    # -- Effects -----------------------------------------------------------------------------------------

    def request_effect(self, ref: ActorRef, name: str, slot: EffectSlot, state_id: str) -> None:
        session = self.session
        session.counters["effect"] += 1
        effect_id = f"effect-{session.counters['effect']}"
        pending = PendingEffect(
            effect_id, ref.id, name, state_id, slot.effect, plain(dict(slot.spec)), plain(ref.input), slot.idempotent
        )
        self.effects[effect_id] = pending
        self.effect_by_invoke[ref.id] = effect_id
        session.emit(pending.request())

    def finish_effect(self, pending: PendingEffect) -> None:
        self.effects.pop(pending.id, None)
        self.effect_by_invoke.pop(pending.invoke_id, None)

    def cancel_effect(self, pending: PendingEffect) -> None:
        self.finish_effect(pending)
        self.session.emit(EffectCancelled(pending.id, pending.slot))

    # -- stopping -------------------------------------------------------------------------------------------

    def stop(self, ref: ActorRef) -> None:
        """The invoke `ref` was stopped (its state exited): its Effect, statechart child or child Machine."""
        effect_id = self.effect_by_invoke.get(ref.id)
        if effect_id is not None and effect_id in self.effects:
            self.cancel_effect(self.effects[effect_id])
        child = self.children.pop(ref.id, None)
        if child is not None and child.status_is_running():
            child._stop()
        sub = self.subs.pop(ref.id, None)
        if sub is not None:
            sub.cancel()
            self.forward(ref.id, sub.drain())

    def end(self) -> None:
        """The run ended: every Effect is cancelled, every child Machine too."""
        for pending in list(self.effects.values()):
            self.cancel_effect(pending)
        self.cancel_all()

    # -- reading, for the whole run --------------------------------------------------------------------------

    def all_effects(self) -> list[PendingEffect]:
        effects = list(self.effects.values())
        for prefix, sub in self.subs.items():
            effects.extend(replace(e, id=f"{prefix}/{e.id}") for e in sub.effects)
        return effects

    def next_due(self) -> list[float]:
        return [d for sub in self.subs.values() if (d := sub.next_due()) is not None]

    # -- persisting ----------------------------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        return {
            "effects": [vars(e) for e in self.effects.values()],
            "subs": {prefix: sub.to_json() for prefix, sub in self.subs.items()},
        }

    def restore(self, data: Mapping[str, Any], counters: dict[str, int]) -> None:
        session = self.session
        for effect in data.get("effects", ()):
            pending = PendingEffect(**effect)
            self.effects[pending.id] = pending
            self.effect_by_invoke[pending.invoke_id] = pending.id
        for prefix, sub in data.get("subs", {}).items():
            slot = session.machine.slots.get(invoke_src(session.invoke_nodes.get(prefix), prefix))
            if not isinstance(slot, Machine):
                raise SessionError(f'the run has a child Machine "{prefix}" that the workflow no longer invokes')
            make: Any = type(session)
            self.subs[prefix] = make.restore(slot, sub, counters=counters)


def invoke_src(node: StateNode | None, invoke_id: str) -> Any:
    if node is None:
        return None
    return next((inv.src for inv in node.invoke if inv.id == invoke_id), None)
