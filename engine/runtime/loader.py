"""Find and load the Workflows of an instance: every module in the workflows folder that defines `machine`.

    from engine.runtime.loader import load_workflows
    found = load_workflows()            # settings.JR2_WORKFLOWS (env JR2_WORKFLOWS, default <project>/workflows)
    found.machines                      # {"notes": Machine("notes"), ...}: the Workflows that loaded
    found.failures                      # the files that were refused or failed to import, each with its message

Rules (SPEC.md 2, "Workflow"): each `*.py` file directly in the folder is a module; a file whose name starts with
`_` is a helper module (its siblings may import it: `from ._shared import ask`); a module that defines
`machine` is a Workflow named after its file. `_` files are imported first, for what they register (scripted models:
`@engine.scripted(...)`), and are never Workflows. Each module is imported by path, under a package name unique to the
folder, so a folder outside the project works and two folders can hold files of the same name. Every file is
loaded on its own: one that is refused (`MachineError` and the other refusals of the authoring surface) or fails to
import is reported, and the others are still loaded.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import importlib.util
import os
import sys
import traceback
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from engine.conf import SETTING, read
from engine.core.statechart.errors import StatechartError
from engine.core.workflow import Machine

__all__ = ["Loaded", "Workflows", "load_workflows", "workflows_folder", "package_name"]

Status = Literal["ok", "refused", "import-failed", "invalid", "not-a-workflow", "helper"]
FAILED: tuple[Status, ...] = ("refused", "import-failed", "invalid")


@dataclass(frozen=True)
class Loaded:
    """One file of the workflows folder and what became of it.

    status: "ok" (a Workflow with its Machine), "refused" (the authoring surface refused it: `MachineError`,
    `EventDefError`, ...), "import-failed" (any other exception while importing), "invalid" (`machine` is not a
    jr2 Machine), "not-a-workflow" (imported, defines no `machine`), "helper" (name starts with `_`: imported for what
    it registers, never a Workflow). A helper that fails to import is "import-failed" with `helper` set.
    """

    path: Path
    status: Status
    machine: Machine | None = None
    error: str | None = None
    where: str | None = None
    traceback: str | None = None
    helper: bool = False

    @property
    def name(self) -> str:
        """The Workflow's name: the file's name without `.py`."""
        return self.path.stem

    @property
    def file(self) -> str:
        return self.path.name

    @property
    def is_workflow(self) -> bool:
        """A Workflow, loaded or not (a file that failed to import counts: it is meant to be one)."""
        return not self.helper and self.status in ("ok", *FAILED)

    @property
    def failed(self) -> bool:
        return self.status in FAILED

    def message(self) -> str:
        """One line naming the file and the Workflow: what happened to it."""
        where = f" ({self.where})" if self.where else ""
        if self.helper:
            if self.failed:
                return f"{self.file}: helper module failed to import: {self.error}{where}"
            return f"{self.file}: helper module (imported for what it registers; not a workflow)"
        if self.status == "ok":
            machine = self.machine.id if self.machine is not None else "?"
            return f'{self.file}: workflow "{self.name}" loaded (machine "{machine}")'
        if self.status == "refused":
            return f'{self.file}: workflow "{self.name}" was refused: {self.error}{where}'
        if self.status == "import-failed":
            return f'{self.file}: workflow "{self.name}" failed to import: {self.error}{where}'
        if self.status == "invalid":
            return f'{self.file}: workflow "{self.name}" is not valid: {self.error}'
        if self.status == "not-a-workflow":
            return f"{self.file}: not a workflow (defines no `machine`)"
        return f"{self.file}: helper module"


@dataclass
class Workflows:
    """Everything found in one workflows folder, file by file, in file-name order."""

    folder: Path
    files: list[Loaded] = field(default_factory=list)

    @property
    def workflows(self) -> list[Loaded]:
        return [f for f in self.files if f.is_workflow]

    @property
    def machines(self) -> dict[str, Machine]:
        """The Workflows that loaded, by name."""
        return {f.name: f.machine for f in self.files if f.status == "ok" and f.machine is not None}

    @property
    def failures(self) -> list[Loaded]:
        return [f for f in self.files if f.failed]

    @property
    def ok(self) -> bool:
        return not self.failures

    def find(self, name: str) -> Loaded | None:
        """The Workflow called `name` (loaded or failed), or None."""
        return next((f for f in self.workflows if f.name == name), None)

    def names(self) -> list[str]:
        return [f.name for f in self.workflows]

    def __getitem__(self, name: str) -> Loaded:
        for f in self.files:
            if f.path.stem == name:
                return f
        raise KeyError(name)


def workflows_folder() -> Path:
    """settings.JR2_WORKFLOWS when Django is configured, else the env var JR2_WORKFLOWS, else `<project>/workflows`.
    A relative path is taken from the current directory."""
    folder: str | None = None
    try:
        from django.conf import settings
        from django.core.exceptions import ImproperlyConfigured
    except ImportError:  # the engine does not need Django to load workflows
        pass
    else:
        if settings.configured or os.environ.get("DJANGO_SETTINGS_MODULE"):
            try:
                folder = getattr(settings, "JR2_WORKFLOWS", None)
            except (ImportError, ImproperlyConfigured):
                folder = None
    if not folder:
        folder = read(SETTING["JR2_WORKFLOWS"])
    folder = str(folder)
    # the current directory only for a relative folder: os.getcwd lets go of the GIL, and on the event loop of a
    # busy server each call waited for the host's database thread to give it back (0.4 ms an API call)
    return _resolved(folder, "" if os.path.isabs(os.path.expanduser(folder)) else os.getcwd())


@functools.lru_cache(maxsize=64)
def _resolved(folder: str, cwd: str) -> Path:
    """The folder's absolute path, from `cwd` (empty for an absolute folder): resolved once (every API call that
    names a workflow asks)."""
    return (Path(cwd) / Path(folder).expanduser()).resolve()


def package_name(folder: Path) -> str:
    """The package the folder's modules are imported under: unique to the folder's absolute path."""
    digest = hashlib.sha1(str(folder.resolve()).encode()).hexdigest()[:12]
    return f"_jr2_workflows_{digest}"


def load_workflows(folder: str | os.PathLike[str] | None = None) -> Workflows:
    """Import every module of the folder afresh and report each one. Raises FileNotFoundError / NotADirectoryError
    only for the folder itself."""
    root = workflows_folder() if folder is None else Path(folder).expanduser().resolve()
    if not root.exists():
        raise FileNotFoundError(
            f"the workflows folder {root} does not exist (set JR2_WORKFLOWS to the folder "
            "that holds your workflow modules)"
        )
    if not root.is_dir():
        raise NotADirectoryError(f"the workflows folder {root} is not a folder")
    package = _fresh_package(root)
    found = Workflows(root)
    paths = sorted(p for p in root.iterdir() if p.suffix == ".py" and p.is_file())
    loaded = {path: _load(package, path, helper=True) for path in paths if path.name.startswith("_")}
    loaded.update({path: _load(package, path) for path in paths if not path.name.startswith("_")})
    found.files.extend(loaded[path] for path in paths)
    return found


def _fresh_package(root: Path) -> str:
    """A namespace-like package whose __path__ is the folder (so siblings can import each other relatively);
    modules left from an earlier load of the same folder are dropped so every load imports afresh."""
    name = package_name(root)
    for key in [k for k in sys.modules if k == name or k.startswith(name + ".")]:
        del sys.modules[key]
    package = types.ModuleType(name, f"jr2 workflows in {root}")
    package.__path__ = [str(root)]  # type: ignore[attr-defined]
    package.__file__ = None
    package.__package__ = name
    spec = importlib.util.spec_from_loader(name, loader=None, is_package=True)
    assert spec is not None
    spec.submodule_search_locations = [str(root)]
    package.__spec__ = spec
    sys.modules[name] = package
    return name


def _load(package: str, path: Path, helper: bool = False) -> Loaded:
    module_name = f"{package}.{path.stem}"
    if helper and module_name in sys.modules:
        return Loaded(path, "helper", helper=True)
    try:
        spec = importlib.util.spec_from_file_location(module_name, path)
        if spec is None or spec.loader is None:
            return Loaded(path, "import-failed", error=f"cannot import {path} (no loader for it)")
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            sys.modules.pop(module_name, None)
            raise
    except StatechartError as err:
        if helper:
            return Loaded(
                path,
                "import-failed",
                error=f"{type(err).__name__}: {err}",
                where=_where(err, path),
                traceback=_format(err, path),
                helper=True,
            )
        return Loaded(
            path,
            "refused",
            error=f"{type(err).__name__}: {err}",
            where=_state_line(err, path) or _where(err, path),
            traceback=_format(err, path),
        )
    except (Exception, SystemExit) as err:
        return Loaded(
            path,
            "import-failed",
            error=_last_line(err),
            where=_where(err, path),
            traceback=_format(err, path),
            helper=helper,
        )
    if helper:
        return Loaded(path, "helper", helper=True)
    if not hasattr(module, "machine"):
        return Loaded(path, "not-a-workflow")
    machine = module.machine
    if not isinstance(machine, Machine):
        return Loaded(
            path,
            "invalid",
            error=f"`machine` is not a jr2 Machine (it is {_short(machine)}); build it with "
            "jr2_setup(events=..., actors=...).create_machine(config)",
        )
    return Loaded(path, "ok", machine=machine)


def _short(value: object) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text if len(text) <= 60 else text[:57] + '...'}"


def _format(err: BaseException, path: Path) -> str:
    """The traceback from the workflow file's first frame on (the loader's and importlib's frames dropped)."""
    tb = err.__traceback__
    start = tb
    while start is not None and _same(start.tb_frame.f_code.co_filename, path) is False:
        start = start.tb_next
    if start is None and isinstance(err, SyntaxError):
        return "".join(traceback.format_exception_only(type(err), err))  # names the file, line and column
    return "".join(traceback.format_exception(type(err), err, start or tb))


def _same(filename: str, path: Path) -> bool:
    try:
        return Path(filename).resolve() == path.resolve()
    except (OSError, ValueError):
        return False


def _last_line(err: BaseException) -> str:
    """The last line of the traceback: `ModuleNotFoundError: No module named 'x'`."""
    return traceback.format_exception_only(type(err), err)[-1].strip()


def _where(err: BaseException, path: Path) -> str | None:
    """The line of the workflow file the error came from (the deepest frame in that file)."""
    if isinstance(err, SyntaxError) and err.filename and Path(err.filename).resolve() == path.resolve():
        return f"{path.name}, line {err.lineno}"
    line = None
    for frame in traceback.extract_tb(err.__traceback__):
        if _same(frame.filename, path):
            line = frame.lineno
    return f"{path.name}, line {line}" if line is not None else None


def _state_line(err: BaseException, path: Path) -> str | None:
    """Where a refusal's state is configured: the line of the `on` key it names in that state's dict, else of the
    state's own key, found by walking the file's dict literals along `states` keys."""
    state = getattr(err, "state", None)
    if not isinstance(state, str) or "." not in state:
        return None
    event = getattr(err, "event", None)
    keys = []
    for part in state.split(".")[1:]:
        keys += ["states", part]
    try:
        tree = ast.parse(path.read_text(), filename=str(path))
    except (OSError, SyntaxError, ValueError):
        return None
    found: list[int] = []

    def walk(node: ast.AST, trail: tuple[str, ...]) -> None:
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values):
                if isinstance(key, ast.Constant) and isinstance(key.value, str):
                    here = (*trail, key.value)
                    if list(here[-len(keys) :]) == keys and isinstance(value, ast.Dict):
                        found.append(_event_line(value, event) or key.lineno)
                    walk(value, here)
                elif value is not None:
                    walk(value, trail)
            return
        for child in ast.iter_child_nodes(node):
            walk(child, trail)

    walk(tree, ())
    return f"{path.name}, line {found[0]}" if len(found) == 1 else None


def _event_line(state: ast.Dict, event: str | None) -> int | None:
    for key, value in zip(state.keys, state.values):
        if isinstance(key, ast.Constant) and key.value == "on" and isinstance(value, ast.Dict):
            for on_key in value.keys:
                if isinstance(on_key, ast.Constant) and on_key.value == event:
                    return on_key.lineno
    return None
