"""A project of one's own: `jr2 init` makes it and never overwrites a file; its workflow runs to done offline
with its stand-in; and the settings' table reads the project folder and refuses a value of the wrong kind."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from engine import Session
from engine.cli.client import CliError
from engine.cli.commands.init import FILES, init
from engine.conf import SETTING, SETTINGS, data_dir, project_dir, read
from engine.core.scripts import script_named
from engine.runtime.loader import load_workflows
from tests.live_server import jr2_script


def test_init_makes_the_project_and_refuses_to_overwrite_naming_the_files(tmp_path: Path) -> None:
    said: list[str] = []
    written = init(str(tmp_path / "p"), say=said.append)
    assert sorted(str(p.relative_to(tmp_path / "p")) for p in written) == sorted(FILES)
    assert ".jr2/" in (tmp_path / "p" / ".gitignore").read_text()
    assert "# p\n" in (tmp_path / "p" / "README.md").read_text()
    assert '{"changes": ' in (tmp_path / "p" / "README.md").read_text()
    assert said[0] == f"jr2 init: made the project {tmp_path / 'p'}"
    (tmp_path / "q" / "workflows").mkdir(parents=True)
    (tmp_path / "q" / "workflows" / "notes.py").write_text("mine")
    with pytest.raises(CliError) as refused:
        init(str(tmp_path / "q"), say=said.append)
    assert (
        refused.value.code == 1
        and f"{tmp_path / 'q' / 'workflows' / 'notes.py'} already exists" in refused.value.message
    )
    assert (tmp_path / "q" / "workflows" / "notes.py").read_text() == "mine"
    assert not (tmp_path / "q" / "README.md").exists()


def test_jr2_init_exits_1_on_an_existing_file(tmp_path: Path) -> None:
    made = subprocess.run([jr2_script(), "init", "p"], cwd=tmp_path, capture_output=True, text=True)
    assert made.returncode == 0, made.stderr
    again = subprocess.run([jr2_script(), "init", "p"], cwd=tmp_path, capture_output=True, text=True)
    assert again.returncode == 1 and "nothing was written" in again.stderr
    assert not (tmp_path / ".jr2").exists() and not (tmp_path / "p" / ".jr2").exists()


def test_the_projects_notes_workflow_runs_to_done_with_its_stand_in(tmp_path: Path) -> None:
    init(str(tmp_path / "p"), say=lambda line: None)
    found = load_workflows(tmp_path / "p" / "workflows")
    assert found.ok and set(found.machines) == {"notes"}
    session = Session(found.machines["notes"], {"changes": "One.\nTwo."})
    assert script_named("notes.writer") is not None and len(session.turns) == 1
    assert session.pick("writer", "ask", {"question": "Who?"}).outcome == "outstanding"
    assert session.send_gate("writing.asking", "reply", {"text": "Ops"}).outcome == "delivered"
    assert session.pick("writer", "done", {"notes": "## New"}).outcome == "ended"
    assert session.status == "done" and session.output == {"notes": "## New"}


def test_the_project_folder_is_jr2_home_else_the_current_folder(tmp_path: Path) -> None:
    env = {"JR2_HOME": str(tmp_path)}
    assert project_dir(env) == tmp_path.resolve() and data_dir(env) == tmp_path.resolve() / ".jr2"
    assert read(SETTING["JR2_WORKFLOWS"], env) == str(tmp_path.resolve() / "workflows")
    assert read(SETTING["JR2_SQLITE_PATH"], env) == str(tmp_path.resolve() / ".jr2" / "db.sqlite3")
    assert read(SETTING["JR2_WORKSPACE_ROOT"], env) == str(tmp_path.resolve() / ".jr2" / "workspaces")
    beside = {**env, "JR2_SQLITE_PATH": str(tmp_path / "elsewhere" / "db.sqlite3")}
    assert read(SETTING["JR2_WORKSPACE_ROOT"], beside) == str(tmp_path.resolve() / "elsewhere" / "workspaces")
    assert read(SETTING["JR2_DEBUG"], {}) is False and read(SETTING["JR2_DEBUG"], {"JR2_DEBUG": "1"}) is True


@pytest.mark.parametrize(
    ("name", "text", "words"),
    [
        ("JR2_DEBUG", "yes", "JR2_DEBUG='yes' is not valid: must be 1 or 0"),
        ("JR2_LEASE_SECONDS", "soon", "JR2_LEASE_SECONDS='soon' is not valid"),
        ("JR2_MAX_RUNS", "1.5", "JR2_MAX_RUNS='1.5' is not valid"),
    ],
)
def test_a_setting_of_the_wrong_kind_is_refused_naming_it(name: str, text: str, words: str) -> None:
    with pytest.raises(ValueError) as refused:
        read(SETTING[name], {name: text})
    assert words in str(refused.value)


def test_every_setting_has_words_and_a_group() -> None:
    assert len({s.name for s in SETTINGS}) == len(SETTINGS)
    assert all(s.doc.endswith((".", ")")) and s.group for s in SETTINGS)
