"""`jr2 check` and the workflow loader (engine/runtime/loader.py).

The command is run for real, as a subprocess, through both entry points (the installed `jr2` console script and
`python manage.py jr2`), with JR2_WORKFLOWS pointed at temporary folders outside the project. The loader is also
called in-process.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from engine import Machine
from engine.runtime.loader import load_workflows, package_name, workflows_folder
from tests.databases import fresh_database_url
from tests.live_server import answered, copy_workflows, free_port, jr2_script

ROOT = Path(__file__).resolve().parents[2]

# SPEC.md 7, verbatim.
NOTES_SEATS = textwrap.dedent("""\
    seats: workflow "notes" — who may send what, per state
      notes.writing agent:writer: [ask, done]
      notes.writing.asking gate: [reply]""")

REFUSED = textwrap.dedent('''\
    """A Machine that create_machine refuses: the `on` key "stop" is not a listed event."""
    from pydantic import BaseModel

    from engine import agent, define_event, jr2_setup


    class Empty(BaseModel):
        pass


    go = define_event(name="go", input=Empty, description="Go on.")

    machine = jr2_setup(events=[go], actors={"worker": agent(model="script/w", instructions="Work.")}).create_machine({
        "id": "gatekeeper",
        "initial": "working",
        "states": {
            "working": {"invoke": {"src": "worker"}, "on": {"go": "end", "stop": "end"}},
            "end": {"type": "final"},
        },
    })
''')

BROKEN = textwrap.dedent('''\
    """A workflow module that fails to import."""
    import json  # noqa: F401

    import jr2_no_such_module_for_the_check_test  # noqa: F401

    machine = None
''')

HELPER_MODULE = textwrap.dedent('''\
    """A helper module: imported for what it registers, never a workflow."""
    from engine import scripted


    @scripted("check-test.helper")
    def helper(turn):
        return None
''')
HELPERS = '"""Not a workflow: no `machine` here."""\nHELPER = 42\n'

BROKEN_LAST_LINE = "ModuleNotFoundError: No module named 'jr2_no_such_module_for_the_check_test'"
REFUSAL = (
    'MachineError: machine "gatekeeper": state "gatekeeper.working" has an `on` key "stop" that no listed event has'
)


@pytest.fixture
def real_folder(tmp_path: Path) -> Path:
    """A copy of the project's workflows/ folder, outside the project."""
    return copy_workflows(tmp_path / "real")


@pytest.fixture
def mixed_folder(tmp_path: Path) -> Path:
    """The notes workflow, a refused Machine, a module that fails to import, a `_` file and a helper module."""
    folder = tmp_path / "mixed"
    folder.mkdir()
    shutil.copy(ROOT / "workflows" / "notes.py", folder / "notes.py")
    (folder / "bad.py").write_text(REFUSED)
    (folder / "broken.py").write_text(BROKEN)
    (folder / "_helper.py").write_text(HELPER_MODULE)
    (folder / "helpers.py").write_text(HELPERS)
    return folder


def _jr2(*args: str, folder: Path, via: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "JR2_WORKFLOWS": str(folder)}
    if via == "script":
        cmd = [jr2_script(), *args]
    else:
        cmd = [sys.executable, str(ROOT / "manage.py"), "jr2", *args]
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, encoding="utf-8", timeout=120)


VIAS = ["script", "manage.py"]


# -- the command, as a subprocess -------------------------------------------------------------------------------


@pytest.mark.parametrize("via", VIAS)
def test_check_passes_on_the_real_workflows(real_folder: Path, tmp_path: Path, via: str) -> None:
    proc = _jr2("check", folder=real_folder, via=via, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert NOTES_SEATS + "\n" in out  # the seats lines of SPEC.md 7, exactly
    assert str(real_folder) in out.splitlines()[0]
    found = load_workflows(real_folder)
    assert found.ok and found.machines, [f.message() for f in found.failures]
    for name, machine in found.machines.items():  # every Workflow in the folder is printed with its seats
        assert f'{name}.py: workflow "{name}"' in out
        assert machine.seats_text() in out
    summary = [line for line in out.splitlines() if line.startswith("summary:")]
    count, warnings = len(found.machines), sum(len(m.warnings()) for m in found.machines.values())
    plural = {True: "", False: "s"}
    assert summary == [
        f"summary: {count} workflow{plural[count == 1]}: {count} ok ({warnings} warning{plural[warnings == 1]})"
    ]
    assert "CommandError" not in proc.stderr


@pytest.mark.parametrize("via", VIAS)
def test_check_fails_naming_file_workflow_and_reason(mixed_folder: Path, tmp_path: Path, via: str) -> None:
    proc = _jr2("check", folder=mixed_folder, via=via, cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    out, err = proc.stdout, proc.stderr
    # the refused Machine: its file, its Workflow (named after the file) and the MachineError's message
    assert 'bad.py: workflow "bad": REFUSED' in out
    assert REFUSAL in out
    # the module that fails to import: the traceback's last line (and where in the file)
    assert 'broken.py: workflow "broken": IMPORT FAILED' in out
    assert f"  {BROKEN_LAST_LINE} (broken.py, line 4)" in out
    assert "Traceback" not in out  # only with --tracebacks
    # the good workflow is still checked, after both failures (files go in name order)
    assert out.index("broken.py") < out.index(NOTES_SEATS)
    assert 'notes.py: workflow "notes": ok' in out
    # the `_` file is imported for its registrations and is not a workflow; a module without `machine` is not one
    assert "_helper.py: helper module (imported for what it registers; not a workflow)" in out
    assert "helpers.py: not a workflow (defines no `machine`)" in out
    assert (
        "summary: 3 workflows: 1 ok (0 warnings), 1 refused, 1 failed to import; not workflows: 1 module "
        "without `machine`, 1 helper module (`_` prefix)"
    ) in out
    # the error message that ends the command names each file and Workflow with its reason
    assert "CommandError: jr2 check failed: 2 of 3 workflows did not load:" in err
    assert f'bad.py: workflow "bad" was refused: {REFUSAL}' in err
    assert f'broken.py: workflow "broken" failed to import: {BROKEN_LAST_LINE}' in err
    assert "notes.py" not in err


def test_check_tracebacks_show_the_whole_traceback(mixed_folder: Path, tmp_path: Path) -> None:
    proc = _jr2("check", "--tracebacks", folder=mixed_folder, via="script", cwd=tmp_path)
    assert proc.returncode == 1
    assert "Traceback (most recent call last):" in proc.stdout
    assert f'File "{mixed_folder / "broken.py"}", line 4, in <module>' in proc.stdout


@pytest.mark.parametrize("via", VIAS)
def test_help_lists_exactly_the_implemented_commands_and_version_is_jr2s(
    real_folder: Path, tmp_path: Path, via: str
) -> None:
    from engine import __version__
    from engine.management.commands.jr2 import SUBCOMMANDS, Command

    implemented = [
        "init",
        "check",
        "up",
        "web",
        "worker",
        "token",
        "login-link",
        "run",
        "runs",
        "status",
        "send",
        "cancel",
        "audit",
        "replay",
        "test",
        "scenario",
        "fork",
        "graph",
        "export",
        "import",
        "mcp",
    ]
    assert [sub.name for sub in SUBCOMMANDS] == implemented
    assert all(callable(getattr(Command, "handle_" + name.replace("-", "_"), None)) for name in implemented)
    helped = _jr2("--help", folder=real_folder, via=via, cwd=tmp_path)
    assert helped.returncode == 0, helped.stderr
    listed = helped.stdout.split("subcommands:", 1)[1]
    # each subcommand's line starts with its name, indented by four spaces (help text wraps deeper)
    names = [
        line.split()[0] for line in listed.splitlines() if line.startswith("    ") and not line.startswith("     ")
    ]
    assert names == implemented
    assert "not implemented" not in helped.stdout
    version = _jr2("--version", folder=real_folder, via=via, cwd=tmp_path)
    assert version.returncode == 0
    assert version.stdout == f"jr2 {__version__}\n"


def test_up_checks_migrates_and_serves_the_console(real_folder: Path, tmp_path: Path) -> None:
    import urllib.request

    port = free_port()
    script = jr2_script()
    env = {
        **os.environ,
        "JR2_WORKFLOWS": str(real_folder),
        "JR2_SQLITE_PATH": str(tmp_path / "up.sqlite3"),
        "PYTHONUNBUFFERED": "1",
        "JR2_CONSOLE_OPEN_READS": "1",
    }
    database = fresh_database_url()
    if database is not None:
        env["DATABASE_URL"] = database
    server = subprocess.Popen(
        [script, "up", f"127.0.0.1:{port}"],
        cwd=tmp_path,
        env=env,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        page = answered(
            lambda: urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2).read().decode(),
            process=server,
            interval=0.2,
        )
        assert page is not None, "the Console never answered"
        assert "notes.writing" in page and "agent:writer" in page
        if database is None:
            assert (tmp_path / "up.sqlite3").exists()
        else:
            import psycopg

            with psycopg.connect(database) as migrated:
                assert migrated.execute("SELECT count(*) FROM django_migrations WHERE app = 'engine'").fetchone()[0]
    finally:
        server.terminate()
        out, _ = server.communicate(timeout=20)
    assert NOTES_SEATS in out
    # the first start, on a database with no user, made one and printed the link that logs it in
    assert re.search(rf"^jr2 up: log in at http://127\.0\.0\.1:{port}/login/[A-Za-z0-9_-]{{43}}/$", out, re.M), out


# -- the command, in-process -----------------------------------------------------------------------------------


def test_check_in_process_with_a_workflows_option(mixed_folder: Path, real_folder: Path) -> None:
    out = StringIO()
    call_command("jr2", "check", "--workflows", str(real_folder), stdout=out)
    assert NOTES_SEATS in out.getvalue()
    with pytest.raises(CommandError) as failed:
        call_command("jr2", "check", "--workflows", str(mixed_folder), stdout=StringIO())
    assert failed.value.returncode == 1
    assert 'bad.py: workflow "bad" was refused' in str(failed.value)


def test_check_refuses_a_missing_folder(tmp_path: Path) -> None:
    with pytest.raises(CommandError, match="does not exist"):
        call_command("jr2", "check", "--workflows", str(tmp_path / "nowhere"), stdout=StringIO())


@pytest.mark.parametrize(
    "subcommand",
    [
        ["runs"],
        ["run", "notes"],
        ["status", "r123"],
        ["cancel", "r123"],
        ["send", "r123", "--gate", "g", "--event", "reply"],
    ],
)
def test_the_server_commands_run_in_process_too_and_name_a_server_that_is_down(subcommand: list[str]) -> None:
    """Through call_command as well as the console script: an error is one line on stderr and exit code 2
    (the commands against a server are tested end to end in tests/e2e/test_cli.py)."""
    url = f"http://127.0.0.1:{free_port()}"
    err = StringIO()
    with pytest.raises(SystemExit) as exited:
        call_command("jr2", *subcommand, "--url", url, stdout=StringIO(), stderr=err)
    assert exited.value.code == 2
    assert err.getvalue().startswith(f"jr2 {subcommand[0]}: the server is not reachable at {url} (")
    assert err.getvalue().count("\n") == 1


# -- the loader ------------------------------------------------------------------------------------------------


def test_loader_reports_every_file(mixed_folder: Path) -> None:
    found = load_workflows(mixed_folder)
    assert found.folder == mixed_folder.resolve()
    assert [(f.file, f.status) for f in found.files] == [
        ("_helper.py", "helper"),
        ("bad.py", "refused"),
        ("broken.py", "import-failed"),
        ("helpers.py", "not-a-workflow"),
        ("notes.py", "ok"),
    ]
    assert [f.name for f in found.workflows] == ["bad", "broken", "notes"]
    assert list(found.machines) == ["notes"]
    assert isinstance(found.machines["notes"], Machine)
    assert found.machines["notes"].seats_text() == NOTES_SEATS
    assert not found.ok
    bad, broken = found["bad"], found["broken"]
    assert bad.failed and bad.machine is None and bad.error is not None and bad.error.startswith(REFUSAL)
    assert bad.where == "bad.py, line 17"  # the refused state's `on` key, not `create_machine(`
    assert bad.message().startswith(f'bad.py: workflow "bad" was refused: {REFUSAL}')
    assert broken.error == BROKEN_LAST_LINE
    assert broken.message() == (
        f'broken.py: workflow "broken" failed to import: {BROKEN_LAST_LINE} (broken.py, line 4)'
    )
    assert broken.traceback is not None and broken.traceback.rstrip().endswith(BROKEN_LAST_LINE)
    assert found.failures == [bad, broken]


def test_loader_imports_by_path_under_a_name_unique_to_the_folder(tmp_path: Path) -> None:
    one = copy_workflows(tmp_path / "one")
    two = copy_workflows(tmp_path / "two")
    first, second = load_workflows(one), load_workflows(two)
    a, b = first.machines["notes"], second.machines["notes"]
    assert a is not b and a.statechart is not b.statechart
    assert package_name(one) != package_name(two)
    assert sys.modules[f"{package_name(one)}.notes"].machine is a
    assert sys.modules[f"{package_name(two)}.notes"].machine is b


def test_loader_imports_afresh_each_time(tmp_path: Path) -> None:
    folder = copy_workflows(tmp_path / "flows")
    before = load_workflows(folder).machines["notes"]
    source = (folder / "notes.py").read_text()
    (folder / "notes.py").write_text(source.replace('"id": "notes"', '"id": "notes2"'))
    after = load_workflows(folder)
    assert after.machines["notes"].id == "notes2" and before.id == "notes"


def test_loader_lets_siblings_share_a_helper_module(tmp_path: Path) -> None:
    folder = tmp_path / "shared"
    folder.mkdir()
    (folder / "_events.py").write_text(
        textwrap.dedent("""\
        from pydantic import BaseModel
        from engine import define_event

        class Empty(BaseModel):
            pass

        go = define_event(name="go", input=Empty, description="Go on.")
    """)
    )
    (folder / "flow.py").write_text(
        textwrap.dedent("""\
        from engine import agent, jr2_setup
        from ._events import go

        setup = jr2_setup(events=[go], actors={"worker": agent(model="script/w", instructions="Work.")})
        machine = setup.create_machine({
            "id": "flow", "initial": "working",
            "states": {"working": {"invoke": {"src": "worker"}, "on": {"go": "end"}}, "end": {"type": "final"}},
        })
    """)
    )
    found = load_workflows(folder)
    assert [(f.file, f.status) for f in found.files] == [("_events.py", "helper"), ("flow.py", "ok")]
    assert found.machines["flow"].seats_text().splitlines()[1] == "  flow.working agent:worker: [go]"


def test_loader_marks_a_machine_that_is_not_a_machine(tmp_path: Path) -> None:
    folder = tmp_path / "odd"
    folder.mkdir()
    (folder / "odd.py").write_text("machine = {'id': 'odd'}\n")
    (folder / "syntax.py").write_text("def broken(:\n")
    found = load_workflows(folder)
    assert found["odd"].status == "invalid" and "not a jr2 Machine" in (found["odd"].error or "")
    assert found["syntax"].status == "import-failed"
    assert found["syntax"].error == "SyntaxError: invalid syntax" and found["syntax"].where == "syntax.py, line 1"


def test_loader_default_folder_is_the_setting(settings, real_folder: Path) -> None:
    assert workflows_folder() == Path(settings.JR2_WORKFLOWS).resolve()
    settings.JR2_WORKFLOWS = str(real_folder)
    assert workflows_folder() == real_folder.resolve()
    assert "notes" in load_workflows().machines


def test_loader_refuses_a_missing_folder(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="JR2_WORKFLOWS"):
        load_workflows(tmp_path / "nowhere")
    (tmp_path / "file.py").write_text("")
    with pytest.raises(NotADirectoryError):
        load_workflows(tmp_path / "file.py")


def test_a_helper_module_that_fails_to_import_fails_the_check_as_a_helper(tmp_path: Path) -> None:
    folder = tmp_path / "helpers"
    folder.mkdir()
    (folder / "_broken.py").write_text("import jr2_no_such_helper_dependency\n")
    shutil.copy(ROOT / "workflows" / "notes.py", folder / "notes.py")
    found = load_workflows(folder)
    [failed] = found.failures
    assert failed.helper and failed.status == "import-failed" and failed.name == "_broken"
    assert [f.name for f in found.workflows] == ["notes"]
    assert failed.message().startswith("_broken.py: helper module failed to import: ModuleNotFoundError")


def test_an_effect_calls_name_does_not_depend_on_the_folder_it_was_loaded_from(tmp_path: Path) -> None:
    """A run's recorded outputs name the function an Effect calls; moving the workflows folder must not change
    them (or a resumed run would look drifted)."""
    one, two = load_workflows(copy_workflows(tmp_path / "one")), load_workflows(copy_workflows(tmp_path / "two"))
    names = {found.machines["triage"].slots["duplicates"].spec["function"] for found in (one, two)}
    assert names == {"triage.search_issues"}
