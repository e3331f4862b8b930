"""The fleet's inputs without polling: a web host hears its input's outcome on its reply channel once the worker has
committed it, the wake-up goes to the worker holding the run alone, and a worker takes a run it just claimed up
from the row it claimed, in a few statements. Wake-ups stay hints: a lost one is made up by the worker's scan.
Hosts in one process, each with its own database thread, as in tests/runtime/test_fleet.py."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from engine.core.outputs import Delivery
from engine.models import Run, RunInput
from engine.runtime import relay, store
from engine.runtime.host import Host
from tests.runtime.hosting import fleet, status, until
from workflows import notes

pytestmark = pytest.mark.django_db(transaction=True)

DOOR = {"changes": "Faster start-up."}
REPLY = {"gate": "writing.asking", "event": "reply", "params": {"text": "Admins"}}
#: Long enough that no scan of its own runs while a test looks: only wake-ups move these workers.
QUIET = 60.0


@pytest.fixture(autouse=True)
def offline(settings: Any) -> None:
    settings.JR2_SCRIPTED = True
    settings.JR2_RELAY_WAIT = 10


def counted(monkeypatch: pytest.MonkeyPatch, name: str) -> list[tuple[Any, ...]]:
    """The calls of `store.<name>` from now on, by their arguments (the real function still runs)."""
    calls: list[tuple[Any, ...]] = []
    real: Callable[..., Any] = getattr(store, name)

    def spy(*args: Any) -> Any:
        calls.append(args)
        return real(*args)

    monkeypatch.setattr(store, name, spy)
    return calls


def quiet_fleet(body: Callable[..., Any], *roles: str) -> None:
    """Hosts as tests/runtime/hosting.py's `fleet` makes them, but whose own scans wait `QUIET` seconds."""
    fleet(body, *roles, scan_seconds=QUIET)


def test_a_web_host_hears_its_answers_outcome_and_never_reads_the_row(monkeypatch: pytest.MonkeyPatch) -> None:
    async def body(web: Host, worker: Host) -> None:
        run_id = await web.start_run("notes", DOOR)
        await until(web, status(run_id, "waiting"))
        reads = counted(monkeypatch, "read_input")
        monkeypatch.setattr(relay, "_FIRST_LOOK", 30.0, raising=False)  # its first look at the row: not before that
        delivery = await web.deliver(run_id, "gate", **REPLY)
        assert isinstance(delivery, Delivery) and delivery.outcome == "delivered"
        assert reads == []  # heard on its reply channel: no poll of the RunInput row
        row = await web.db(lambda: RunInput.objects.get(run_id=run_id))
        assert (row.status, row.answered_by) == ("delivered", "worker-1")  # committed before it was told
        await until(web, status(run_id, "done"))

    quiet_fleet(body, "web", "worker")


def test_a_refused_answer_is_heard_as_the_row_says_it() -> None:
    async def body(web: Host, worker: Host) -> None:
        run_id = await web.start_run("notes", DOOR)
        await until(web, status(run_id, "waiting"))
        delivery = await web.deliver(run_id, "gate", gate="writing.asking", event="approve", params={})
        assert delivery.outcome == "refused" and delivery.code == "not-accepted"
        row = await web.db(lambda: RunInput.objects.get(run_id=run_id))
        assert row.status == "refused" and relay.decode(row.outcome) == delivery

    quiet_fleet(body, "web", "worker")


def test_an_input_wakes_only_the_worker_holding_its_run(monkeypatch: pytest.MonkeyPatch) -> None:
    async def body(web: Host, first: Host, second: Host) -> None:
        run_id = await web.start_run("notes", DOOR)
        run = await until(web, status(run_id, "waiting"))
        holder, other = (first, second) if run.lease_owner == first.owner else (second, first)
        await asyncio.sleep(0.1)  # the other worker's claim round for the start is over
        claims, reads = counted(monkeypatch, "claim_runs"), counted(monkeypatch, "pending_inputs")
        assert (await web.deliver(run_id, "gate", **REPLY)).outcome == "delivered"
        await asyncio.sleep(0.1)
        assert claims == []  # an input for a held run claims nothing
        assert reads == [(holder.owner, [run_id])]  # its holder read that run's inputs alone; the other, nothing
        assert other.owner != holder.owner
        await until(web, status(run_id, "done"))

    quiet_fleet(body, "web", "worker", "worker")


def test_an_input_whose_wake_up_was_lost_is_found_by_the_scan_under_other_wake_ups() -> None:
    async def body(web: Host, worker: Host) -> None:
        run_id = await web.start_run("notes", DOOR)
        await until(web, status(run_id, "waiting"))
        input_id = await web.db(store.post_input, run_id, "gate", REPLY, "alice")  # kept; its wake-up never sent
        for _ in range(60):  # other runs' wake-ups, all the time: the scan still comes
            await relay.wake_hosts("runs.posted")
            if await web.db(lambda: RunInput.objects.filter(id=input_id, status="delivered").exists()):
                break
            await asyncio.sleep(0.05)
        assert await web.db(lambda: RunInput.objects.get(id=input_id).status) == "delivered"
        await until(web, status(run_id, "done"))

    async def with_scan(web: Host, worker: Host) -> None:
        worker.scan_seconds = 0.5
        await body(web, worker)

    quiet_fleet(with_scan, "web", "worker")


def test_a_worker_takes_a_run_it_just_claimed_up_from_the_claimed_row_in_few_statements() -> None:
    made: list[str] = []

    async def start(web: Host) -> None:
        made.extend([await web.start_run("notes", DOOR) for _ in range(3)])

    fleet(start, "web")
    with CaptureQueriesContext(connection) as claiming:
        claimed = store.claim_runs("worker-1", 15, 25)
    assert sorted(run.id for run in claimed) == sorted(made)
    assert all(run.lease_owner == "worker-1" for run in claimed)
    assert len(claiming.captured_queries) <= 4, [q["sql"] for q in claiming.captured_queries]  # not one per run
    assert Run.objects.filter(id__in=made, lease_owner="worker-1").count() == 3
    with CaptureQueriesContext(connection) as taking:
        taken = store.take_up(claimed[0].id, "worker-1", 15, notes.machine.digest, claimed[0])
    assert taken is not None and taken.kept == [] and taken.resume.run is claimed[0]
    assert taken.resume.tail == [] and set(taken.resume.turns) == {t.turn for t in taken.resume.turns.values()}
    # the snapshot, the Turns, their messages, Effects, model calls, seats and the kept inputs: nothing twice,
    # no lease taken again, no journal read past a snapshot of the last step
    assert len(taking.captured_queries) <= 7, [q["sql"] for q in taking.captured_queries]


def test_a_run_held_by_another_is_not_taken_up() -> None:
    made: list[str] = []

    async def start(web: Host) -> None:
        made.append(await web.start_run("notes", DOOR))

    fleet(start, "web")
    [claimed] = store.claim_runs("worker-1", 15, 25)
    assert store.take_up(claimed.id, "worker-2", 15, notes.machine.digest) is None
    assert store.claim_runs("worker-2", 15, 25) == []
