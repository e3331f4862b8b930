"""Taking runs up from the database: a claim's new and orphaned runs, a run parked here, a run whose step
failed. One call on the host's database thread reads a run (for a claim, all its runs with one read of each kind:
`store.take_up_claimed`), then its Session is rebuilt from the snapshot and the journal after it, and its driver
starts with the inputs kept for it. A run whose workflow changed shape, or no longer replays, is marked drifted and
kept as it was."""

from __future__ import annotations

import logging
from typing import Protocol

from django.conf import settings

from engine.core.session import Session, SessionError
from engine.core.workflow import Machine
from engine.models import Run
from engine.runtime import store, telemetry
from engine.runtime.driver import RunDriver, RunHost
from engine.runtime.parking import Parking
from engine.runtime.telemetry.resume import resumed_steps

__all__ = ["Host", "claim", "take_up", "drive_taken", "drift"]

log = logging.getLogger("engine.runtime")


class Host(RunHost, Protocol):
    """What taking runs up needs of the host (engine/runtime/host.py) beside what its drivers need."""

    max_runs: int
    lease_seconds: float
    workflows: dict[str, Machine]
    parking: Parking


async def claim(host: Host, mine: bool = False) -> int:
    """Claim runs nobody drives (new, handed back, or orphaned by a dead host) and take them up; with `mine`,
    also the runs this host's id held before a restart. Returns how many it claimed."""
    room = host.max_runs - len(host.drivers)
    if room <= 0:
        return 0
    batch = room if mine else min(room, int(getattr(settings, "JR2_CLAIM_BATCH", 25)))
    claimed = await host.db(store.claim_runs, host.owner, host.lease_seconds, batch, mine)
    fresh = [run for run in claimed if run.id not in host.drivers]
    for run in fresh:
        host.parking.taken(run.id)
    machines = {run.id: machine for run in fresh if (machine := host.workflows.get(run.workflow)) is not None}
    loaded = [run for run in fresh if run.id in machines]
    digests = {run_id: machine.digest for run_id, machine in machines.items()}
    # one call on the database thread reads them all (a claim of 25 new runs: eight reads, not 200)
    try:
        taken = await host.db(store.take_up_claimed, loaded, host.owner, digests) if loaded else {}
    except Exception:
        log.exception("taking up %d claimed runs together failed; taking each up alone", len(loaded))
        taken = {}  # each alone, as before: a run that cannot be read fails alone, not its whole claim
    for run in fresh:
        if run.id in taken:
            await drive_taken(host, run.id, run.workflow, machines[run.id], taken[run.id])
            continue
        try:
            await take_up(host, run.id, run.workflow, run)  # alone; a workflow that did not load is said so
        except Exception:
            log.exception("run %s: taking it up failed; its lease runs out and it is claimed again", run.id)
    return len(claimed)


async def take_up(host: Host, run_id: str, workflow: str, claimed: Run | None = None, parked: bool = False) -> None:
    """Take a run up from the database: one call on the database thread (`store.take_up`) takes its lease (or
    starts from the row a claim just leased, `claimed`) and reads it, then its driver starts. A `parked` run
    was held here all along (not a takeover)."""
    machine = host.workflows.get(workflow)
    if machine is None:
        if claimed is not None or await host.db(store.take_lease, run_id, host.owner, host.lease_seconds):
            log.warning('run %s: workflow "%s" did not load; the run waits until it does', run_id, workflow)
            await host.db(store.release_leases, host.owner, [run_id])
        return
    taken = await host.db(store.take_up, run_id, host.owner, host.lease_seconds, machine.digest, claimed)
    if taken is None:
        if parked:
            log.warning("run %s: parked here, but its lease went to another host; it is driven there", run_id)
        return
    await drive_taken(host, run_id, workflow, machine, taken, parked)


async def drive_taken(
    host: Host, run_id: str, workflow: str, machine: Machine, taken: store.TakeUp, parked: bool = False
) -> None:
    """A run read from the database (`store.take_up`): its Session rebuilt from the snapshot and the journal
    after it, and its driver started, with the inputs kept for it."""
    resume = taken.resume
    if resume.run.digest != machine.digest:
        await drift(
            host,
            run_id,
            workflow,
            f'the workflow "{workflow}" changed shape since the run was written '
            f"(run: {resume.run.digest[:12]}, workflow now: {machine.digest[:12]});"
            " the run is kept as it was and not resumed",
        )
        return
    try:
        session = Session.restore(machine, resume.snapshot)
        for index, entry in enumerate(resume.tail, start=resume.snapshot_seq + 1):
            session.apply(entry, index)
    except SessionError as err:
        await drift(host, run_id, workflow, f"the run no longer replays on the workflow: {err}")
        return
    session.drain()
    del session.journal[:]
    driver = RunDriver(
        host,
        run_id,
        workflow,
        machine,
        session,
        seq=resume.run.seq,
        snapshot_seq=resume.snapshot_seq,
        resume=resume,
    )
    host.drivers[run_id] = driver
    if not parked:
        telemetry.takeover()
    if driver.telemetry.book is not None:
        driver.telemetry.resumed(*await host.db(resumed_steps, machine, run_id))
    driver.start(resumed=True)
    for input_id, _, kind, args, sent in taken.kept:  # before its timers and Turns: they were sent first
        driver.relayed(input_id, kind, args, sent)
    if not parked:
        log.info("run %s (%s) taken up at journal entry %d", run_id, workflow, resume.run.seq)


async def drift(host: Host, run_id: str, workflow: str, reason: str) -> None:
    """The run is kept as it was, and not driven: marked drifted, with the reason, and its viewers told."""
    await host.db(store.mark_drifted, run_id, reason)
    host.notify(run_id, workflow, Run.Status.DRIFTED, 0, gates=True)
