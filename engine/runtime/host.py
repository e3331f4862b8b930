"""`Host`: runs live runs inside one process, one `RunDriver` task each, and takes them up again after a restart.

    host = Host(workflows)              # {name: Machine}; default: the workflows folder
    await host.start()                  # resumes every live run whose lease it can take
    run_id = await host.start_run("notes", {"changes": "..."})
    fork_id = await host.fork_run(run_id, step=2, context={...})   # core/journal/forking.py; the parent is only read
    delivery = await host.deliver(run_id, "gate", gate="writing.asking", event="reply", params={"text": "..."})
    await host.cancel(run_id)
    await host.stop()

A run is hosted by exactly one host at a time: the Run row's lease (owner, expiry) is taken with a compare-and-set
and renewed while the host drives it, every write of the run checks the lease is still its own (fencing), so
several processes on one database never drive the same run, and a dead host's runs are taken over when its lease
expires. All database work goes through one thread (`db`, engine/runtime/dbthread.py), so a run's records are
committed in the order its task made them and no connection is held while a model is called; the steps of several
runs that are ready at once are committed there in one transaction (group commit).

A run that only waits on outside input is parked: its driver ends and the host keeps only its id and its lease,
taking it up again when an input comes (engine/runtime/parking.py, `JR2_PARK_SECONDS`).

A host has a role: "up" (`jr2 up`, the embedded default: serves pages and drives every run), "worker"
(`jr2 worker`: drives runs, claiming new and orphaned ones as they appear) or "web" (`jr2 web`: drives none; it
writes new runs for the workers to claim and relays inputs to whichever host drives a run, see relay.py).
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import socket
import time
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from django.conf import settings
from django.db import connections

from engine.core.journal.forking import ForkError, plan_fork
from engine.core.session import Session
from engine.core.statechart.clock import SimulatedClock
from engine.core.workflow import Machine
from engine.models import Run
from engine.runtime import forks, relay, store, takeup
from engine.runtime.courier import Courier
from engine.runtime.dbthread import DbThread
from engine.runtime.driver import RunDriver, wall_ms
from engine.runtime.errors import HostError, InputPending, RunNotHosted
from engine.runtime.notify import notify
from engine.runtime.parking import HeldRuns, Parking
from engine.runtime.parking import park_seconds as park_seconds_of
from engine.runtime.plan import run_fields
from engine.runtime.view import build_view, run_status
from engine.runtime.waiting import wait_up_to
from engine.runtime.wakeups import WakeUps

__all__ = ["Host", "HostError", "RunNotHosted", "InputPending", "current_host", "ROLES"]

#: What a host does: see the module docstring.
ROLES = ("up", "worker", "web")

log = logging.getLogger("engine.runtime")
T = TypeVar("T")

_current: Host | None = None


def current_host() -> Host | None:
    """The host running in this process, if any (the API delivers to it)."""
    return _current


class Host:
    def __init__(
        self,
        workflows: Mapping[str, Machine] | None = None,
        *,
        owner: str | None = None,
        lease_seconds: float | None = None,
        snapshot_every: int | None = None,
        role: str = "up",
        scan_seconds: float | None = None,
        max_runs: int | None = None,
        park_seconds: float | None = None,
    ) -> None:
        """`park_seconds`: idle seconds before a waiting run is parked, a negative value never (None: the setting
        `JR2_PARK_SECONDS`)."""
        if role not in ROLES:
            raise ValueError(f"a host's role is one of {', '.join(ROLES)}, not {role!r}")
        if workflows is None:
            from engine.runtime.registry import workflows as registered

            workflows = registered().machines
        self.workflows = dict(workflows)
        self.role = role
        self.owner = owner or _default_owner(role)
        self.lease_seconds = lease_seconds or float(getattr(settings, "JR2_LEASE_SECONDS", 15))
        self.snapshot_every = snapshot_every or int(getattr(settings, "JR2_SNAPSHOT_EVERY", 50))
        #: How often a driving host looks for runs to claim and relayed inputs without being woken.
        self.scan_seconds = scan_seconds or float(getattr(settings, "JR2_SCAN_SECONDS", 1.0))
        #: At most this many runs driven at once (parked runs not counted: they cost no memory); past it the host
        #: claims no more (others take them).
        self.max_runs = max_runs or int(getattr(settings, "JR2_MAX_RUNS", 10_000))
        self.drivers: dict[str, RunDriver] = {}
        #: The waiting runs held here without a driver (engine/runtime/parking.py).
        self.parking = Parking(self, park_seconds_of(park_seconds), self._unpark)
        self._executor = DbThread()
        self._tasks: list[asyncio.Task[None]] = []
        #: What the channel layer asked of this host since its last round, and the replies it owes.
        #: The runs held here, driven or parked: what `holds` answers and the wake-ups read.
        self.held = HeldRuns(self.drivers, self.parking)
        self.wakeups = WakeUps(self.owner, self.held)
        self._last_scan = 0.0
        self.ready = asyncio.Event()
        self._releasing: set[asyncio.Task[None]] = set()
        self._stopped = False
        #: Sends the outbox's webhooks and emails (a driving host only).
        self.courier = Courier(self)

    def holds(self, run_id: str) -> bool:
        """Whether this host holds the run: drives it, or keeps it parked (engine/runtime/parking.py)."""
        return run_id in self.held

    def held_status(self, run_id: str) -> str | None:
        """The status of a run held here as last committed, without reading the database (a parked run waits);
        None when this host does not hold it (it ended, or another host drives it)."""
        driver = self.drivers.get(run_id)
        if driver is not None:
            return str(driver.status)
        return str(Run.Status.WAITING) if run_id in self.parking else None

    @property
    def stopped(self) -> bool:
        return self._stopped

    @property
    def drives(self) -> bool:
        """Whether this host drives runs (a web host only hands them on)."""
        return self.role != "web"

    # -- lifecycle -------------------------------------------------------------------------------------------

    async def start(self) -> None:
        """Become this process's host; a driving host takes up every live run it may (its own from before a
        restart at once, others' once their leases expire) and keeps looking for more."""
        global _current
        _current = self
        _freeze_heap()
        await self.courier.prepare()
        if self.drives:
            await self._claim(mine=True)
            loop = asyncio.get_running_loop()
            self._tasks = [
                loop.create_task(self._renew(), name="jr2 lease renewal"),
                loop.create_task(_rounds(self), name="jr2 claims and relayed inputs"),
                loop.create_task(
                    self.wakeups.listen(lambda: self._stopped, self.scan_seconds), name="jr2 host wake-ups"
                ),
                loop.create_task(self.courier.run(), name="jr2 webhooks and emails"),
            ]
        self.ready.set()

    async def stop(self) -> None:
        """Stop driving every run (they stay live in the database) and hand their leases back, telling the other
        hosts so one takes them at once. Stopping twice (a drain, then the server's shutdown) is harmless."""
        global _current
        if self._stopped:
            return
        self._stopped = True
        for task in self._tasks:
            task.cancel()
        _, late = await asyncio.wait(self._tasks, timeout=5) if self._tasks else (set(), set())
        for task in late:
            log.warning("host %s: %s did not stop within 5 s; going on without it", self.owner, task.get_name())
        await self.parking.settle()
        drivers = list(self.drivers.values())
        await asyncio.gather(*(d.stop() for d in drivers), *self._releasing, return_exceptions=True)
        parked = list(self.parking.runs)
        await self.db(store.release_leases, self.owner, [d.run_id for d in drivers] + parked)
        self.drivers.clear()
        self.parking.runs.clear()
        if drivers or parked:
            await relay.wake_hosts("runs.posted")
        await self.db(connections.close_all)  # this thread's connection: a stopped host holds none open
        self._executor.shutdown(wait=True)
        if _current is self:
            _current = None

    async def drain(self, grace: float) -> None:
        """A clean exit (SIGTERM): claim nothing more, give running Effects up to `grace` seconds to finish and
        be committed, then stop and hand every run back."""
        for task in self._tasks[1:]:
            task.cancel()
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and any(d.effects for d in self.drivers.values()):
            await asyncio.sleep(0.05)
        await self.stop()

    async def db(self, fn: Callable[..., T], *args: Any) -> T:
        """Run `fn` on the host's database thread."""
        return await self._executor.call(fn, args)

    # -- runs ------------------------------------------------------------------------------------------------

    async def start_run(
        self,
        workflow: str,
        input: Any = None,
        user_id: int | None = None,
        seats: dict[str, tuple[int, str]] | None = None,
    ) -> str:
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
            raise HostError(
                f'workflow "{workflow}" has no Agent {", ".join(unknown)} (Agents: {", ".join(sorted(machine.agents))})'
            )
        driver = RunDriver(self, run_id, workflow, machine, session, seq=0, snapshot_seq=0, seats=seats)
        await driver.begin(
            {"workflow": workflow, "digest": machine.digest, "input": plain, "started_by_id": user_id},
            (self.owner, self.lease_seconds) if self.drives else None,
        )
        if not self.drives:
            await relay.wake_hosts("runs.posted", run_id)
        return run_id

    async def fork_run(
        self,
        run_id: str,
        step: int,
        *,
        context: Any = None,
        answer: tuple[str, str, dict[str, Any]] | None = None,
        restart: bool | list[str] | None = None,
        user_id: int | None = None,
    ) -> str:
        """Start a run from the Session run `run_id` had after journal entry `step`, maybe with its context edited
        or `answer` (Gate, event, input) delivered to a Gate open there, and the open Turns of the Agents in
        `restart` (True: all) restarted from the fork's context. The fork is written as a restarted run
        would find it (engine/runtime/forks.py) and taken up the same way: here, or by a worker when this host
        drives no runs. HostError says why not, and then nothing was made."""
        source = await self.db(forks.load_source, run_id, step)
        if source is None:
            raise HostError(f"no run {run_id}")
        workflow = source.run.workflow
        machine = self.workflows.get(workflow)
        if machine is None or machine.digest != source.run.digest:
            raise HostError(
                f'run {run_id} cannot be forked: its workflow "{workflow}" '
                + ("is not loaded here" if machine is None else "changed shape since the run was written")
            )
        try:
            plan = plan_fork(
                machine,
                source.journal,
                step,
                parent=run_id,
                now=wall_ms(),
                context=context,
                answer=answer,
                restart=restart,
            )
        except ForkError as err:
            raise HostError(str(err)) from err
        fork_id = Run._meta.get_field("id").get_default()
        status = run_status(plan.session)
        fields = run_fields(plan.session, status, build_view(plan.session, plan.visited, {}, {}))
        lease = (self.owner, self.lease_seconds) if self.drives else None
        updated = await self.db(forks.commit_fork, fork_id, source, plan, fields, user_id, lease)
        if self.drives:
            await self._take_up(fork_id, workflow)
        else:
            await relay.wake_hosts("runs.posted", fork_id)
        self.notify(fork_id, workflow, status, 1, updated)
        if answer is not None:
            try:
                await self.deliver(fork_id, "gate", gate=answer[0], event=answer[1], params=dict(answer[2]))
            except InputPending:
                pass  # kept: the fork's first worker delivers it
        return fork_id

    async def deliver(self, run_id: str, kind: str, *, sender: str = "", **args: Any) -> Any:
        """An outside input to a run (a Gate answer, a cancel, a seat change, a seat's pick; relay.RELAYED_KINDS);
        its result once committed. See `send_input`."""
        return (await self.send_input(run_id, kind, sender=sender, **args))[1]

    async def send_input(self, run_id: str, kind: str, *, sender: str = "", **args: Any) -> tuple[int | None, Any]:
        """An outside input's id (None for the host's own kinds) and its result once committed. Each is kept first
        as a RunInput row (`sender`, or the answer's `by`, is who sent it), then applied by the run's task here
        when this host drives the run, else by the host that does (relay.py). InputPending: kept, but not
        delivered within `JR2_RELAY_WAIT`; it will be, in order. A parked run is taken up first."""
        async with self.parking.using(run_id):  # held off parking until its input is in (or a parked one taken up)
            return await self._send_input(run_id, kind, sender, args)

    async def _send_input(self, run_id: str, kind: str, sender: str, args: dict[str, Any]) -> tuple[int | None, Any]:
        driver = self.drivers.get(run_id)
        if kind not in relay.RELAYED_KINDS:
            if driver is None:
                return None, await relay.send(self, run_id, kind, args)  # refuses the kind, in words
            return None, await driver.submit(kind, **args)
        sender = sender or str(args.get("by") or "")
        if driver is not None:
            return await relay.deliver_here(self, driver, run_id, kind, args, sender)
        input_id, holder = await relay.posted(self, run_id, kind, args, sender)
        driver = self.drivers.get(run_id)
        if driver is None:  # driven elsewhere, or by nobody yet: whoever holds the run next delivers it
            return input_id, await relay.relayed(self, run_id, input_id, holder)
        return input_id, await relay.within_wait(driver.relayed(input_id, kind, args), run_id, input_id)

    async def offer_pick(self, run_id: str, agent: str, event: str, params: dict[str, Any], sender: str = "") -> None:
        """A pick made in the Console by the person holding `agent`'s seat, for the Turn waiting on them."""
        await self.deliver(run_id, "offer", sender=sender, agent=agent, event=event, params=params)

    async def cancel(
        self, run_id: str, by: str | None = None, door: str | None = None, reason: str = "", sender: str = ""
    ) -> None:
        """Cancel a run; the journal's entry says who cancelled it, through which door, and why (when given)."""
        await self.deliver(run_id, "cancel", sender=sender, by=by, door=door, reason=reason)

    async def claim(
        self, run_id: str, gate: str, action: str, by: str, door: str | None = None, sender: str = ""
    ) -> Any:
        """Claim an open Gate for `by`, release their claim, or break anyone's (engine/runtime/claims.py): the
        Delivery that says whether it took."""
        return await self.deliver(run_id, "claim", sender=sender, gate=gate, action=action, by=by, door=door)

    async def take_seat(self, run_id: str, agent: str, user: tuple[int, str] | None, sender: str = "") -> str:
        """A person takes an Agent's seat in a run (`user`: user id and name), or gives it back (None)."""
        result = await self.deliver(run_id, "seat", sender=sender or (user[1] if user else ""), agent=agent, user=user)
        if isinstance(result, Exception):
            raise HostError(str(result))
        return str(result)

    def park_wait(self, driver: RunDriver, idle: float) -> float | None:
        """Seconds until the idle `driver` is parked (0: now), or None when it may not be (parking.py)."""
        return self.parking.wait(driver, idle)

    async def park(self, driver: RunDriver) -> None:
        """The driver's task ends; its run stays held here, parked."""
        await self.parking.park(driver)

    def forget(self, driver: RunDriver) -> None:
        """A run ended: it needs no host any more."""
        if self.drivers.get(driver.run_id) is driver:
            del self.drivers[driver.run_id]
        if driver.released:
            return  # the step that ended it handed the lease back
        task = asyncio.get_running_loop().create_task(self.db(store.release_leases, self.owner, [driver.run_id]))
        self._releasing.add(task)
        task.add_done_callback(self._releasing.discard)

    async def reload(self, driver: RunDriver) -> None:
        """A step failed before its commit: drop the driver's memory and go on from what the database holds."""
        self.drivers.pop(driver.run_id, None)
        await driver.stop()
        await self._take_up(driver.run_id, driver.workflow)

    # -- taking runs up --------------------------------------------------------------------------------------

    async def _claim(self, mine: bool = False) -> int:
        """Claim runs nobody drives and take them up (engine/runtime/takeup.py); how many it claimed."""
        return await takeup.claim(self, mine)

    def replied(self, input_id: int, outcome: dict[str, Any]) -> None:
        """A relayed input's row is settled and committed with `outcome`: tell its sender (engine/runtime/
        wakeups.py)."""
        self.wakeups.replied(input_id, outcome)

    async def _unpark(self, run_id: str, workflow: str) -> None:
        await self._take_up(run_id, workflow, parked=True)

    async def _take_up(self, run_id: str, workflow: str, claimed: Run | None = None, parked: bool = False) -> None:
        """Take a run up from the database and drive it (engine/runtime/takeup.py)."""
        await takeup.take_up(self, run_id, workflow, claimed, parked)

    async def _renew(self) -> None:
        while True:
            await asyncio.sleep(self.lease_seconds / 3)
            self.parking.look()
            asked = [*self.drivers, *self.parking.runs]
            try:
                held = await self.db(store.renew_leases, self.owner, asked, self.lease_seconds)
            except Exception:
                log.exception("renewing leases failed")
                continue
            # Only the runs this round asked about: one started while it ran was not in the question.
            for run_id in [r for r in asked if r not in held]:
                if self.parking.lost(run_id):
                    log.warning("run %s: lease lost to another host while parked here", run_id)
                elif run_id in self.drivers:
                    log.warning("run %s: lease lost to another host; stopping here", run_id)
                    driver = self.drivers.pop(run_id)
                    await driver.stop()

    # -- telling the world -----------------------------------------------------------------------------------

    def notify(
        self,
        run_id: str,
        workflow: str,
        status: str,
        seq: int,
        updated: Any = None,
        gates: bool = False,
        outbox: bool = False,
    ) -> None:
        """Tell viewers a run moved (engine/runtime/notify.py); the status goes out as its plain string; `gates`:
        the step opened, closed or claimed a Gate, or ended the run. When it put a webhook or an email in the
        outbox (`outbox`), the courier wakes too. (Waking it on every Gate step cost two outbox queries each on the
        run's database thread, a quarter of its time at 1,000 starts with no endpoint; its own scan still comes
        within a second.)"""
        if outbox:
            self.courier.wake()
        notify(run_id, workflow, str(status), seq, updated.isoformat() if updated is not None else "", gates=gates)


_frozen = False


def _freeze_heap() -> None:
    """Once per process, at its first host's start: what is alive then lives as long as the process, so the
    collector's full collections need not walk it again while runs step (`JR2_GC_FREEZE`). The garbage of that
    moment is collected first, so none of it is kept."""
    global _frozen
    if _frozen or not getattr(settings, "JR2_GC_FREEZE", True):
        return
    _frozen = True
    gc.collect()
    gc.freeze()


async def _rounds(host: Host) -> None:
    """Claim runs and hand relayed inputs to the runs they are for: what a wake-up asked for (a claim, or the inputs
    of runs held here), and everything at least every `scan_seconds` (wake-ups are lossy hints)."""
    while True:
        await wait_up_to(host.wakeups.event, host.scan_seconds)
        full = time.monotonic() - host._last_scan >= host.scan_seconds
        claim, heard = host.wakeups.take()
        try:
            if full:
                host._last_scan = time.monotonic()
            if (claim or full) and await host._claim() >= int(getattr(settings, "JR2_CLAIM_BATCH", 25)):
                host.wakeups.claim()  # more may wait: claim again after the other hosts had their turn
                await asyncio.sleep(0.02)
            runs = None if full else [r for r in heard if r in host.held]
            if (host.drivers or host.parking.runs) and (runs is None or runs):
                await host.parking.hand_on(await host.db(store.pending_inputs, host.owner, runs))
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("claiming runs or reading relayed inputs failed")


def _default_owner(role: str) -> str:
    """Who this host is in lease rows: settings.JR2_HOST_ID, else `<host name>:up` for the embedded server (stable
    across restarts, so it takes its own runs up at once), else `<host name>:<role>:<pid>` (two workers on one
    machine must never share an id; a restarted worker's runs are taken over when their leases expire)."""
    configured = getattr(settings, "JR2_HOST_ID", "")
    if configured:
        return str(configured)
    if role == "up":
        return f"{socket.gethostname()}:up"
    return f"{socket.gethostname()}:{role}:{os.getpid()}"
