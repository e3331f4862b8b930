"""`jr2 test` and `jr2 scenario save` on a copy of the examples' folder: the shipped scenarios pass; after the
Machine is edited the first divergence is named in replay's words; --junit writes JUnit XML; --update rewrites
the expectations; a bad file is named with its field; a finished run saved as a scenario passes."""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from engine.core.scenarios import Scenario, schema
from engine.web.exchange import import_run

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "workflows"
FIXTURES = ROOT / "tests" / "fixtures"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """The examples (and their scenarios) copied, so a test can edit a Machine."""
    for path in EXAMPLES.iterdir():
        if path.suffix == ".py" or path.name.endswith(".scenarios"):
            (shutil.copytree if path.is_dir() else shutil.copy)(path, tmp_path / path.name)
    return tmp_path


def jr2(*args: str) -> tuple[int, str, str]:
    out, err = StringIO(), StringIO()
    try:
        call_command("jr2", *args, stdout=out, stderr=err)
        code = 0
    except SystemExit as exited:
        code = int(exited.code or 0)
    return code, out.getvalue(), err.getvalue()


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


def test_the_shipped_scenarios_pass(folder: Path) -> None:
    code, out, _ = jr2("test", "--workflows", str(folder))
    assert code == 0, out
    lines = out.splitlines()
    assert "notes/asks_then_publishes: ok (4 steps)" in lines
    assert lines[-1] == "6 scenarios of 3 workflows: 6 ok"
    assert all(line.split(": ", 1)[1].startswith("ok (") for line in lines[:-1])


def test_an_edited_guard_fails_with_the_first_divergence_named(folder: Path) -> None:
    edit(folder / "notes.py", 'context["replies"] > 0', 'context["replies"] > 1')
    code, out, _ = jr2("test", "notes", "--workflows", str(folder))
    assert code == 1
    assert (
        'notes/asks_then_publishes: step 4: writer picked done {notes: "## 1.1\\n- Faster start-up\\n- A --quiet '
        'fla…"}: now unmoved: not allowed in notes.writing.drafting (allowed now: ask)'
    ) in out.splitlines()
    assert out.splitlines()[-1] == "2 scenarios of 1 workflow: 1 ok, 1 diverged"


def test_an_edited_output_fails_at_the_end_and_update_rewrites_it(folder: Path) -> None:
    edit(folder / "notes.py", '{"notes": context.get("notes", "")}', '{"text": context.get("notes", "")}')
    code, out, _ = jr2("test", "notes", "--workflows", str(folder))
    assert code == 1
    assert (
        'notes/asks_then_publishes: the end (step 4): output now {text: "## 1.1\\n- Faster start-up\\n- A --quiet '
        'fla…"}, expected {notes: "## 1.1\\n- Faster start-up\\n- A --quiet fla…"}'
    ) in out.splitlines()
    code, out, _ = jr2("test", "notes", "--workflows", str(folder), "--update")
    assert code == 0, out
    assert "notes/asks_then_publishes: updated: its expectations are what the Machine comes to now" in out
    assert out.splitlines()[-1] == "2 scenarios of 1 workflow: 2 ok, 1 updated"
    assert "notes/fault_while_asking: ok (unchanged)" in out
    saved = json.loads((folder / "notes.scenarios" / "asks_then_publishes.json").read_text())
    shipped = json.loads((EXAMPLES / "notes.scenarios" / "asks_then_publishes.json").read_text())
    assert saved["expect"]["output"] == {"text": shipped["expect"]["output"]["notes"]}
    assert saved["inputs"] == shipped["inputs"]
    assert jr2("test", "notes", "--workflows", str(folder))[0] == 0


def test_update_cannot_mend_inputs_that_no_longer_apply(folder: Path) -> None:
    edit(folder / "notes.py", 'context["replies"] > 0', 'context["replies"] > 1')
    before = (folder / "notes.scenarios" / "asks_then_publishes.json").read_text()
    code, out, _ = jr2("test", "notes", "--workflows", str(folder), "--update")
    assert code == 1
    assert "notes/asks_then_publishes: not updated: its inputs no longer apply: step 4: writer picked done" in out
    assert (folder / "notes.scenarios" / "asks_then_publishes.json").read_text() == before


def test_allowed_picks_at_a_step_are_checked(folder: Path) -> None:
    path = folder / "triage.scenarios" / "agent_proposes_desk_confirms.json"
    data = json.loads(path.read_text())
    data["expect"]["allowed"] = [{"step": 1, "agent": "triager", "picks": ["label"]}]
    path.write_text(json.dumps(data))
    code, out, _ = jr2("test", "triage", "--workflows", str(folder))
    assert code == 1
    assert "triage/agent_proposes_desk_confirms: step 1: triager's Allowed picks now find_duplicates, label, " in out
    assert out.split("triager's Allowed picks now ", 1)[1].split("\n")[0].endswith(", expected label")


def test_junit_names_each_scenario_and_its_failure(folder: Path, tmp_path: Path) -> None:
    edit(folder / "notes.py", 'context["replies"] > 0', 'context["replies"] > 1')
    report = tmp_path / "junit.xml"
    assert jr2("test", "--workflows", str(folder), "--junit", str(report))[0] == 1
    root = ET.parse(report).getroot()
    assert (root.tag, root.get("tests"), root.get("failures"), root.get("errors")) == ("testsuites", "6", "1", "0")
    cases = {c.get("name"): c for c in root.iter("testcase")}
    assert set(cases) == {
        "asks_then_publishes",
        "fault_while_asking",
        "approved_after_tests",
        "changes_requested_once",
        "agent_proposes_desk_confirms",
        "desk_withdraws",
    }
    failure = cases["asks_then_publishes"].find("failure")
    assert failure is not None and failure.get("message", "").startswith("step 4: writer picked done")
    assert cases["desk_withdraws"].find("failure") is None


def test_a_bad_file_is_named_with_its_field_and_fails_the_run(folder: Path, tmp_path: Path) -> None:
    bad = folder / "notes.scenarios" / "bad.json"
    data = json.loads((folder / "notes.scenarios" / "fault_while_asking.json").read_text())
    del data["inputs"][0]["agent"]
    bad.write_text(json.dumps(data))
    (folder / "notes.scenarios" / "broken.json").write_text("{")
    (folder / "notes.scenarios" / "other.json").write_text(json.dumps({**data, "workflow": "triage", "inputs": []}))
    report = tmp_path / "junit.xml"
    code, out, _ = jr2("test", "notes", "--workflows", str(folder), "--junit", str(report))
    assert code == 1
    assert f"notes/bad: not a scenario: {bad}: inputs[0].agent (a pick input): Field required" in out
    assert "notes/broken: not a scenario: " in out and "broken.json: not JSON: " in out
    assert 'other.json: workflow: "triage", but the file is in the scenarios of "notes"' in out
    assert out.splitlines()[-1] == "5 scenarios of 1 workflow: 2 ok, 3 not read"
    assert ET.parse(report).getroot().get("errors") == "3"


def test_an_unknown_workflow_is_a_usage_error(folder: Path) -> None:
    code, _, err = jr2("test", "nope", "--workflows", str(folder))
    assert code == 2
    known = "code_review, code_review_harness, escalation, notes, release, triage"
    assert err.strip() == f"jr2 test: no workflow 'nope' in {folder} (workflows: {known})"


def test_schema_prints_the_format(folder: Path) -> None:
    code, out, _ = jr2("test", "--schema")
    assert code == 0 and json.loads(out) == schema()


@pytest.mark.django_db
def test_a_finished_run_saved_as_a_scenario_replays_ok(folder: Path) -> None:
    run = import_run(json.loads((FIXTURES / "export-notes.json").read_text()))
    code, out, err = jr2("scenario", "save", run.id[:6], "imported", "--workflows", str(folder))
    assert code == 0, err
    path = folder / "notes.scenarios" / "imported.json"
    assert out.strip() == str(path)
    scenario = Scenario.from_text(path.read_text())
    assert [item.kind for item in scenario.inputs] == ["advance", "pick", "advance", "gate", "advance", "pick"]
    assert (scenario.expect.status, scenario.expect.state) == ("done", ["notes.published"])
    assert "notes/imported: ok (7 steps)" in jr2("test", "notes", "--workflows", str(folder))[1]
    code, _, err = jr2("scenario", "save", run.id, "imported", "--workflows", str(folder))
    assert code == 1 and err.strip().endswith("imported.json exists; pass --force to overwrite it")
    code, _, err = jr2("scenario", "save", run.id, "no/name", "--workflows", str(folder))
    assert code == 2 and "'no/name' is not a scenario name" in err


def test_a_workflow_that_does_not_load_fails_each_of_its_scenarios(folder: Path) -> None:
    (folder / "notes.py").write_text("raise RuntimeError('broken on purpose')\n")
    code, out, _ = jr2("test", "--workflows", str(folder))
    assert code == 1
    assert 'notes/asks_then_publishes: notes.py: workflow "notes" failed to import: ' in out
    assert out.splitlines()[-1] == "6 scenarios of 3 workflows: 4 ok, 2 not read"


def test_scenarios_of_a_workflow_that_is_gone_are_named(folder: Path) -> None:
    (folder / "triage.py").rename(folder / "triage_old.py.txt")
    code, out, _ = jr2("test", "--workflows", str(folder))
    assert code == 1
    assert "triage/desk_withdraws: no workflow triage.py beside triage.scenarios/ (workflows: " in out
    assert out.splitlines()[-1] == "6 scenarios of 3 workflows: 4 ok, 2 not read"
