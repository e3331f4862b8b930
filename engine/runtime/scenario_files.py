"""Where a workflow's scenarios live and how they are read and written: `workflows/<name>.scenarios/<scenario>.json`,
next to the workflow's file (engine/core/scenarios.py is the format). `jr2 test`, `jr2 scenario save` and the
Console's "Save as scenario" all go through here, so they agree on the folder, the names and the checks.

    folder = scenario_folder(loaded)              # loaded: engine.runtime.loader.Loaded
    for item in read_scenarios(folder, "notes"):  # ScenarioFile: path, name, scenario or error
        ...
    path = write_scenario(folder, "happy", scenario, overwrite=False)
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from engine.core.scenarios import FOLDER_SUFFIX, Scenario, ScenarioError
from engine.runtime.loader import Loaded

__all__ = ["ScenarioFile", "scenario_folder", "read_scenarios", "write_scenario", "check_name", "NAME"]

#: A scenario's name, its file's name without `.json`.
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")


@dataclass(frozen=True)
class ScenarioFile:
    """One file of a scenarios folder: the scenario it holds, or the error that says why it is not one."""

    path: Path
    scenario: Scenario | None = None
    error: str | None = None

    @property
    def name(self) -> str:
        return self.path.stem


def scenario_folder(loaded: Loaded) -> Path:
    """The folder of a workflow's scenarios: `notes.py` -> `notes.scenarios/` beside it."""
    return loaded.path.with_name(loaded.name + FOLDER_SUFFIX)


def _shown(path: Path) -> str:
    """A path as a person reads it: relative to the current folder when it is below it."""
    try:
        return os.path.relpath(path) if path.is_relative_to(Path.cwd()) else str(path)
    except ValueError:
        return str(path)


def read_scenarios(folder: Path, workflow: str) -> list[ScenarioFile]:
    """Every `*.json` in the folder, in name order, each read and validated (an absent folder holds none). A file
    written for another workflow is refused naming its `workflow` field."""
    if not folder.is_dir():
        return []
    found = []
    for path in sorted(folder.glob("*.json")):
        source = _shown(path)
        try:
            scenario = Scenario.from_text(path.read_text(encoding="utf-8"), source)
        except (ScenarioError, OSError, UnicodeDecodeError) as err:
            found.append(ScenarioFile(path, error=str(err) if isinstance(err, ScenarioError) else f"{source}: {err}"))
            continue
        if scenario.workflow != workflow:
            error = f'{source}: workflow: "{scenario.workflow}", but the file is in the scenarios of "{workflow}"'
            found.append(ScenarioFile(path, error=error))
            continue
        found.append(ScenarioFile(path, scenario))
    return found


def check_name(name: str) -> str:
    """The scenario's name, or ValueError saying what a name may hold."""
    if not NAME.match(name) or name.endswith(".json"):
        raise ValueError(
            f"{name!r} is not a scenario name: letters, digits, '_', '-' and '.', starting with a letter or "
            "digit, without .json (the file is <name>.json)"
        )
    return name


def write_scenario(folder: Path, name: str, scenario: Scenario, overwrite: bool = False) -> Path:
    """Write `<folder>/<name>.json` (the folder made if need be); FileExistsError for an existing file unless
    `overwrite`."""
    path = folder / f"{check_name(name)}.json"
    if path.exists() and not overwrite:
        raise FileExistsError(f"{_shown(path)} exists")
    folder.mkdir(parents=True, exist_ok=True)
    path.write_text(scenario.to_text(), encoding="utf-8")
    return path
