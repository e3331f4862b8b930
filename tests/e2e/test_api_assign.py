"""Assignment and claims on a real `jr2 up`, over HTTP and through `jr2`: an assigned Gate refuses others' answers
with 403 naming whom it is assigned to; a claim makes others' answers 409 naming the holder and when it ends; the
holder releases it; an operator breaks it; two claims at once over HTTP give exactly one holder; `jr2 send`'s
answer is journaled with the door "cli"; `jr2 cancel --reason` and `jr2 audit` print who did what."""

from __future__ import annotations

import csv
import io
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.databases import server_database
from tests.e2e.test_api import error
from tests.live_server import LiveServer, served

#: The Machine of tests/runtime/assigned.py as a workflow file of the server's own folder.
APPROVAL = {
    "approval.py": (Path(__file__).parent.parent / "runtime" / "assigned.py").read_text() + "\nmachine = approval\n"
}


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    with served(tmp_path_factory.mktemp("assign"), files=APPROVAL) as server:
        server.shell(
            "from django.contrib.auth.models import Group\n"
            "Group.objects.create(name='leads')\n"
            "from django.contrib.auth import get_user_model\n"
            "User = get_user_model()\n"
            "for name, groups in {'ann': ['gate-answerers'], 'lee': ['gate-answerers', 'leads'],"
            " 'bo': ['gate-answerers'], 'oscar': ['operators']}.items():\n"
            "    User.objects.create_user(name).groups.add(*Group.objects.filter(name__in=groups))\n"
        )
        yield server


def input_rows(live: LiveServer, run_id: str) -> list[tuple[object, ...]]:
    """The run's relayed inputs (RunInput rows), as the server's database holds them."""
    mark = "%s" if live.env.get("DATABASE_URL") else "?"
    with server_database(live) as db:
        return list(db.execute(f"SELECT id, status FROM engine_runinput WHERE run_id = {mark} ORDER BY id", (run_id,)))


def as_user(live: LiveServer, name: str) -> httpx.Client:
    return live.client(live.new_token(name))


def test_an_assigned_gate_and_its_claims_over_http(live: LiveServer) -> None:
    run_id = live.start_run("approval", {"title": "Ship 2.0"}, "waiting")
    gate = f"/api/runs/{run_id}/gates/review"
    bo, lee, ann, oscar = (as_user(live, n) for n in ("bo", "lee", "ann", "oscar"))
    shown = live.client().get(f"/api/runs/{run_id}").json()["gates"][0]
    assert shown["assign"] == ["user:ann", "group:leads"] and shown["claim"] is None

    detail = error(bo.post(f"{gate}/events", json={"type": "approve", "note": "ok"}), 403, "bo")
    assert "assigned to the user ann and the group leads" in detail
    error(bo.post(f"{gate}/claim"), 403)

    claimed = lee.post(f"{gate}/claim")
    assert claimed.status_code == 200, claimed.text
    assert claimed.json()["outcome"] == "claimed" and claimed.json()["by"] == "lee"
    detail = error(ann.post(f"{gate}/events", json={"type": "approve", "note": "ok"}), 409)
    assert "claimed by lee until" in detail
    error(ann.post(f"{gate}/claim"), 409)
    assert "only they may release it" in error(ann.delete(f"{gate}/claim"), 403)
    assert oscar.delete(f"{gate}/claim").json()["outcome"] == "broken"
    assert lee.post(f"{gate}/claim").status_code == 200
    assert lee.delete(f"{gate}/claim").json()["outcome"] == "released"
    inputs = input_rows(live, run_id)
    assert "is not claimed; there is nothing to release; nothing changed" in error(lee.delete(f"{gate}/claim"), 409)
    assert input_rows(live, run_id) == inputs, "a refused release writes nothing, not even a refused input"

    error(ann.post(f"{gate}/events", json={"type": "approve", "note": "  \n "}), 400, "note")
    answered = ann.post(f"{gate}/events", json={"type": "approve", "note": "Go."})
    assert answered.status_code == 200, answered.text
    kinds = [(e["entry"].get("action"), e["entry"]["by"]) for e in live.journal(run_id) if e["kind"] == "claim"]
    assert kinds == [("claim", "lee"), ("break", "oscar"), ("claim", "lee"), ("release", "lee")]
    for client in (bo, lee, ann, oscar):
        client.close()


def test_two_claims_at_once_over_http_give_exactly_one_holder(live: LiveServer) -> None:
    run_id = live.start_run("approval", {"title": "Race"}, "waiting")
    tokens = {name: live.new_token(name) for name in ("ann", "lee")}
    results: dict[str, int] = {}

    def claim(name: str) -> None:
        with live.client(tokens[name]) as client:
            results[name] = client.post(f"/api/runs/{run_id}/gates/review/claim").status_code

    threads = [threading.Thread(target=claim, args=(name,)) for name in tokens]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(results.values()) == [200, 409], results
    holder = next(name for name, code in results.items() if code == 200)
    assert live.client().get(f"/api/runs/{run_id}").json()["gates"][0]["claim"]["by"] == holder


def test_the_cli_answers_through_its_door_cancels_with_a_reason_and_prints_the_audit(live: LiveServer) -> None:
    run_id = live.start_run("approval", {"title": "By the CLI"}, "waiting")
    ann = {"JR2_TOKEN": live.new_token("ann")}
    sent = live.jr2("send", run_id, "--gate", "review", "--event", "approve", "--input", '{"note": "ok"}', env=ann)
    assert sent.returncode == 0, sent.stdout + sent.stderr
    entry = next(e["entry"] for e in live.journal(run_id) if e["kind"] == "gate")
    assert (entry["by"], entry["door"]) == ("ann", "cli")

    other = live.start_run("notes", {"changes": "One fix."}, "waiting")
    oscar = {"JR2_TOKEN": live.new_token("oscar")}
    cancelled = live.jr2("cancel", other, "--reason", "wrong changes", env=oscar)
    assert cancelled.returncode == 0, cancelled.stdout + cancelled.stderr
    printed = live.jr2("audit", "--csv", env=oscar)
    assert printed.returncode == 0, printed.stdout + printed.stderr
    rows = list(csv.DictReader(io.StringIO(printed.stdout)))
    assert {"user": "ann", "action": "answer", "run": run_id, "door": "cli"}.items() <= next(
        r for r in rows if r["run"] == run_id and r["action"] == "answer"
    ).items()
    cancel = next(r for r in rows if r["run"] == other)
    assert cancel["action"] == "cancel" and cancel["user"] == "oscar" and "wrong changes" in cancel["detail"]
    table = live.jr2("audit", "--user", "ann", env=oscar)
    assert run_id in table.stdout and other not in table.stdout
    refused = live.jr2("audit", env=ann)
    assert refused.returncode == 2 and "engine.cancel_run" in refused.stdout + refused.stderr
    assert Path(live.folder).exists()
