"""A claim's runs are taken up in one call with one read of each kind for them all (`store.take_up_claimed`), and
each reads exactly what taking it up alone reads."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from engine.models import Run
from engine.runtime import store
from engine.runtime.host import Host
from tests.runtime.hosting import NOTES_DOOR, NOTES_GATE, hosted, scripted, status, until  # noqa: F401 - scripted is a fixture
from workflows import notes

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("scripted")]


def waiting_runs(n: int, answered: int = 0) -> list[Run]:
    """`n` notes runs written by a host that then stopped: each waits at its Gate, but the first `answered` are
    answered and done (more Turns, messages and a tail of journal)."""
    ids: list[str] = []

    async def body(host: Host) -> None:
        for _ in range(n):
            run_id = await host.start_run("notes", NOTES_DOOR)
            await until(host, status(run_id, "waiting"))
            ids.append(run_id)
        for run_id in ids[:answered]:
            await host.deliver(run_id, "gate", gate=NOTES_GATE, event="reply", params={"text": "Admins"})
            await until(host, status(run_id, "done"))

    hosted({"notes": notes.machine}, body)
    return list(Run.objects.filter(id__in=ids).order_by("created_at"))


def fields(taken: store.TakeUp) -> dict[str, Any]:
    resume = taken.resume
    return {
        "run": resume.run.id,
        "snapshot": (resume.snapshot_seq, resume.snapshot),
        "tail": resume.tail,
        "turns": {turn: record.pk for turn, record in resume.turns.items()},
        "latest": resume.latest,
        "conversations": resume.conversations,
        "message_seqs": resume.message_seqs,
        "effects": sorted(resume.effects),
        "model_calls": resume.model_calls,
        "seats": resume.seats,
        "kept": taken.kept,
    }


def test_a_claims_runs_read_together_are_each_what_it_reads_alone() -> None:
    runs = waiting_runs(3, answered=1)
    digests = {run.id: notes.machine.digest for run in runs}
    store.post_input(runs[1].id, "cancel", {"by": "ada"}, "ada")  # kept for the second run only
    Run.objects.filter(id__in=digests).update(lease_owner="me")
    together = store.take_up_claimed(runs, "me", digests)
    for run in runs:
        alone = store.take_up(run.id, "me", 30, notes.machine.digest, run)
        assert alone is not None
        assert fields(together[run.id]) == fields(alone)
    assert [len(together[run.id].kept) for run in runs] == [0, 1, 0]
    assert together[runs[0].id].resume.tail or runs[0].seq == together[runs[0].id].resume.snapshot_seq


def test_taking_up_many_runs_reads_no_more_than_taking_up_one() -> None:
    runs = waiting_runs(4)
    digests = {run.id: notes.machine.digest for run in runs}
    with CaptureQueriesContext(connection) as one:
        store.take_up_claimed(runs[:1], "me", digests)
    with CaptureQueriesContext(connection) as four:
        store.take_up_claimed(runs, "me", digests)
    assert len(four.captured_queries) == len(one.captured_queries) <= 8


def test_a_run_whose_workflow_changed_shape_is_read_but_not_resumed() -> None:
    runs = waiting_runs(2)
    store.post_input(runs[0].id, "cancel", {"by": "ada"}, "ada")
    Run.objects.filter(id=runs[0].id).update(lease_owner="me")
    taken = store.take_up_claimed(runs, "me", {runs[0].id: "another shape", runs[1].id: notes.machine.digest})
    assert taken[runs[0].id].kept == []  # a drifted run's inputs are left for whoever drives it
    assert taken[runs[0].id].resume.run.id == runs[0].id


def test_a_claimed_run_that_cannot_be_read_is_left_and_the_rest_of_its_claim_is_taken_up() -> None:
    from engine.models import RunSnapshot

    bad, good = waiting_runs(2)  # the older one first: a claim takes it up first
    RunSnapshot.objects.filter(run_id=bad.id).delete()  # nothing to resume it from
    Run.objects.filter(id__in=[good.id, bad.id]).update(lease_owner="", lease_expires=None)

    async def body(host: Host) -> None:
        await until(host, lambda: good.id in host.drivers)
        assert bad.id not in host.drivers
        assert host.drivers[good.id].status == "waiting"

    hosted({"notes": notes.machine}, body, owner="another-host")
