"""Parking (engine/runtime/parking.py): a run that only waits keeps no driver in the host, only its id and its
lease; any input takes it up again from the database, once, and every guarantee holds: exactly-once delivery, the
lease renewed and handed back, fencing when another host took the run, the API's reads. Real hosts on a real
database (SQLite here, PostgreSQL with DATABASE_URL)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from django.contrib.auth.models import Permission, User
from django.test import AsyncClient

from engine.models import ApiToken, JournalEntry, Run, RunInput
from engine.runtime.host import Host
from tests.runtime.hosting import NOTES_DOOR, NOTES_GATE, fleet, hosted, scripted, status, until  # noqa: F401 - scripted is a fixture
from workflows import notes

#: Every test on the database, the notes workflow's scripted writer playing (`scripted`, imported above).
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("scripted")]


class Counting(Host):
    """A real host that counts its take-ups of parked runs."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.unparked: list[str] = []

    async def _unpark(self, run_id: str, workflow: str) -> None:
        self.unparked.append(run_id)
        await super()._unpark(run_id, workflow)


async def parked(host: Host) -> str:
    """A notes run waiting at its Gate, parked: no driver, only its id."""
    run_id = await host.start_run("notes", NOTES_DOOR)
    await until(host, status(run_id, "waiting"))
    for _ in range(200):
        if run_id in host.parking.runs:
            break
        await asyncio.sleep(0.01)
    assert run_id in host.parking.runs and run_id not in host.drivers
    assert host.held_status(run_id) == "waiting" and host.holds(run_id)
    return run_id


def test_a_parked_run_is_answered_and_finishes_with_the_notes_from_its_reply() -> None:
    async def body(host: Host) -> None:
        run_id = await parked(host)
        delivery = await host.deliver(run_id, "gate", gate=NOTES_GATE, event="reply", params={"text": "Admins"})
        assert delivery.outcome == "delivered"
        run = await until(host, status(run_id, "done"))
        assert "Written for: Admins" in run.output["notes"]
        assert (run.lease_owner, run.lease_expires) == ("", None)
        assert not host.holds(run_id)
        assert await host.db(lambda: JournalEntry.objects.filter(run_id=run_id, kind="gate").count()) == 1

    hosted({"notes": notes.machine}, body, park_seconds=0)


def test_two_answers_racing_on_a_parked_run_take_it_up_once_and_deliver_one() -> None:
    async def main() -> None:
        host = Counting({"notes": notes.machine}, owner="racer", park_seconds=0)
        await host.start()
        try:
            run_id = await parked(host)
            first, second = await asyncio.gather(
                *(
                    host.deliver(run_id, "gate", gate=NOTES_GATE, event="reply", params={"text": text})
                    for text in ("Ann", "Bo")
                )
            )
            outcomes = sorted([first.outcome, second.outcome])
            assert outcomes[0] == "delivered" and outcomes[1] != "delivered", (first, second)
            assert host.unparked == [run_id]
            run = await until(host, status(run_id, "done"))
            winner = "Ann" if first.outcome == "delivered" else "Bo"
            assert f"Written for: {winner}" in run.output["notes"]
            assert await host.db(lambda: JournalEntry.objects.filter(run_id=run_id, kind="gate").count()) == 1
            rows = await host.db(
                lambda: sorted(RunInput.objects.filter(run_id=run_id).values_list("status", flat=True))
            )
            assert rows == ["delivered", "refused"]
        finally:
            await host.stop()

    asyncio.run(main())


def test_a_parked_runs_lease_is_renewed_and_handed_back_at_stop() -> None:
    made: dict[str, Any] = {}

    async def body(host: Host) -> None:
        run_id = await parked(host)
        before = await host.db(lambda: Run.objects.get(id=run_id).lease_expires)
        await asyncio.sleep(0.5)  # renewed every 0.2 s
        after = await host.db(lambda: Run.objects.get(id=run_id))
        assert after.lease_owner == "parker" and after.lease_expires > before
        assert run_id in host.parking.runs
        made["run"] = run_id

    hosted({"notes": notes.machine}, body, owner="parker", lease_seconds=0.6, park_seconds=0)
    run = Run.objects.get(id=made["run"])
    assert (run.status, run.lease_owner, run.lease_expires) == ("waiting", "", None)


def test_a_host_restarted_takes_its_parked_runs_up_and_they_finish() -> None:
    made: dict[str, str] = {}

    async def first(host: Host) -> None:
        made["run"] = await parked(host)

    async def second(host: Host) -> None:
        assert host.holds(made["run"])  # taken up at start, parked again
        delivery = await host.deliver(made["run"], "gate", gate=NOTES_GATE, event="reply", params={"text": "Ops"})
        assert delivery.outcome == "delivered"
        assert "Written for: Ops" in (await until(host, status(made["run"], "done"))).output["notes"]

    hosted({"notes": notes.machine}, first, owner="same", park_seconds=0)
    hosted({"notes": notes.machine}, second, owner="same", park_seconds=0)


def test_a_parked_run_taken_over_by_another_host_is_not_delivered_by_the_one_that_lost_it() -> None:
    """Worker 1 parks the run, then loses its lease (it looked dead, its lease expired) and worker 2 takes the run
    over. Worker 1 has not heard yet (its renewal is far off) and is sent an answer: its take-up finds the lease
    gone, delivers nothing, and keeps the input for the holder, which delivers it once."""

    async def body(worker: Host, other: Host) -> None:
        run_id = await parked(worker)
        assert not other.holds(run_id)
        # worker 2 claimed it once its lease ran out (as `store.claim_runs` leases it) and took it up
        await worker.db(lambda: Run.objects.filter(id=run_id).update(lease_owner="worker-2"))
        await other._take_up(run_id, "notes")
        await until(worker, lambda: other.holds(run_id))
        assert run_id in worker.parking.runs  # worker 1 does not know yet
        delivery = await worker.deliver(run_id, "gate", gate=NOTES_GATE, event="reply", params={"text": "Night owls"})
        assert delivery.outcome == "delivered"
        run = await until(worker, status(run_id, "done"))
        assert "Written for: Night owls" in run.output["notes"]
        assert not worker.holds(run_id) and run_id not in worker.drivers
        [row] = await worker.db(lambda: list(RunInput.objects.filter(run_id=run_id).values("status", "answered_by")))
        assert row == {"status": "delivered", "answered_by": "worker-2"}
        assert await worker.db(lambda: JournalEntry.objects.filter(run_id=run_id, kind="gate").count()) == 1

    fleet(body, "worker", "worker", lease_seconds=60, park_seconds=0)


def test_a_parked_run_is_cancelled() -> None:
    async def body(host: Host) -> None:
        run_id = await parked(host)
        await host.cancel(run_id, by="ada", reason="not needed")
        run = await until(host, status(run_id, "cancelled"))
        assert (run.lease_owner, run.lease_expires) == ("", None)
        assert not host.holds(run_id)

    hosted({"notes": notes.machine}, body, park_seconds=0)


def test_the_api_reads_a_parked_runs_status_and_answers_it() -> None:
    user = User.objects.create_user("caller")
    user.user_permissions.add(*Permission.objects.filter(codename__in=["start_run", "answer_gate", "view_run"]))
    key = ApiToken.issue(user)[1]

    async def body(host: Host) -> None:
        client, auth = AsyncClient(), {"Authorization": f"Bearer {key}"}
        run_id = await parked(host)
        read = await client.get(f"/api/runs/{run_id}", headers=auth)
        assert read.status_code == 200, read.content
        shown = json.loads(read.content)
        assert shown["status"] == "waiting" and NOTES_GATE in json.dumps(shown.get("gates", shown))
        answered = await client.post(
            f"/api/runs/{run_id}/gates/{NOTES_GATE}/events",
            {"type": "reply", "text": "Admins."},
            "application/json",
            headers=auth,
        )
        assert answered.status_code == 200, answered.content
        assert answered.json()["outcome"] == "delivered" and answered.json()["status"] in ("running", "waiting", "done")
        await until(host, status(run_id, "done"))
        read = await client.get(f"/api/runs/{run_id}", headers=auth)
        assert json.loads(read.content)["status"] == "done"

    hosted({"notes": notes.machine}, body, park_seconds=0)


def test_a_run_is_parked_once_idle_for_the_park_seconds_not_before() -> None:
    async def body(host: Host) -> None:
        run_id = await host.start_run("notes", NOTES_DOOR)
        await until(host, status(run_id, "waiting"))
        assert run_id in host.drivers  # idle for less than 0.5 s: kept
        await asyncio.sleep(1.0)  # looked at every 0.2 s (a third of the lease)
        assert run_id in host.parking.runs and run_id not in host.drivers
        assert (
            await host.deliver(run_id, "gate", gate=NOTES_GATE, event="reply", params={"text": "Later"})
        ).outcome == "delivered"
        assert "Written for: Later" in (await until(host, status(run_id, "done"))).output["notes"]

    hosted({"notes": notes.machine}, body, lease_seconds=0.6, park_seconds=0.5)
