"""An actor's delayed events on its clock, as xstate's `system.scheduler` keeps them.

The core lists each pending delayed event in the snapshot (`Snapshot.timers`, so it persists); the Actor hands
each one to its Scheduler when the `raise_`/`send_to` that made it is executed, in action order, so events due at
the same moment fire in the order their actions ran. Like xstate, scheduling again under an id that is still
pending does not clear the earlier timer (both fire); `cancel(id)` clears only the latest one, and the first timer
of an id to fire un-books the id, so a later `cancel` finds nothing to stop.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable
from typing import Any

from engine.core.statechart.clock import Clock
from engine.core.statechart.snapshot import Timer

__all__ = ["Scheduler"]


class Scheduler:
    """The live timers of one actor: `schedule`, `cancel`, `cancel_all`; a due timer goes to `fire`."""

    def __init__(self, clock: Clock, lock: Any, fire: Callable[[Timer], None]) -> None:
        self._clock = clock
        self._lock = lock  # a real clock fires from a timer thread; the actor's system lock keeps it in turn
        self._fire = fire
        self._serials = itertools.count()
        self._live: dict[int, tuple[Timer, Any]] = {}  # serial -> (timer, clock handle), every timer not yet fired
        self._booked: dict[str, int] = {}  # send id -> serial of the latest timer scheduled under it

    def schedule(self, timer: Timer) -> None:
        """Start `timer` now, or (restored with a start time) for what remains of its delay."""
        now = self._clock.now()
        if timer.started_at is None:
            timer.started_at = now
            remaining = timer.delay
        else:
            remaining = min(timer.delay, max(0, timer.delay - (now - timer.started_at)))
        serial = next(self._serials)
        self._live[serial] = (timer, self._clock.set_timeout(functools.partial(self._due, serial), remaining))
        self._booked[timer.id] = serial

    def cancel(self, send_id: str) -> None:
        serial = self._booked.pop(send_id, None)
        entry = self._live.pop(serial, None) if serial is not None else None
        if entry is not None:
            self._clock.clear_timeout(entry[1])

    def cancel_all(self) -> None:
        for _, handle in self._live.values():
            self._clock.clear_timeout(handle)
        self._live.clear()
        self._booked.clear()

    def _due(self, serial: int) -> None:
        with self._lock:
            entry = self._live.pop(serial, None)
            if entry is None:
                return  # cleared while a real clock's thread was already on its way
            timer = entry[0]
            self._booked.pop(timer.id, None)
            self._fire(timer)
