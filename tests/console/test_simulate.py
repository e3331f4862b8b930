"""The simulator page (/workflows/<name>/simulate/): a run played by hand in the user's Django session, every
control a POST, htmx getting the region back; and a recorded run loaded up to step N."""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from engine.core.journal.scenario_replay import check
from engine.core.scenarios import Scenario
from engine.models import JournalEntry
from tests.console.conftest import logged_in
from tests.live_server import copy_workflows
from tests.simulation.lab import machine as lab_machine

pytestmark = pytest.mark.django_db(transaction=True)
URL = "/workflows/lab/simulate/"
HX = {"HX-Request": "true"}


@pytest.fixture
def lab(settings: Any, tmp_path: Path) -> Path:
    folder = copy_workflows(
        tmp_path / "workflows", {"lab.py": "from tests.simulation.lab import machine  # noqa: F401\n"}
    )
    settings.JR2_WORKFLOWS = str(folder)
    settings.JR2_SCRIPTED = True
    return folder


def post(client: Client, data: dict[str, Any], hx: bool = True) -> str:
    response = client.post(URL, data, headers=HX if hx else {})
    assert response.status_code == (200 if hx else 302), response.content[:500]
    return response.content.decode() if hx else client.get(URL).content.decode()


def send(client: Client, kind: str, by: str, event: str, prefix: str = "o0", **fields: Any) -> str:
    data = {"action": "send", "kind": kind, "by": by, "event": event, "prefix": prefix}
    data.update({f"{prefix}-{k}": v for k, v in fields.items()})
    return post(client, data)


def offer(page: str, event: str) -> str:
    match = re.search(rf'<details class="sim-offer[^"]*"[^>]*data-event="{re.escape(event)}".*?</details>', page, re.S)
    assert match, f"no offer of {event}"
    return match.group(0)


def test_start_then_play_a_run_by_hand(lab: Path, observer: Any) -> None:
    client = logged_in(observer)
    page = client.get(URL).content.decode()
    assert "Start a simulation" in page and 'name="topic"' in page
    assert 'data-event="search"' in page  # the graph's edges carry their event
    assert "missing" in post(client, {"action": "start"}) or "not valid" in post(client, {"action": "start"})

    page = post(client, {"action": "start", "topic": "tides"})
    finish = offer(page, "finish")
    assert (
        "not allowed" in finish and html.escape('the guard [context["found"] > 0] of researching was false') in finish
    )
    assert 'id="sim-now">0 ms' in page and "next timer in" in page

    page = send(client, "pick", "researcher", "search", prefix="o1", query="moon")
    assert "outstanding" in page and "researching.searching" in page
    page = send(client, "pick", "researcher", "finish", prefix="o0", summary="early")
    assert "the pick &quot;search&quot; is outstanding" in page
    effect = re.search(r'data-kind="effect_done" data-by="([^"]+)"', page)
    assert effect
    page = send(
        client,
        "effect_done",
        effect.group(1),
        "xstate.done.actor.0.lab.researching.searching",
        prefix="o2",
        output='{"hits": 2}',
    )
    assert re.search(r'<tr class="changed" data-key="found">', page)
    assert "allowed" in offer(page, "finish") and "not allowed" not in offer(page, "finish")

    page = post(client, {"action": "undo"})
    assert "researching.searching" in page and 'class="changed" data-key="found"' not in page
    page = post(client, {"action": "redo"})
    assert 'class="changed" data-key="found"' in page
    page = post(client, {"action": "next-timer"})
    assert 'id="sim-status">done' in page and "xstate.after.60000.lab.researching" in page
    page = post(client, {"action": "reset"})
    assert 'id="sim-now">0 ms' in page
    page = post(client, {"action": "advance", "ms": "-4"})
    assert "positive number of ms" in page


def test_bad_input_is_refused_in_words_and_changes_nothing(lab: Path, observer: Any) -> None:
    client = logged_in(observer)
    post(client, {"action": "start", "topic": "tides"})
    assert client.post(URL, {"action": "teleport"}).status_code == 400
    assert client.post(URL, {"action": "send", "kind": "spell"}).status_code == 400
    page = send(client, "gate", "nobody", "approve")
    assert "is not offered now; nothing was sent" in page
    page = send(client, "pick", "researcher", "search", prefix="o1")
    assert "not valid" in page and "This field is required" in page
    page = post(client, {"action": "advance", "ms": "soon"})
    assert "advance takes a number of ms" in page
    assert post(client, {"action": "undo"}, hx=False)  # a plain form post is redirected back to the page


def test_everything_from_the_workflow_is_escaped(lab: Path, observer: Any) -> None:
    client = logged_in(observer)
    page = post(client, {"action": "start", "topic": "<script>alert(1)</script>"})
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;" in page


def test_a_recorded_run_is_simulated_from_step_n(runs: dict[str, str], observer: Any) -> None:
    client = logged_in(observer)
    run_id = runs["done"]
    steps = list(JournalEntry.objects.filter(run_id=run_id).order_by("seq").values_list("seq", "kind"))
    pick = next(seq for seq, kind in steps if kind == "pick")
    response = client.post(f"/runs/{run_id}/simulate/", {"step": str(pick)})
    assert response.status_code == 302 and response["Location"] == "/workflows/notes/simulate/"
    page = client.get("/workflows/notes/simulate/").content.decode()
    assert "from run" in page and run_id in page and f"up to step {pick}" in page
    assert "writing.asking" in page and 'data-event="reply"' in page
    assert client.post(f"/runs/{run_id}/simulate/", {"step": "x"}).status_code == 400
    assert client.post(f"/runs/{run_id}/simulate/", {"step": "0"}).status_code == 400
    assert client.post("/runs/nope/simulate/", {"step": "1"}).status_code == 404
    assert "Simulate from step" in client.get(f"/runs/{run_id}/replay/").content.decode()
    assert 'id="simulate-link"' in client.get("/workflows/notes/").content.decode()


def test_save_as_scenario_writes_the_scenario_jr2_test_replays(lab: Path, operator: Any, observer: Any) -> None:
    client = logged_in(operator)
    page = post(client, {"action": "start", "topic": "tides"})
    assert 'id="sim-save"' in page
    page = send(client, "pick", "researcher", "search", prefix="o1", query="moon")
    page = post(client, {"action": "save", "scenario": "one_search", "description": "a search", "allowed": "1"})
    assert "saved as scenario one_search (one_search.json)" in page and 'class="ok sim-message"' in page
    path = lab / "lab.scenarios" / "one_search.json"
    scenario = Scenario.from_text(path.read_text(encoding="utf-8"))
    assert scenario.workflow == "lab" and scenario.input == {"topic": "tides"} and len(scenario.inputs) == 1
    assert scenario.expect.state == ["lab.researching.searching"]
    assert [(a.step, a.agent, a.picks) for a in scenario.expect.allowed] == [(2, "researcher", [])]
    assert check(lab_machine, scenario).ok

    page = post(client, {"action": "save", "scenario": "one_search"})
    assert "exists" in page and "replace it" in page
    assert "not saved" in post(client, {"action": "save", "scenario": "../up"})
    assert not (lab / "up.json").exists()
    assert post(client, {"action": "save", "scenario": "one_search", "overwrite": "1"}).count("saved as scenario") == 1

    reader = logged_in(observer)
    post(reader, {"action": "start", "topic": "tides"})
    assert 'id="sim-save"' not in reader.get(URL).content.decode()
    assert reader.post(URL, {"action": "save", "scenario": "x"}, headers=HX).status_code == 403
