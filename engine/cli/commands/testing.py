"""`jr2 test`: every scenario of the named workflows (default all) replayed against the current Machine, one line
each and a summary, JUnit XML with --junit, --update to rewrite the expectations; and `jr2 scenario save`: a
recorded run written as a scenario next to its workflow. engine/core/journal/scenario_replay.py does the replay:
no model is called and no Effect runs."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from argparse import ArgumentParser
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.cli.client import CliError
from engine.cli.commands.replaying import _source_api, _source_db
from engine.cli.output import Output
from engine.core.journal.scenario_replay import ScenarioDiverged, check, from_journal, observe
from engine.core.scenarios import schema_text
from engine.runtime.loader import Loaded, Workflows, load_workflows
from engine.runtime.registry import reload_workflows
from engine.runtime.scenario_files import read_scenarios, scenario_folder, write_scenario

__all__ = ["test_arguments", "scenario_arguments", "test", "scenario"]

FINISHED = ("done", "failed", "cancelled")


def _workflows_argument(parser: ArgumentParser) -> None:
    parser.add_argument(
        "--workflows",
        metavar="DIR",
        help="the workflows folder to read the Machines and scenarios from (default: settings.JR2_WORKFLOWS)",
    )


def test_arguments(parser: ArgumentParser) -> None:
    parser.add_argument("workflow", nargs="*", help="the workflows whose scenarios to replay (default: every one)")
    _workflows_argument(parser)
    parser.add_argument("--junit", metavar="FILE", help="also write the results as JUnit XML to FILE")
    parser.add_argument(
        "--update",
        action="store_true",
        help="rewrite each scenario's expectations to what the current Machine comes to (after a reviewed change)",
    )
    parser.add_argument("--schema", action="store_true", help="print the scenario file's JSON schema and exit")


def scenario_arguments(parser: ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", metavar="<action>", required=True)
    save = actions.add_parser(
        "save",
        help="write a finished run as a scenario: its picks, Gate answers and Effect results become the inputs",
        description="write a finished run as workflows/<workflow>.scenarios/<name>.json; its expectations are "
        "what the current Machine comes to with the run's inputs",
    )
    save.add_argument("run", help="the run's id, or 4 or more of its first characters")
    save.add_argument("name", help="the scenario's name (its file is <name>.json)")
    save.add_argument("--description", default="", help="what the scenario shows, in a sentence")
    save.add_argument("--force", action="store_true", help="overwrite a scenario of that name")
    _workflows_argument(save)
    save.add_argument("--url", help="read the run from this server's API instead of the database")
    save.add_argument("--token", help="with --url: an API token (default: $JR2_TOKEN)")


@dataclass
class _Case:
    """One scenario's verdict, for the lines, the summary and the JUnit file."""

    workflow: str
    name: str
    ok: bool
    message: str
    error: bool = False  # a file that is not a scenario, rather than a divergence


def _load(command: str, workflows: str | None) -> Workflows:
    try:
        return load_workflows(workflows) if workflows else reload_workflows()
    except (FileNotFoundError, NotADirectoryError) as err:
        raise CliError(f"jr2 {command}: {err}") from err


def _chosen(found: Workflows, names: list[str]) -> list[Loaded]:
    if not names:
        return [w for w in found.workflows if scenario_folder(w).is_dir()]
    unknown = [n for n in names if found.find(n) is None]
    if unknown:
        raise CliError(
            f"jr2 test: no workflow {', '.join(repr(n) for n in unknown)} in {found.folder} "
            f"(workflows: {', '.join(found.names()) or 'none'})"
        )
    return [w for w in (found.find(n) for n in names) if w is not None]


def test(
    out: Output,
    workflow: list[str] | None = None,
    workflows: str | None = None,
    junit: str | None = None,
    update: bool = False,
    schema: bool = False,
    **options: Any,
) -> None:
    """Replay each scenario: a line per scenario, `ok (N steps)` or its first divergence, then a summary; exit 1 on
    any divergence or bad file. With --update, rewrite expectations that changed (a scenario whose inputs no
    longer apply cannot be updated and still fails)."""
    if schema:
        out.stdout.write(schema_text(), ending="")
        return
    found = _load("test", workflows)
    cases: list[_Case] = []
    for loaded in _chosen(found, list(workflow or [])):
        folder = scenario_folder(loaded)
        files = read_scenarios(folder, loaded.name)
        if loaded.machine is None:
            for item in files or [None]:
                case = _Case(loaded.name, item.name if item else "(load)", False, loaded.message(), error=True)
                cases.append(case)
            continue
        if not files and workflow:
            out.line(f"{loaded.name}: no scenarios (none in {folder})")
        for item in files:
            if item.scenario is None:
                cases.append(_Case(loaded.name, item.name, False, f"not a scenario: {item.error}", error=True))
                continue
            if update:
                cases.append(_updated(loaded, item.path, item.name, item.scenario))
                continue
            result = check(loaded.machine, item.scenario)
            cases.append(_Case(loaded.name, item.name, result.ok, result.message))
    for case in cases:
        out.line(f"{case.workflow}/{case.name}: {case.message}")
    out.line(_summary(cases, update))
    if junit:
        _write_junit(Path(junit), cases)
    if any(not case.ok for case in cases):
        raise SystemExit(1)


def _updated(loaded: Loaded, path: Path, name: str, scenario: Any) -> _Case:
    assert loaded.machine is not None
    try:
        expect = observe(loaded.machine, scenario)
    except ScenarioDiverged as err:
        return _Case(loaded.name, name, False, f"not updated: its inputs no longer apply: {err}")
    if expect == scenario.expect:
        return _Case(loaded.name, name, True, "ok (unchanged)")
    write_scenario(path.parent, name, scenario.model_copy(update={"expect": expect}), overwrite=True)
    return _Case(loaded.name, name, True, "updated: its expectations are what the Machine comes to now")


def _summary(cases: list[_Case], update: bool) -> str:
    if not cases:
        return "no scenarios: a workflow's scenarios go in <workflow>.scenarios/ next to its file"
    ok = sum(case.ok for case in cases)
    errors = sum(case.error for case in cases)
    diverged = len(cases) - ok - errors
    parts = [f"{ok} ok"]
    if update:
        parts.append(f"{sum(case.message.startswith('updated') for case in cases)} updated")
    if diverged:
        parts.append(f"{diverged} diverged")
    if errors:
        parts.append(f"{errors} not read")
    workflows = len({case.workflow for case in cases})
    noun = "scenario" if len(cases) == 1 else "scenarios"
    return f"{len(cases)} {noun} of {workflows} workflow{'s' if workflows != 1 else ''}: {', '.join(parts)}"


def _write_junit(path: Path, cases: list[_Case]) -> None:
    """One testsuite per workflow, one testcase per scenario: a divergence is a failure, a bad file an error."""
    root = ET.Element(
        "testsuites",
        name="jr2 test",
        tests=str(len(cases)),
        failures=str(sum(not c.ok and not c.error for c in cases)),
        errors=str(sum(c.error for c in cases)),
    )
    for workflow in dict.fromkeys(case.workflow for case in cases):
        mine = [case for case in cases if case.workflow == workflow]
        suite = ET.SubElement(
            root,
            "testsuite",
            name=workflow,
            tests=str(len(mine)),
            failures=str(sum(not c.ok and not c.error for c in mine)),
            errors=str(sum(c.error for c in mine)),
        )
        for case in mine:
            element = ET.SubElement(suite, "testcase", classname=f"scenarios.{workflow}", name=case.name)
            if not case.ok:
                ET.SubElement(element, "error" if case.error else "failure", message=case.message).text = case.message
    try:
        ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)
    except OSError as err:
        raise CliError(f"jr2 test: --junit {path}: {err.strerror or err}") from err


def scenario(out: Output, action: str, **options: Any) -> None:
    if action == "save":
        save(out, **options)


def save(
    out: Output,
    run: str,
    name: str,
    description: str = "",
    force: bool = False,
    workflows: str | None = None,
    url: str | None = None,
    token: str | None = None,
    **options: Any,
) -> None:
    """Write a finished run as a scenario next to its workflow; prints the file's path."""
    record = _source_api(run, url, token) if url else _source_db(run)
    run_id, workflow = record["id"], record["workflow"]
    if record.get("status") not in FINISHED:
        raise CliError(f"jr2 scenario save: run {run_id} is {record.get('status')}: only a finished run can be saved")
    found = _load("scenario save", workflows)
    loaded = found.find(workflow)
    if loaded is None or loaded.machine is None:
        why = loaded.message() if loaded else f'workflow "{workflow}" is not in {found.folder}'
        raise CliError(f"jr2 scenario save: run {run_id}: {why}")
    try:
        made = from_journal(loaded.machine, workflow, record["journal"], description)
        path = write_scenario(scenario_folder(loaded), name, made, overwrite=force)
    except ScenarioDiverged as err:
        raise CliError(f"jr2 scenario save: run {run_id} no longer replays on the current Machine: {err}", 1) from err
    except FileExistsError as err:
        raise CliError(f"jr2 scenario save: {err}; pass --force to overwrite it", 1) from err
    except ValueError as err:
        raise CliError(f"jr2 scenario save: run {run_id}: {err}") from err
    out.line(str(path))
