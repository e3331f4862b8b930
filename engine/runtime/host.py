"""`Host`: runs live runs inside one process, one `RunDriver` task each, and takes them up again after a restart.

    host = Host(workflows)              # {name: Machine}; default: the workflows folder
    await host.start()                  # resumes every live run whose lease it can take
    run_id = await host.start_run("notes", {"changes": "..."})
    delivery = await host.deliver(run_id, "gate", gate="writing.asking", event="reply", params={"text": "..."})
    await host.cancel(run_id)
    await host.stop()

A run is hosted by exactly one host at a time: the Run row's lease (owner, expiry) is taken with a compare-and-set
and renewed while the host drives it, so several processes on one database never drive the same run, and a dead
host's runs are taken over when its lease expires. All database work goes through one thread (`db`), so a
run's records are committed in the order its task made them and no connection is held while a model is called.
"""
from __future__ import annotations

import asyncio
import logging
import os
import socket
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Mapping, TypeVar

from django.conf import settings
from django.db import close_old_connections

from engine.models import Run
from engine.session import Session, SessionError
from engine.statechart.clock import SimulatedClock
from engine.workflow import Machine

from . import store
from .notify import notify
from .run import RunDriver, wall_ms

__all__ = ["Host", "HostError", "RunNotHosted", "current_host"]

log = logging.getLogger("engine.runtime")
T = TypeVar("T")

_current: Host | None = None


def current_host() -> Host | None:
    """The host running in this process, if any (the API delivers to it)."""
    return _current


class HostError(Exception):
    """A request the host cannot carry out, in words (an unknown workflow, a run that has ended)."""


class RunNotHosted(HostError):
    """The run is not driven by this host: it has ended, or another host holds it."""


class Host:
    def __init__(self, workflows: Mapping[str, Machine] | None = None, *, owner: str | None = None,
                 lease_seconds: float | None = None, snapshot_every: int | None = None) -> None:
        if workflows is None:
            from engine.registry import workflows as registered
            workflows = registered().machines
        self.workflows = dict(workflows)
        self.owner = owner or _default_owner()
        self.lease_seconds = lease_seconds or float(getattr(settings, "JR2_LEASE_SECONDS", 15))
        self.snapshot_every = snapshot_every or int(getattr(settings, "JR2_SNAPSHOT_EVERY", 50))
        self.drivers: dict[str, RunDriver] = {}
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="jr2-db")
        self._renewer: asyncio.Task[None] | None = None
        self._crash_after = os.environ.get("JR2_CRASH_AFTER_COMMIT", "")
        self.ready = asyncio.Event()
        self._releasing: set[asyncio.Task[None]] = set()

    # -- lifecycle -------------------------------------------------------------------------------------------

    async def start(self) -> None:
        """Become this process's host and take up every live run it may."""
        global _current
        _current = self
        for run_id, workflow in await self.db(store.live_run_ids):
            await self._take_up(run_id, workflow)
        self.ready.set()
        self._renewer = asyncio.get_running_loop().create_task(self._renew(), name="jr2 lease renewal")

    async def stop(self) -> None:
        """Stop driving every run (they stay live in the database) and hand their leases back."""
        global _current
        if self._renewer is not None:
            self._renewer.cancel()
        drivers = list(self.drivers.values())
        await asyncio.gather(*(d.stop() for d in drivers), *self._releasing, return_exceptions=True)
        await self.db(store.release_leases, self.owner, [d.run_id for d in drivers])
        self.drivers.clear()
        await self.db(close_old_connections)
        self._executor.shutdown(wait=True)
        if _current is self:
            _current = None

    async def db(self, fn: Callable[..., T], *args: Any) -> T:
        """Run `fn` on the host's database thread."""
        return await asyncio.get_running_loop().run_in_executor(self._executor, lambda: fn(*args))

    # -- runs ------------------------------------------------------------------------------------------------

    async def start_run(self, workflow: str, input: Any = None, user_id: int | None = None,
                        seats: dict[str, tuple[int, str]] | None = None) -> str:
        """Start a run; the door is validated first (pydantic's ValidationError names the field). `seats` gives
        Agents' seats to people from the start: agent -> (user id, username)."""
        machine = self.workflows.get(workflow)
        if machine is None:
            raise HostError(f'no workflow "{workflow}" (workflows: {", ".join(sorted(self.workflows)) or "none"})')
        door = machine.validate_door(input)
        plain = door.model_dump(mode="json") if hasattr(door, "model_dump") else input
        session = Session(machine, plain, clock=SimulatedClock(wall_ms()))
        run_id = Run._meta.get_field("id").get_default()
        unknown = sorted(set(seats or {}) - set(machine.agents))
        if unknown:
            raise HostError(f'workflow "{workflow}" has no Agent {", ".join(unknown)} (Agents: '
                            f'{", ".join(sorted(machine.agents))})')
        driver = RunDriver(self, run_id, workflow, machine, session, seq=0, snapshot_seq=0, seats=seats)
        await driver.begin({"workflow": workflow, "digest": machine.digest, "input": plain,
                            "started_by_id": user_id}, (self.owner, self.lease_seconds))
        return run_id

    async def deliver(self, run_id: str, kind: str, **args: Any) -> Any:
        """An outside input (a Gate answer, a cancel) to a run this host drives; its result once committed."""
        driver = self.drivers.get(run_id)
        if driver is None:
            raise RunNotHosted(f"run {run_id} is not live on this host")
        return await driver.submit(kind, **args)

    async def cancel(self, run_id: str) -> None:
        await self.deliver(run_id, "cancel")

    async def take_seat(self, run_id: str, agent: str, user: tuple[int, str] | None) -> str:
        """A person takes an Agent's seat in a run (`user`: user id and name), or gives it back (None)."""
        result = await self.deliver(run_id, "seat", agent=agent, user=user)
        if isinstance(result, Exception):
            raise HostError(str(result))
        return str(result)

    def forget(self, driver: RunDriver) -> None:
        """A run ended: it needs no host any more."""
        if self.drivers.get(driver.run_id) is driver:
            del self.drivers[driver.run_id]
        task = asyncio.get_running_loop().create_task(self.db(store.release_leases, self.owner, [driver.run_id]))
        self._releasing.add(task)
        task.add_done_callback(self._releasing.discard)

    async def reload(self, driver: RunDriver) -> None:
        """A step failed before its commit: drop the driver's memory and go on from what the database holds."""
        self.drivers.pop(driver.run_id, None)
        await driver.stop()
        await self._take_up(driver.run_id, driver.workflow)

    # -- taking runs up --------------------------------------------------------------------------------------

    async def _take_up(self, run_id: str, workflow: str) -> None:
        if not await self.db(store.take_lease, run_id, self.owner, self.lease_seconds):
            return
        machine = self.workflows.get(workflow)
        if machine is None:
            log.warning('run %s: workflow "%s" did not load; the run waits until it does', run_id, workflow)
            await self.db(store.release_leases, self.owner, [run_id])
            return
        resume = await self.db(store.load_resume, run_id)
        if resume.run.digest != machine.digest:
            await self._drift(run_id, workflow, f'the workflow "{workflow}" changed shape since the run was written '
                                                f"(run: {resume.run.digest[:12]}, workflow now: {machine.digest[:12]});"
                                                " the run is kept as it was and not resumed")
            return
        try:
            session = Session.restore(machine, resume.snapshot)
            for index, entry in enumerate(resume.tail, start=resume.snapshot_seq + 1):
                session.apply(entry, index)
        except SessionError as err:
            await self._drift(run_id, workflow, f"the run no longer replays on the workflow: {err}")
            return
        session.drain()
        del session.journal[:]
        await self.db(store.expire_in_flight, run_id)
        driver = RunDriver(self, run_id, workflow, machine, session, seq=resume.run.seq,
                           snapshot_seq=resume.snapshot_seq, resume=resume)
        self.drivers[run_id] = driver
        driver.start(resumed=True)
        log.info("run %s (%s) taken up at journal entry %d", run_id, workflow, resume.run.seq)

    async def _drift(self, run_id: str, workflow: str, reason: str) -> None:
        await self.db(store.mark_drifted, run_id, reason)
        self.notify(run_id, workflow, "drifted", 0)

    async def _renew(self) -> None:
        while True:
            await asyncio.sleep(self.lease_seconds / 3)
            asked = list(self.drivers)
            try:
                held = await self.db(store.renew_leases, self.owner, asked, self.lease_seconds)
            except Exception:  # noqa: BLE001 - a database hiccup: try again at the next round
                log.exception("renewing leases failed")
                continue
            # Only the runs this round asked about: one started while it ran was not in the question.
            for run_id in [r for r in asked if r not in held and r in self.drivers]:
                log.warning("run %s: lease lost to another host; stopping here", run_id)
                driver = self.drivers.pop(run_id)
                await driver.stop()

    # -- telling the world -----------------------------------------------------------------------------------

    def notify(self, run_id: str, workflow: str, status: str, seq: int, updated: Any = None) -> None:
        notify(run_id, workflow, status, seq, updated.isoformat() if updated is not None else "")

    def crash_point(self, entries: list[dict[str, Any]]) -> None:
        """For the crash tests: `JR2_CRASH_AFTER_COMMIT=<kind>` kills the process right after committing an entry
        of that kind, before anyone is told."""
        if self._crash_after and any(e.get("kind") == self._crash_after for e in entries):
            from .run import crash_now
            crash_now()


def _default_owner() -> str:
    """Who this host is in lease rows: settings.JR2_HOST_ID, else `<host name>:up`, stable across restarts of the
    embedded server so it takes its own runs up at once."""
    return getattr(settings, "JR2_HOST_ID", "") or f"{socket.gethostname()}:up"
