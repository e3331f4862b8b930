"""`Parking`: the waiting runs a host holds the lease of but keeps no driver for.

A run that only waits on outside input (a Gate) needs nothing in memory: its Session, books and view are all
committed. So once its driver has been idle `JR2_PARK_SECONDS` (default 30; 0: at once) with nothing it could do
by itself (`parkable`; the host looks at every lease renewal), its task ends and the host keeps only the
run's id and workflow here, and its lease: renewed with the driven runs', handed back at stop (the Temporal "evict
from the sticky cache" idea).

Any input for a parked run takes it up again first, exactly as a restarted host does (`store.take_up` with the
host's lease, then the snapshot and the tail replayed), once however many inputs race for it (one take-up in
flight per run), then the input is delivered to the new driver. A take-up that finds the lease gone (another host
took the run while it was parked) delivers nothing: the input is kept as a RunInput row for the holder, as any
input for a run driven elsewhere. Whoever is about to hand a run an input holds it (`using`), so its driver does
not park in between.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any, Protocol

from django.conf import settings

from engine.models import Run
from engine.runtime.driver import RunDriver
from engine.runtime.store.inputs import Kept

__all__ = ["Parking", "HeldRuns", "park_seconds", "parkable"]

log = logging.getLogger("engine.runtime")


def park_seconds(value: Any = None) -> float | None:
    """Idle seconds before a waiting run is parked: `value`, else the setting `JR2_PARK_SECONDS` (default 30);
    None when runs are never parked (a negative value, or None in the setting)."""
    if value is None:
        value = getattr(settings, "JR2_PARK_SECONDS", 30.0)
    if value is None or value == "":
        return None
    seconds = float(value)
    return None if seconds < 0 else seconds


def parkable(driver: RunDriver) -> bool:
    """Whether the run only waits on outside input, with nothing its driver could do by itself: waiting, no input
    queued or kept pending, every open Turn's loop only waiting for its outstanding pick's answer (none asking a
    model or waiting for a seat holder's pick), no Effect, no timer, no records deferred, its lease held. A parked
    run's loops are made again from their records when it is taken up, as after a restart."""
    return (
        driver.status == Run.Status.WAITING
        and driver.session.status == "active"
        and driver.inbox.empty()
        and all(turn.loop.idle and turn.pending_call for turn in driver.books.turns.values())
        and driver.quiet()
        and not driver.kept.pending()
    )


class _Host(Protocol):
    drivers: dict[str, RunDriver]

    @property
    def stopped(self) -> bool: ...


class Parking:
    """One host's parked runs (run id -> workflow), its take-ups of them in flight, and who holds a run to hand it
    an input (see the module docstring)."""

    def __init__(self, host: _Host, seconds: float | None, take_up: Callable[[str, str], Awaitable[None]]) -> None:
        self.host = host
        #: Idle seconds before a waiting run is parked; None: never.
        self.seconds = seconds
        self.runs: dict[str, str] = {}
        self._take_up = take_up
        self._taking: dict[str, asyncio.Task[None]] = {}
        self._wanted: dict[str, int] = {}

    def __contains__(self, run_id: object) -> bool:
        return run_id in self.runs or run_id in self._taking

    def wait(self, driver: RunDriver, idle: float) -> float | None:
        """Seconds until `driver`, idle for `idle` seconds, is parked (0: now), or None when it may not be."""
        if self.seconds is None or self.host.stopped or driver.run_id in self._wanted or not parkable(driver):
            return None
        return max(0.0, self.seconds - idle)

    def look(self) -> None:
        """Nudge the drivers idle long enough to park (their tasks park themselves): called at every lease
        renewal, so a run is parked at most a third of a lease after `seconds` (no timer per run)."""
        if not self.seconds:
            return
        for driver in list(self.host.drivers.values()):
            if self.wait(driver, driver.idle_seconds()) == 0:
                driver.nudge()

    async def park(self, driver: RunDriver) -> None:
        """`driver`'s task ends now: keep only its run's id (the host keeps the lease). The loops waiting for their
        picks' answers end first (each writes nothing: no records are deferred)."""
        if self.host.drivers.get(driver.run_id) is driver:
            del self.host.drivers[driver.run_id]
            self.runs[driver.run_id] = driver.workflow
        loops = list(driver.loops.values())
        for loop in loops:
            loop.stop()
        await asyncio.gather(*(loop.task for loop in loops if loop.task is not None), return_exceptions=True)

    def lost(self, run_id: str) -> bool:
        """The lease of a parked run went to another host: forget it (whether it was parked here)."""
        return self.runs.pop(run_id, None) is not None

    def taken(self, run_id: str) -> None:
        """The run is being taken up (claimed again, say): it is no longer parked."""
        self.runs.pop(run_id, None)

    @asynccontextmanager
    async def using(self, run_id: str) -> AsyncIterator[RunDriver | None]:
        """The run's driver here, a parked run taken up first (None: not held here), kept from parking until the
        block ends; then it may park again (it is nudged to look)."""
        self._wanted[run_id] = self._wanted.get(run_id, 0) + 1
        try:
            yield await self.driver(run_id)
        finally:
            left = self._wanted[run_id] - 1
            if left:
                self._wanted[run_id] = left
            else:
                del self._wanted[run_id]
                driver = self.host.drivers.get(run_id)
                if driver is not None:
                    driver.nudge()

    async def driver(self, run_id: str) -> RunDriver | None:
        """The run's driver here, taking a parked run up first (once, however many ask at the same time); None
        when no driver here holds the run (a take-up that found the lease gone, too)."""
        driver = self.host.drivers.get(run_id)
        if driver is not None or run_id not in self or self.host.stopped:
            return driver
        task = self._taking.get(run_id)
        if task is None:
            task = asyncio.get_running_loop().create_task(
                self._unpark(run_id, self.runs.pop(run_id)), name=f"take up parked run {run_id}"
            )
            self._taking[run_id] = task
        await asyncio.shield(task)
        return self.host.drivers.get(run_id)

    async def _unpark(self, run_id: str, workflow: str) -> None:
        try:
            await self._take_up(run_id, workflow)
        except BaseException:
            if run_id not in self.host.drivers:  # the lease is still held: parked as before, to be tried again
                self.runs.setdefault(run_id, workflow)
            raise
        finally:
            del self._taking[run_id]

    async def hand_on(self, inputs: list[Kept]) -> None:
        """Inputs relayed to runs held here (the host's rounds found them kept): each to its run's driver, a parked
        run taken up first (it reads its kept inputs itself, so they are handed on after)."""
        parked: dict[str, list[Kept]] = {}
        for kept in inputs:
            driver = self.host.drivers.get(kept[1])
            if driver is not None:
                driver.relayed(kept[0], kept[2], kept[3], kept[4])
            elif kept[1] in self:
                parked.setdefault(kept[1], []).append(kept)
        await asyncio.gather(*(self._relay_parked(run_id, found) for run_id, found in parked.items()))

    async def _relay_parked(self, run_id: str, inputs: list[Kept]) -> None:
        try:
            async with self.using(run_id) as driver:
                if driver is None:  # its lease went to another host: the inputs stay kept for the holder
                    return
                for input_id, _, kind, args, sent in inputs:
                    driver.relayed(input_id, kind, args, sent)
        except Exception:
            log.exception("run %s: taking the parked run up for its inputs failed", run_id)

    async def settle(self) -> None:
        """Wait for the take-ups in flight (a stopping host)."""
        await asyncio.gather(*self._taking.values(), return_exceptions=True)


class HeldRuns:
    """The runs a host holds: driven, parked or being taken up (what its wake-ups read as "held here")."""

    def __init__(self, drivers: Mapping[str, RunDriver], parking: Parking) -> None:
        self.drivers = drivers
        self.parking = parking

    def __contains__(self, run_id: object) -> bool:
        return run_id in self.drivers or run_id in self.parking
