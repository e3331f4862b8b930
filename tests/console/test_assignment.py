"""Assigned and claimed Gates in the Console, with a real Host on the test database: only those a Gate is assigned
to (and superusers) get its forms and may answer it; the card says whom it is assigned to and who holds its claim;
Claim, Release and Break buttons work and are journaled with the door "console"; the inbox's "whose" filters and
the header's count are the user's own; a cancel says who and why; the audit page lists it all, and its CSV."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from django.test import AsyncClient

from engine.models import GateRecord, JournalEntry, Run
from engine.runtime.host import Host
from tests.console.conftest import WORKFLOWS, _until, logged_in, user_in
from tests.console.test_inbox import items, with_host
from tests.live_server import copy_workflows
from tests.runtime.assigned import approval

APPROVAL = {"approval.py": "from tests.runtime.assigned import approval as machine  # noqa: F401\n"}


@pytest.fixture
def folder(settings: Any, tmp_path: Path, transactional_db: Any) -> Iterator[Path]:
    settings.JR2_WORKFLOWS = str(copy_workflows(tmp_path / "workflows", APPROVAL))
    settings.JR2_SCRIPTED = True
    WORKFLOWS["approval"] = approval
    yield Path(settings.JR2_WORKFLOWS)
    WORKFLOWS.pop("approval", None)


@pytest.fixture
def people(folder: Path) -> dict[str, User]:
    """ann (named), lee (in the group leads), bo (may answer Gates, not assigned), oscar (an operator)."""
    leads, _ = Group.objects.get_or_create(name="leads")
    made = {
        "ann": user_in("ann", "gate-answerers"),
        "lee": user_in("lee", "gate-answerers"),
        "bo": user_in("bo", "gate-answerers"),
        "oscar": user_in("oscar", "operators"),
    }
    made["lee"].groups.add(leads)
    return made


async def client_of(user: User) -> AsyncClient:
    client = AsyncClient()
    await client.aforce_login(user)
    return client


def test_only_those_assigned_may_answer_and_claims_hold_in_the_console(people: dict[str, User]) -> None:
    async def body(host: Host) -> dict[str, Any]:
        run_id = await host.start_run("approval", {"title": "Ship 2.0"})
        notes_id = await host.start_run("notes", {"changes": "One fix."})
        await _until(host, run_id, "waiting")
        await _until(host, notes_id, "waiting")
        seen: dict[str, Any] = {"run": run_id, "notes": notes_id}
        bo, lee, oscar = [await client_of(people[n]) for n in ("bo", "lee", "oscar")]
        seen["bo_page"] = (await bo.get(f"/runs/{run_id}/")).content.decode()
        seen["bo_answer"] = await bo.post(f"/runs/{run_id}/gates/review/", {"_event": "approve", "note": "ok"})
        seen["bo_claim"] = await bo.post(f"/runs/{run_id}/claims/review/", {"action": "claim"})
        seen["lee_claim"] = await lee.post(f"/runs/{run_id}/claims/review/", {"action": "claim", "next": "/gates/"})
        seen["lee_page"] = (await lee.get(f"/runs/{run_id}/")).content.decode()
        ann = await client_of(people["ann"])
        seen["ann_page"] = (await ann.get(f"/runs/{run_id}/")).content.decode()
        seen["ann_answer"] = await ann.post(f"/runs/{run_id}/gates/review/", {"_event": "approve", "note": "ok"})
        seen["bo_break"] = await bo.post(f"/runs/{run_id}/claims/review/", {"action": "break"})
        seen["oscar_break"] = await oscar.post(f"/runs/{run_id}/claims/review/", {"action": "break"})
        seen["blank"] = await ann.post(f"/runs/{run_id}/gates/review/", {"_event": "approve", "note": "   "})
        seen["ann_answer_2"] = await ann.post(f"/runs/{run_id}/gates/review/", {"_event": "approve", "note": "Go."})
        await _until(host, run_id, "done")
        seen["cancel"] = await oscar.post(f"/runs/{notes_id}/cancel/", {"reason": "wrong changes"})
        await _until(host, notes_id, "cancelled")
        return seen

    seen = with_host(body)
    run_id = seen["run"]
    assert "Assigned to the user ann and the group leads." in seen["bo_page"]
    assert "you may read it but not answer it" in seen["bo_page"] and "Send approve" not in seen["bo_page"]
    assert seen["bo_answer"].status_code == 403
    assert 'user "bo" may not answer Gate "review": it is assigned to the user ann and the group leads' in (
        seen["bo_answer"].content.decode()
    )
    assert seen["bo_claim"].status_code == 403
    assert seen["lee_claim"].status_code == 302 and seen["lee_claim"]["Location"] == "/gates/"
    assert "Claimed by <strong>lee</strong>" in seen["lee_page"] and "Release" in seen["lee_page"]
    assert "lee has claimed it until" in seen["ann_page"] and "Send approve" not in seen["ann_page"]
    assert seen["ann_answer"].status_code == 409 and "claimed by lee until" in seen["ann_answer"].content.decode()
    assert seen["bo_break"].status_code == 403
    assert seen["oscar_break"].status_code == 302
    assert seen["blank"].status_code == 400 and "only whitespace is not an answer" in seen["blank"].content.decode()
    answer = JournalEntry.objects.get(run_id=run_id, kind="gate").entry
    assert (answer["by"], answer["door"], answer["params"]) == ("ann", "console", {"note": "Go."})
    claims = [e.entry for e in JournalEntry.objects.filter(run_id=run_id, kind="claim").order_by("seq")]
    assert [(c["action"], c["by"], c["door"]) for c in claims] == [
        ("claim", "lee", "console"),
        ("break", "oscar", "console"),
    ]
    cancel = JournalEntry.objects.get(run_id=seen["notes"], kind="cancel").entry
    assert (cancel["by"], cancel["door"], cancel["reason"]) == ("oscar", "console", "wrong changes")
    page = logged_in(people["oscar"]).get(f"/runs/{seen['notes']}/").content.decode()
    assert "The run was cancelled by oscar (in the Console): wrong changes." in page
    done = logged_in(people["oscar"]).get(f"/runs/{run_id}/").content.decode()
    assert "review got approve from ann in the Console" in done

    audit = logged_in(people["oscar"])
    listed = audit.get("/audit/?workflow=approval").content.decode()
    assert "ann" in listed and "answer" in listed and "break" in listed and "notes" not in listed.split("<tbody>")[1]
    by_lee = audit.get("/audit/?user=lee").content.decode().split("<tbody>")[1]
    assert "lee claimed the Gate review" in by_lee and "ann" not in by_lee
    exported = audit.get("/audit/?format=csv")
    assert exported["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(exported.content.decode())))
    assert {(r["user"], r["action"]) for r in rows} >= {
        ("ann", "answer"),
        ("lee", "claim"),
        ("oscar", "break"),
        ("oscar", "cancel"),
    }
    assert audit.get("/audit/?since=yesterday").status_code == 400
    assert logged_in(people["bo"]).get("/audit/").status_code == 403


def test_the_inbox_filters_by_whose_and_counts_what_the_user_may_answer(people: dict[str, User]) -> None:
    async def body(host: Host) -> dict[str, str]:
        assigned = await host.start_run("approval", {"title": "Ship 2.0"})
        free = await host.start_run("notes", {"changes": "One fix."})
        await _until(host, assigned, "waiting")
        await _until(host, free, "waiting")
        await host.claim(free, "writing.asking", "claim", "lee")
        return {"assigned": assigned, "free": free}

    made = with_host(body)
    assigned = str(GateRecord.objects.get(run_id=made["assigned"]).pk)
    free = str(GateRecord.objects.get(run_id=made["free"]).pk)
    lee, bo, ann = (logged_in(people[n]) for n in ("lee", "bo", "ann"))
    assert items(lee.get("/gates/?who=groups").content.decode()) == [assigned]
    assert items(lee.get("/gates/?who=me").content.decode()) == []
    assert items(ann.get("/gates/?who=me").content.decode()) == [assigned]
    assert items(lee.get("/gates/?who=unassigned").content.decode()) == [free]
    assert items(lee.get("/gates/?who=claimed").content.decode()) == [free]
    assert items(bo.get("/gates/?who=claimed").content.decode()) == []
    assert 'id="gate-count-n">2<' in lee.get("/").content.decode()
    assert 'id="gate-count-n">1<' in bo.get("/").content.decode()  # the unassigned one only
    wrong = lee.get("/gates/?who=everybody")
    assert wrong.status_code == 400 and "who: &quot;everybody&quot; is not one of" in wrong.content.decode()
    assert Run.objects.filter(id=made["free"]).exists()
