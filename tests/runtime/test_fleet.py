"""The fleet in one process: web hosts that drive nothing and relay, worker hosts that claim runs, leases that fence
a host that lost its run, takeover of a dead worker's runs, and a drain that hands runs back. Each host has its own
database thread, as separate processes would; the database is real (SQLite here, PostgreSQL with DATABASE_URL)."""

from __future__ import annotations

import asyncio
import sys
import time
from typing import Any

import pytest
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from pydantic import BaseModel

from engine import agent, define_event, effect, jr2_setup, scripted
from engine.core.outputs import Delivery
from engine.models import EffectRecord, JournalEntry, Run, RunInput
from engine.runtime import store, telemetry
from engine.runtime.host import Host, InputPending, RunNotHosted
from engine.runtime.telemetry.meters import Metrics
from tests.runtime.hosting import fleet, status, until
from workflows import notes

pytestmark = pytest.mark.django_db(transaction=True)

DOOR = {"changes": "Faster start-up."}
REPLY = {"gate": "writing.asking", "event": "reply", "params": {"text": "Admins"}}


@pytest.fixture(autouse=True)
def offline(settings: Any) -> None:
    settings.JR2_SCRIPTED = True


async def die(host: Host) -> None:
    """What SIGKILL leaves: the host stops at once, its leases stay in the rows until they expire."""
    for task in host._tasks:
        task.cancel()
    await asyncio.gather(*(d.stop() for d in host.drivers.values()), *host._tasks, return_exceptions=True)
    host.drivers.clear()
    host.parking.runs.clear()
    host.ready.clear()
    host._executor.shutdown(wait=True)


def gate_answers(run_id: str) -> int:
    return JournalEntry.objects.filter(run_id=run_id, kind="gate").count()


def test_a_web_host_writes_the_run_and_a_worker_claims_and_drives_it() -> None:
    async def body(web: Host, worker: Host) -> None:
        run_id = await web.start_run("notes", DOOR)
        assert run_id not in web.drivers
        run = await until(web, status(run_id, "waiting"))
        assert run.lease_owner == "worker-1" and worker.holds(run_id)
        delivery = await web.deliver(run_id, "gate", **REPLY)
        assert isinstance(delivery, Delivery) and delivery.outcome == "delivered"
        run = await until(web, status(run_id, "done"))
        assert "Admins" in run.output["notes"]
        relayed = await web.db(
            lambda: list(RunInput.objects.filter(run_id=run_id).values("kind", "status", "answered_by"))
        )
        assert relayed == [{"kind": "gate", "status": "delivered", "answered_by": "worker-1"}]
        assert await web.db(gate_answers, run_id) == 1

    fleet(body, "web", "worker")


def test_a_relayed_answer_the_gate_does_not_accept_is_refused_and_changes_nothing() -> None:
    async def body(web: Host, worker: Host) -> None:
        run_id = await web.start_run("notes", DOOR)
        before = await until(web, status(run_id, "waiting"))
        delivery = await web.deliver(run_id, "gate", gate="writing.asking", event="approve", params={})
        assert delivery.outcome == "refused" and delivery.code == "not-accepted"
        assert "reply" in delivery.accepts or "reply" in (delivery.error or "")
        after = await web.db(lambda: Run.objects.get(id=run_id))
        assert (after.seq, after.status) == (before.seq, "waiting")

    fleet(body, "web", "worker")


def test_two_answers_through_two_web_hosts_deliver_exactly_one() -> None:
    async def body(web1: Host, web2: Host, worker: Host) -> None:
        run_id = await web1.start_run("notes", DOOR)
        await until(web1, status(run_id, "waiting"))
        results = await asyncio.gather(
            web1.deliver(run_id, "gate", **REPLY), web2.deliver(run_id, "gate", **REPLY), return_exceptions=True
        )
        delivered = [r for r in results if isinstance(r, Delivery) and r.outcome == "delivered"]
        assert len(delivered) == 1, results
        [other] = [r for r in results if r is not delivered[0]]
        # The other came second: the Gate had closed, or (the scripted writer being quick) the run had ended.
        assert (isinstance(other, Delivery) and other.code in ("no-gate", "ended")) or isinstance(
            other, RunNotHosted
        ), other
        await until(web1, status(run_id, "done"))
        assert await web1.db(gate_answers, run_id) == 1

    fleet(body, "web", "web", "worker")


def test_a_dead_workers_runs_are_taken_over_once_its_leases_expire() -> None:
    async def body(web: Host, first: Host, second: Host) -> None:
        await die(second)  # only `first` claims the new runs
        run_ids = [await web.start_run("notes", DOOR) for _ in range(3)]
        for run_id in run_ids:
            await until(web, status(run_id, "waiting"))
        assert all(first.holds(run_id) for run_id in run_ids)
        await die(first)
        killed = time.monotonic()
        replacement = Host(
            {"notes": notes.machine}, owner="worker-3", role="worker", scan_seconds=0.05, lease_seconds=0.6
        )
        await replacement.start()
        try:
            for run_id in run_ids:
                await until(web, lambda run_id=run_id: Run.objects.filter(id=run_id, lease_owner="worker-3").exists())
            taken = time.monotonic() - killed
            assert 0.3 < taken < 5, f"takeover after {taken:.2f} s"
            for run_id in run_ids:
                assert (await web.deliver(run_id, "gate", **REPLY)).outcome == "delivered"
                await until(web, status(run_id, "done"))
                assert await web.db(gate_answers, run_id) == 1
        finally:
            await replacement.stop()

    fleet(body, "web", "worker", "worker", lease_seconds=0.6)


def test_a_host_that_lost_its_lease_writes_nothing_more_and_lets_the_run_go() -> None:
    async def body(worker: Host) -> None:
        run_id = await worker.start_run("notes", DOOR)
        before = await until(worker, status(run_id, "waiting"))
        await worker.db(lambda: Run.objects.filter(id=run_id).update(lease_owner="someone-else"))
        with pytest.raises(store.LeaseLost):
            await worker.deliver(run_id, "gate", **REPLY)
        after = await worker.db(lambda: Run.objects.get(id=run_id))
        assert (after.seq, after.status, after.lease_owner) == (before.seq, "waiting", "someone-else")
        assert await worker.db(gate_answers, run_id) == 0
        for _ in range(50):
            if run_id not in worker.drivers:
                break
            await asyncio.sleep(0.02)
        assert run_id not in worker.drivers

    fleet(body, "worker", park_seconds=-1)  # its driver stays: the fencing of a driver's own step


def relay_waits(reader: InMemoryMetricReader) -> int:
    """The count of inputs answered pending (jr2.relay.waits), as the metrics pipeline reads it."""
    data = reader.get_metrics_data()
    return sum(
        int(point.value)
        for resource in (data.resource_metrics if data else ())
        for scope in resource.scope_metrics
        for metric in scope.metrics
        if metric.name == "jr2.relay.waits"
        for point in metric.data.data_points
    )


def test_an_input_no_worker_takes_in_time_is_kept_and_delivered_in_order_when_one_does(settings: Any) -> None:
    settings.JR2_RELAY_WAIT = 0.3
    reader = InMemoryMetricReader()
    telemetry.configure(metrics=Metrics([reader]))

    async def body(web: Host, worker: Host) -> None:
        run_id = await web.start_run("notes", DOOR)
        await until(web, status(run_id, "waiting"))
        await die(worker)
        with pytest.raises(InputPending) as pending:
            await web.deliver(run_id, "gate", **REPLY, by="alice")
        with pytest.raises(InputPending):
            await web.deliver(run_id, "gate", **REPLY, by="bob")
        found = await web.db(store.report, run_id, pending.value.input_id)
        assert found is not None and (found.status, found.sent_by, found.gate) == ("pending", "alice", "writing.asking")
        assert relay_waits(reader) == 2  # each answered pending is counted
        await web.db(lambda: Run.objects.filter(id=run_id).update(lease_owner=""))
        later = Host({"notes": notes.machine}, owner="worker-2", role="worker", scan_seconds=0.05)
        await later.start()
        try:
            await until(web, lambda: not RunInput.objects.filter(status="pending").exists())
            rows = await web.db(
                lambda: list(RunInput.objects.order_by("id").values_list("sent_by", "status", "reason"))
            )
            assert rows[0] == ("alice", "delivered", "")
            assert rows[1][:2] == ("bob", "refused"), rows
            assert rows[1][2].startswith("the Gate closed before your answer was delivered: alice answered it"), rows
            assert await web.db(gate_answers, run_id) == 1
            await until(web, status(run_id, "done"))
            assert "Admins" in (await web.db(lambda: Run.objects.get(id=run_id))).output["notes"]
        finally:
            await later.stop()

    try:
        fleet(body, "web", "worker")
    finally:
        telemetry.configure(metrics=None)


def test_inputs_still_waiting_when_their_run_ends_are_refused_saying_so(settings: Any) -> None:
    settings.JR2_RELAY_WAIT = 0.2

    async def body(web: Host, worker: Host) -> None:
        run_id = await web.start_run("notes", DOOR)
        await until(web, status(run_id, "waiting"))
        await die(worker)
        with pytest.raises(InputPending) as pending:
            await web.deliver(run_id, "gate", **REPLY, by="alice")
        await web.db(lambda: Run.objects.filter(id=run_id).update(status="cancelled", lease_owner=""))
        found = await web.db(store.report, run_id, pending.value.input_id)
        assert found is not None and found.status == "refused"
        assert found.reason == "the run ended (cancelled) before your answer was delivered"

    fleet(body, "web", "worker")


def test_an_input_for_a_run_that_has_ended_is_refused_at_once() -> None:
    async def body(web: Host, worker: Host) -> None:
        run_id = await web.start_run("notes", DOOR)
        await until(web, status(run_id, "waiting"))
        await web.deliver(run_id, "cancel")
        await until(web, status(run_id, "cancelled"))
        with pytest.raises(RunNotHosted, match="has ended"):
            await web.deliver(run_id, "gate", **REPLY)

    fleet(body, "web", "worker")


class Empty(BaseModel):
    pass


def slow_effect_machine(marker: str) -> Any:
    go = define_event(name="go", input=Empty, description="Start the slow command.")
    scripted("drain.worker")(lambda turn: ("go", {}) if not turn.answers else None)
    return jr2_setup(
        events=[go],
        actors={
            "worker": agent(model="script/drain.worker", instructions="Start the work."),
            "slow": effect.command(
                [sys.executable, "-c", f"import sys, time; time.sleep(0.5); open({marker!r}, 'a').write('ran\\n')"]
            ),
        },
    ).create_machine(
        {
            "id": "drain",
            "initial": "working",
            "states": {
                "working": {
                    "invoke": {"src": "worker"},
                    "initial": "idle",
                    "states": {
                        "idle": {"on": {"go": "running"}},
                        "running": {"invoke": {"src": "slow", "onDone": "#drain.finished"}},
                    },
                },
                "finished": {"type": "final"},
            },
        }
    )


def test_a_draining_worker_lets_its_running_effect_finish_then_hands_the_run_back(tmp_path: Any) -> None:
    marker = tmp_path / "ran"
    machine = slow_effect_machine(str(marker))

    async def body(web: Host, first: Host) -> None:
        run_id = await web.start_run("drain", None)
        await until(web, lambda: EffectRecord.objects.filter(run_id=run_id, status="started").exists())
        await first.drain(grace=5)
        assert marker.read_text() == "ran\n", "the Effect was cut short or run twice"
        run = await web.db(lambda: Run.objects.get(id=run_id))
        assert run.status == "done" and run.lease_owner == ""

    fleet(body, "web", "worker", workflows={"drain": machine}, lease_seconds=30)


def test_runs_a_worker_hands_back_are_taken_at_once_not_after_their_lease(tmp_path: Any) -> None:
    async def body(web: Host, first: Host, second: Host) -> None:
        await die(second)
        run_id = await web.start_run("notes", DOOR)
        await until(web, status(run_id, "waiting"))
        assert first.holds(run_id)
        other = Host({"notes": notes.machine}, owner="worker-3", role="worker", scan_seconds=0.05, lease_seconds=30)
        await other.start()
        try:
            await first.drain(grace=1)
            await until(web, lambda: Run.objects.filter(id=run_id, lease_owner="worker-3").exists(), timeout=5)
            assert (await web.deliver(run_id, "gate", **REPLY)).outcome == "delivered"
            await until(web, status(run_id, "done"))
        finally:
            await other.stop()

    fleet(body, "web", "worker", "worker", lease_seconds=30)


def test_a_timer_fires_at_its_due_time_on_the_worker_that_takes_the_run_over() -> None:
    """A 1.5 s timer; its worker dies after 0.3 s; another worker takes the run over once the lease (0.4 s) has
    expired and fires the timer at its due time, not 1.5 s after taking the run."""
    from tests.runtime.test_host import timed_machine

    machine = timed_machine(delay=1500)

    async def body(web: Host, first: Host, second: Host) -> None:
        await die(second)
        clock = asyncio.get_running_loop().time
        started = clock()
        run_id = await web.start_run("timed", None)
        await until(web, lambda: Run.objects.filter(id=run_id, lease_owner="worker-1").exists())
        await asyncio.sleep(0.3)
        await die(first)
        other = Host({"timed": machine}, owner="worker-3", role="worker", scan_seconds=0.05, lease_seconds=0.4)
        await other.start()
        try:
            await until(web, lambda: Run.objects.filter(id=run_id, lease_owner="worker-3").exists())
            taken = clock()
            run = await until(web, status(run_id, "done"), timeout=5)
            assert run.output == {"ok": True}
            assert clock() - started >= 1.4
            assert clock() - taken < 1.3, "the timer started over on the new worker"
        finally:
            await other.stop()

    fleet(body, "web", "worker", "worker", workflows={"timed": machine}, lease_seconds=0.4)


class Note(BaseModel):
    note: str = ""


def review_machine() -> Any:
    """A Gate that escalates to a lead's Gate after DUE_MS: the timer an answer must not lose to while no worker
    runs."""
    approve = define_event(name="approve", input=Note, description="Approve the change.")
    return jr2_setup(events=[approve], actors={}).create_machine(
        {
            "id": "review",
            "initial": "waiting",
            "states": {
                "waiting": {
                    "invoke": {"src": "gate", "id": "review", "input": lambda context: {"meta": {}}},
                    "on": {"approve": "approved"},
                    "after": {DUE_MS: "escalated"},
                },
                "escalated": {
                    "invoke": {"src": "gate", "id": "lead", "input": lambda context: {"meta": {}}},
                    "on": {"approve": "approved"},
                },
                "approved": {"type": "final"},
            },
        }
    )


DUE_MS = 1500
APPROVE = {"gate": "review", "event": "approve", "params": {"note": "ok"}}


def settled_row() -> Any:
    return RunInput.objects.exclude(status="pending").first()


def test_an_answer_kept_before_its_gates_timer_came_due_is_delivered_first(settings: Any) -> None:
    settings.JR2_RELAY_WAIT = 0.2

    async def body(web: Host, worker: Host) -> None:
        run_id = await web.start_run("review", {})
        await until(web, status(run_id, "waiting"))
        await die(worker)
        with pytest.raises(InputPending):
            await web.deliver(run_id, "gate", **APPROVE, by="alice")
        await asyncio.sleep(DUE_MS / 1000 + 0.3)  # the timer comes due while no worker runs
        await web.db(lambda: Run.objects.filter(id=run_id).update(lease_owner=""))
        later = Host({"review": review_machine()}, owner="worker-2", role="worker", scan_seconds=0.05)
        await later.start()
        try:
            row = await until(web, settled_row)
            assert (row.status, row.reason) == ("delivered", "")
            run = await until(web, status(run_id, "done"))
            assert run.view["value"] == "approved"
        finally:
            await later.stop()

    fleet(body, "web", "worker", workflows={"review": review_machine()})


def test_an_answer_kept_after_its_gates_timer_came_due_is_refused_saying_the_timer_fired_first(
    settings: Any,
) -> None:
    settings.JR2_RELAY_WAIT = 0.2

    async def body(web: Host, worker: Host) -> None:
        run_id = await web.start_run("review", {})
        await until(web, status(run_id, "waiting"))
        await die(worker)
        await asyncio.sleep(DUE_MS / 1000 + 0.3)  # due, but no worker fired it: the committed view shows it open
        with pytest.raises(InputPending):
            await web.deliver(run_id, "gate", **APPROVE, by="alice")
        await web.db(lambda: Run.objects.filter(id=run_id).update(lease_owner=""))
        later = Host({"review": review_machine()}, owner="worker-2", role="worker", scan_seconds=0.05)
        await later.start()
        try:
            row = await until(web, settled_row)
            assert row.status == "refused"
            assert (
                row.reason
                == "the Gate closed before your answer was delivered: the timer in review.waiting fired first"
            )
            run = await until(web, status(run_id, "waiting"))
            assert run.view["value"] == "escalated" and [g["id"] for g in run.view["gates"]] == ["lead"]
        finally:
            await later.stop()

    fleet(body, "web", "worker", workflows={"review": review_machine()})
