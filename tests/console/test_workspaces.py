"""The Console and workspaces: a Turn shows its workspace tool calls apart from its picks, and a Gate made with
`gate(workspace=..., files=...)` shows the files it names, escaped."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from engine.models import Run
from engine.runtime.host import Host
from engine.runtime.registry import workflows
from tests.console.test_pages import HOSTILE

pytestmark = pytest.mark.django_db(transaction=True)

DESK = """
from pydantic import BaseModel, Field

from engine import agent, define_event, gate, jr2_setup, scripted

HOSTILE = {hostile!r}


class Done(BaseModel):
    summary: str = Field(description="What was written.")


class Verdict(BaseModel):
    ok: bool = Field(description="Whether the page may go out.")


done = define_event(name="done", input=Done, description="Hand the page in.")
accept = define_event(name="accept", input=Verdict, description="Judge the page.")

machine = jr2_setup(events=[done, accept], actors={{
    "writer": agent(model="script/desk.writer", instructions="Write the page.", workspace="run"),
    "desk": gate(workspace="writer", files=["*.html", "notes/*"]),
}}).create_machine({{
    "id": "desk", "initial": "writing",
    "states": {{
        "writing": {{"invoke": {{"src": "writer", "input": {{"prompt": "Write page.html."}}}},
                    "on": {{"done": {{"target": "checking", "actions": []}}}}}},
        "checking": {{"invoke": {{"src": "desk"}}, "on": {{"accept": "finished"}}}},
        "finished": {{"type": "final"}},
    }},
}})

STEPS = [("workspace_write", {{"path": "page.html", "content": HOSTILE}}),
         ("workspace_write", {{"path": "notes/todo.txt", "content": "check the links"}}),
         ("workspace_write", {{"path": "skipped.txt", "content": "not on the Gate"}}),
         ("workspace_read", {{"path": "/etc/passwd"}})]


@scripted("desk.writer")
def write(turn):
    if len(turn.answers) < len(STEPS):
        return STEPS[len(turn.answers)]
    return ("done", {{"summary": "page.html"}})
"""


def desk_run(tmp_path: Path, settings: Any) -> str:
    """A run of the desk workflow, at its Gate, from a workflows folder of its own."""
    folder = tmp_path / "flows"
    folder.mkdir()
    (folder / "desk.py").write_text(DESK.format(hostile=HOSTILE))
    settings.JR2_WORKFLOWS = str(folder)
    machines = workflows().machines

    async def main() -> str:
        host = Host(machines, owner="console-workspaces")
        await host.start()
        try:
            run_id = await host.start_run("desk")
            for _ in range(500):
                if await host.db(lambda: Run.objects.filter(id=run_id, status__in=("waiting", "failed")).exists()):
                    return run_id
                await asyncio.sleep(0.02)
            raise AssertionError("the desk run never reached its Gate")
        finally:
            await host.stop()

    return asyncio.run(main())


def test_a_turn_shows_workspace_calls_apart_from_picks_and_the_gate_shows_its_files(
    tmp_path: Path, settings: Any, operator: Any
) -> None:
    run_id = desk_run(tmp_path, settings)
    assert Run.objects.get(id=run_id).status == "waiting"
    client = Client()
    client.force_login(operator)
    page = client.get(f"/runs/{run_id}/").content.decode()

    turns = page[page.index('id="run-turns"') :]
    lines = re.findall(r'<li class="line (\w+)">\s*<span class="who">([^<]*)</span>(?:\s*<code>([^<]*)</code>)?', turns)
    said = [(kind, who, name) for kind, who, name in lines if kind != "prompt"]
    assert said == [
        ("workspace", "workspace", "workspace_write"),
        ("workspace_answer", "workspace answer", ""),
        ("workspace", "workspace", "workspace_write"),
        ("workspace_answer", "workspace answer", ""),
        ("workspace", "workspace", "workspace_write"),
        ("workspace_answer", "workspace answer", ""),
        ("workspace", "workspace", "workspace_read"),
        ("workspace_refused", "workspace refused", ""),
        ("pick", "picked", "done"),
        ("answer", "answer", ""),
    ]
    assert "refused: &quot;/etc/passwd&quot; is an absolute path, which leaves the workspace" in turns

    gates = page[page.index('id="run-gates"') : page.index('id="run-turns"')]
    shown = re.findall(r"<summary><code>([^<]*)</code></summary>", gates)
    assert shown == ["notes/todo.txt", "page.html"]
    assert "check the links" in gates and "not on the Gate" not in gates
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in gates
    assert "<script>alert" not in page and "<img src=x" not in page and 'href="javascript:' not in page


def test_a_gate_whose_files_are_not_there_yet_says_so(tmp_path: Path, settings: Any, operator: Any) -> None:
    from engine.runtime.workspace.sandbox import remove_run_folder

    run_id = desk_run(tmp_path, settings)
    remove_run_folder(run_id)
    client = Client()
    client.force_login(operator)
    page = client.get(f"/runs/{run_id}/").content.decode()
    assert "No file of the workspace of writer matches *.html, notes/* yet." in page
