"""The workspace tools on the Turn loop's side: their definitions beside the Menu, running a call, and an Effect's
working directory in an Agent's workspace (the sandbox itself is engine/runtime/workspace/sandbox.py).

An Agent with a workspace gets four tools after its Menu's events, in this order: `workspace_list`,
`workspace_read`, `workspace_search`, `workspace_write`. They are derived once, so the tools block is the same bytes
on every request of the Agent, as the providers' prompt caches need. A call of one is never a pick: it never reaches
the Session and never moves the Machine. The Turn loop answers it here and records the answer as a Turn message of
kind "workspace", so the Console shows it in the Turn, apart from the picks.
"""

from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from engine.core.slots import AgentSlot
from engine.core.words import validation_text
from engine.runtime.workspace.sandbox import TOOL_NAMES, Workspace, WorkspaceError, configured_limits, folder_for

__all__ = ["TOOL_NAMES", "tool_defs", "tools_json", "run_tool", "workspace_for", "effect_folder"]


class _Input(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ListInput(_Input):
    path: str = Field(default=".", description='A folder of the workspace, from its top; "." is the top.')


class ReadInput(_Input):
    path: str = Field(description='The file to read, from the top of the workspace, such as "src/app.py".')
    start_line: int = Field(default=1, ge=1, description="The first line to read (1 is the first line).")
    end_line: int = Field(default=0, ge=0, description="The last line to read; 0 reads to the end of the file.")


class SearchInput(_Input):
    text: str = Field(description="The text to look for, on one line (plain text, not a pattern).")
    path: str = Field(default=".", description='A file or folder to search in; "." searches the whole workspace.')
    ignore_case: bool = Field(default=False, description="True to match upper and lower case alike.")


class WriteInput(_Input):
    path: str = Field(description="The file to write, from the top of the workspace; missing folders are made.")
    content: str = Field(description="The whole new content of the file, as text. It replaces what the file held.")


_TOOLS: dict[str, tuple[str, type[_Input]]] = {
    "workspace_list": (
        "List the files of your workspace (or of a folder in it) with their sizes. Not a pick: it "
        "never moves the workflow.",
        ListInput,
    ),
    "workspace_read": (
        "Read a text file of your workspace, whole or by a range of lines. Not a pick: it never moves the workflow.",
        ReadInput,
    ),
    "workspace_search": (
        "Find the lines that hold a text in the files of your workspace. Not a pick: it never moves the workflow.",
        SearchInput,
    ),
    "workspace_write": (
        "Create or replace a text file in your workspace. Not a pick: it never moves the workflow.",
        WriteInput,
    ),
}


@functools.lru_cache(maxsize=1)
def tool_defs() -> tuple[dict[str, Any], ...]:
    """The four tools, shaped like a Menu's events (name, description, input schema), in TOOL_NAMES order."""
    return tuple(
        {"name": name, "description": _TOOLS[name][0], "input_schema": _TOOLS[name][1].model_json_schema()}
        for name in TOOL_NAMES
    )


@functools.lru_cache(maxsize=256)
def tools_json(menu_json: str, workspace: bool) -> str:
    """An Agent's tools block: its Menu (`Machine.menu_json`), then, with a workspace, the workspace tools. A pure
    function of its arguments, serialized as the Menu is, so every request of the Agent sends the same bytes."""
    if not workspace:
        return menu_json
    return json.dumps([*json.loads(menu_json), *tool_defs()], sort_keys=True)


async def run_tool(workspace: Workspace, name: str, arguments: Any) -> tuple[str, bool]:
    """Carry out one workspace call: (the text the model reads, whether it was refused). The file work runs in a
    thread, so a large folder never stalls the run's other tasks."""
    if name not in _TOOLS:
        raise ValueError(f"{name!r} is not a workspace tool")
    try:
        args = _TOOLS[name][1].model_validate(arguments)
    except ValidationError as err:
        problems = validation_text(err, "input")
        return f'the arguments of "{name}" do not fit its schema ({problems}); nothing was done.', True
    try:
        return await asyncio.to_thread(_dispatch, workspace, name, args), False
    except WorkspaceError as err:
        return f"refused: {err}", True
    except OSError as err:
        return f"{name} failed: {err.strerror or err}; nothing more was done.", True


def _dispatch(workspace: Workspace, name: str, args: Any) -> str:
    if name == "workspace_list":
        return workspace.list_files(args.path)
    if name == "workspace_read":
        return workspace.read(args.path, args.start_line, args.end_line)
    if name == "workspace_search":
        return workspace.search(args.text, args.path, args.ignore_case)
    return workspace.write(args.path, args.content)


def workspace_for(run_id: str, agent: str, slot: AgentSlot | None, root: Path | None = None) -> Workspace | None:
    """The workspace of `agent` in a run, or None when its slot asks for none."""
    if slot is None or slot.workspace == "none":
        return None
    return Workspace(folder_for(run_id, agent, slot.workspace, root), configured_limits())


def effect_folder(run_id: str, effect_id: str, spec: dict[str, Any], slot_of: Callable[[str], AgentSlot | None]) -> str:
    """The working directory of a command Effect given `workspace="<agent>"`: that Agent's folder in the run (made
    if it is not there yet), or the folder `cwd` inside it. The Agent is named in the Effect's own Machine, so an
    Effect of a child Machine (`<invoke id>/effect-N`) uses that Machine's Agent."""
    prefix = effect_id.rsplit("/", 1)[0] + "/" if "/" in effect_id else ""
    agent = prefix + str(spec["workspace"])
    workspace = workspace_for(run_id, agent, slot_of(agent))
    if workspace is None:
        raise WorkspaceError(f'the Agent "{agent}" has no workspace to run in')
    return workspace.directory(str(spec.get("cwd") or "."))
