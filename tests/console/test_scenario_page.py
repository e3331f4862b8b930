"""The run page's "Save as scenario": a finished run written next to its workflow (then `jr2 test` passes on it),
downloaded as the file, or refused in words with nothing written (an unfinished run, a bad or taken name, a
reader without the permission)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engine.core.journal.scenario_replay import check
from engine.core.scenarios import Scenario
from engine.runtime.registry import reload_workflows
from tests.console.conftest import logged_in
from tests.live_server import copy_workflows
from workflows import notes

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def folder(settings: Any, tmp_path: Path) -> Iterator[Path]:
    made = copy_workflows(tmp_path / "workflows")
    settings.JR2_WORKFLOWS = str(made)
    reload_workflows()
    yield made
    settings.JR2_WORKFLOWS = None
    reload_workflows()


def test_a_finished_run_is_saved_as_a_scenario_that_passes(folder: Path, operator: Any, runs: dict[str, str]) -> None:
    run_id = runs["done"]
    page = logged_in(operator).get(f"/runs/{run_id}/").content.decode()
    assert f'href="/runs/{run_id}/scenario/" id="run-scenario-link">Save as scenario</a>' in page
    form = logged_in(operator).get(f"/runs/{run_id}/scenario/").content.decode()
    assert 'id="scenario-form"' in form and "&quot;kind&quot;: &quot;gate&quot;" in form
    response = logged_in(operator).post(
        f"/runs/{run_id}/scenario/", {"name": "admins_reply", "description": "<b>Admins</b> reply"}
    )
    body = response.content.decode()
    path = folder / "notes.scenarios" / "admins_reply.json"
    assert response.status_code == 200 and f"Saved as <code>{path}</code>" in body
    assert "&lt;b&gt;Admins&lt;/b&gt; reply" in body and "<b>Admins</b>" not in body
    scenario = Scenario.from_text(path.read_text())
    assert scenario.description == "<b>Admins</b> reply"
    assert (scenario.expect.status, scenario.expect.state) == ("done", ["notes.published"])
    assert any(item.kind == "gate" for item in scenario.inputs)
    assert check(notes.machine, scenario).ok
    again = logged_in(operator).post(f"/runs/{run_id}/scenario/", {"name": "admins_reply"})
    assert again.status_code == 400 and "exists: tick Overwrite to replace it" in again.content.decode()
    download = logged_in(operator).get(f"/runs/{run_id}/scenario/?download=1&name=admins_reply")
    assert download["Content-Disposition"] == 'attachment; filename="admins_reply.json"'
    assert json.loads(download.content)["inputs"] == json.loads(path.read_text())["inputs"]


def test_refusals_write_nothing(folder: Path, operator: Any, observer: Any, runs: dict[str, str]) -> None:
    waiting = logged_in(operator).get(f"/runs/{runs['waiting']}/").content.decode()
    assert 'id="run-scenario-link"' not in waiting
    live = logged_in(operator).post(f"/runs/{runs['waiting']}/scenario/", {"name": "x"})
    assert live.status_code == 400
    assert "is waiting: only a finished run can be saved as a scenario" in live.content.decode()
    bad = logged_in(operator).post(f"/runs/{runs['done']}/scenario/", {"name": "../escape"})
    assert bad.status_code == 400 and "&#x27;../escape&#x27; is not a scenario name" in bad.content.decode()
    assert 'id="scenario-form"' not in logged_in(observer).get(f"/runs/{runs['done']}/scenario/").content.decode()
    assert logged_in(observer).post(f"/runs/{runs['done']}/scenario/", {"name": "x"}).status_code == 403
    assert not (folder / "notes.scenarios" / "x.json").exists()
    assert sorted(p.name for p in (folder / "notes.scenarios").iterdir()) == [
        "asks_then_publishes.json",
        "fault_while_asking.json",
    ]
    assert logged_in(operator).get("/runs/nosuchrun/scenario/").status_code == 404
