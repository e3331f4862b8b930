"""Workspaces through the runtime: a Turn that uses the workspace tools over the real SDKs and the fake model server,
an Effect that runs in the Agent's folder, a Turn taken up after a crash that repeats its last write, deleting a
run, and code_review end to end with its scripted models. Real SQLite, real files, real subprocesses."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from django.db import transaction
from pydantic import BaseModel, Field

from engine import agent, assign, define_event, effect, jr2_setup
from engine.checks import workspace_settings
from engine.core.prompts import BRIEFING, WORKSPACE_BRIEFING
from engine.core.workflow import Machine
from engine.models import EffectRecord, ModelCall, Run, TurnMessage, TurnRecord
from engine.runtime.host import Host
from engine.runtime.workspace.sandbox import WorkspaceError, configured_limits, configured_root, folder_for
from engine.runtime.workspace.tools import TOOL_NAMES, effect_folder, tool_defs, tools_json
from tests.fakes.model_server import ModelServer, Reply, ToolUse, text, tool_call
from tests.runtime.hosting import hosted, status, until
from tests.runtime.test_turn_loop import (  # noqa: F401 - `server` is a fixture
    CACHE,
    conversation,
    records,
    requests_made,
    server,
    tools_hashes,
)
from workflows import code_review

pytestmark = pytest.mark.django_db(transaction=True)


class Summary(BaseModel):
    summary: str = Field(description="What you built.")


finish = define_event(name="finish", input=Summary, description="Hand in the work. Then stop.")

#: Prints where it runs and the file the Agent wrote there.
SHOW = "import os; print(os.getcwd()); print(open('out.txt').read(), end='')"


def builder(model: str, cwd: str | None = None, mode: str = "run") -> Machine:
    """One Agent with a workspace writes, then an Effect runs in its folder."""
    return jr2_setup(
        events=[finish],
        actors={
            "builder": agent(model=model, instructions="You build things in your workspace.", workspace=mode),
            "show": effect.command([sys.executable, "-c", SHOW], workspace="builder", cwd=cwd, timeout=60),
        },
    ).create_machine(
        {
            "id": "builder",
            "initial": "building",
            "context": {"summary": "", "shown": None},
            "states": {
                "building": {
                    "invoke": {"src": "builder", "input": {"prompt": "Write out.txt, then finish."}},
                    "on": {"finish": {"target": "showing", "actions": assign(summary=lambda event: event.summary)}},
                },
                "showing": {
                    "invoke": {
                        "src": "show",
                        "onDone": {"target": "done", "actions": assign(shown=lambda event: event.output)},
                        "onError": {"target": "broken", "actions": assign(shown=lambda event: event.error)},
                    }
                },
                "done": {"type": "final"},
                "broken": {"type": "final"},
            },
            "output": lambda context: {"summary": context["summary"], "shown": context["shown"]},
        }
    )


def test_the_tools_follow_the_menu_sorted_and_byte_stable() -> None:
    machine = builder("anthropic/claude-haiku-5-5")
    menu = machine.menu_json("builder")
    first = tools_json(menu, True)
    assert [t["name"] for t in json.loads(first)] == ["finish", *TOOL_NAMES]
    assert list(TOOL_NAMES) == sorted(TOOL_NAMES)
    assert first == tools_json(menu, True) == json.dumps([*json.loads(menu), *tool_defs()], sort_keys=True)
    assert tools_json(menu, False) == menu, "without a workspace the tools block is the Menu, byte for byte"
    assert machine.menu_json("builder") == menu, "the Menu itself never holds the workspace tools"
    schemas = {t["name"]: t["input_schema"] for t in tool_defs()}
    assert schemas["workspace_read"]["required"] == ["path"]
    assert schemas["workspace_write"]["required"] == ["path", "content"]


@pytest.mark.parametrize("model", ["anthropic/claude-haiku-5-5", "local/qwen3-8b"])
def test_a_turn_uses_the_workspace_tools_and_they_never_become_picks(server: ModelServer, model: str) -> None:
    server.queue(
        tool_call("workspace_write", {"path": "out.txt", "content": "hello\n"}, id="w1"),
        tool_call("workspace_read", {"path": "../../etc/passwd"}, id="w2"),
        tool_call("workspace_list", {}, id="w3"),
        tool_call("workspace_search", {"text": "hell"}, id="w4"),
        tool_call("finish", {"summary": "out.txt"}, id="p1"),
    )

    async def body(host: Host) -> None:
        run_id = await host.start_run("builder")
        run = await until(host, status(run_id, "done", "failed"), timeout=30)
        assert run.status == "done", run.reason
        folder = folder_for(run_id, "builder", "run")
        assert (folder / "out.txt").read_text() == "hello\n"
        assert run.output == {
            "summary": "out.txt",
            "shown": {"exit_code": 0, "stdout": f"{folder}\nhello\n", "stderr": ""},
        }
        found = await host.db(records, run_id)
        assert [e["kind"] for e in found["journal"] if e["kind"] not in ("advance", "effect_started")] == [
            "start",
            "pick",
            "effect_done",
        ], "workspace calls never reach the run"
        assert [e["event"] for e in found["journal"] if e["kind"] == "pick"] == ["finish"]
        assert [m.kind for m in found["messages"]] == [
            "prompt",
            "reply",
            "workspace",
            "reply",
            "workspace",
            "reply",
            "workspace",
            "reply",
            "workspace",
            "reply",
            "tool_result",
        ]
        answers = [m.content[0] for m in found["messages"] if m.kind == "workspace"]
        assert [(a["tool_use_id"], a["is_error"]) for a in answers] == [
            ("w1", False),
            ("w2", True),
            ("w3", False),
            ("w4", False),
        ]
        assert answers[0]["content"] == "out.txt created (6 bytes).\n\nAllowed picks now: finish."
        assert answers[1]["content"].startswith('refused: "../../etc/passwd" holds "..", which leaves the workspace')
        assert answers[2]["content"].startswith("1 file in the workspace:\nout.txt (6 bytes)\n")
        assert answers[3]["content"] == "out.txt:1: hello\n\nAllowed picks now: finish."
        [turn] = found["turns"]
        assert turn.system.endswith(BRIEFING + "\n\n" + WORKSPACE_BRIEFING)

        requests = server.requests
        assert len(requests) == 5
        assert len(tools_hashes(requests)) == 1, "the same tools bytes on every request"
        names = [t["name"] if "name" in t else t["function"]["name"] for t in requests[0].body["tools"]]
        assert names == ["finish", *TOOL_NAMES]
        if model.startswith("anthropic/"):
            assert [t.get("cache_control") for t in requests[0].body["tools"]] == [None] * 4 + [CACHE]
            assert requests[0].body["system"][0]["text"].endswith(WORKSPACE_BRIEFING)
        refused = conversation(requests[2])[-1]["results"][-1]
        assert refused[0] == "w2" and refused[2] is True and refused[1].endswith("Allowed picks now: finish.")

    hosted({"builder": builder(model)}, body)


def test_a_call_the_agent_may_not_make_names_every_tool(server: ModelServer) -> None:
    server.queue(tool_call("rm_rf", {}, id="x1"), tool_call("finish", {"summary": "-"}, id="p1"))

    async def body(host: Host) -> None:
        run_id = await host.start_run("builder")
        await until(host, status(run_id, "done", "failed"), timeout=30)
        refusal = await host.db(lambda: TurnMessage.objects.get(run_id=run_id, kind="refusal").content[0]["content"])
        assert refusal.startswith(
            '"rm_rf" is not one of your tools (your tools: finish, workspace_list, '
            "workspace_read, workspace_search, workspace_write); nothing was delivered."
        )

    hosted({"builder": builder("anthropic/claude-haiku-5-5")}, body)


def test_an_effect_whose_folder_inside_the_workspace_is_missing_fails_with_the_reason(server: ModelServer) -> None:
    server.queue(tool_call("finish", {"summary": "nothing"}))

    async def body(host: Host) -> None:
        run_id = await host.start_run("builder")
        run = await until(host, status(run_id, "done", "failed"), timeout=30)
        assert run.output["shown"] == {"message": 'the workspace: "build" does not exist'}
        effect_row = await host.db(lambda: EffectRecord.objects.get(run_id=run_id))
        assert effect_row.status == "failed"

    hosted({"builder": builder("anthropic/claude-haiku-5-5", cwd="build")}, body)


def test_a_turn_taken_up_after_a_crash_repeats_its_last_write_and_nothing_changes(server: ModelServer) -> None:
    """A reply of two writes: the first is answered and committed with the reply, the host dies after the second
    file is written but before its answer is committed. The Turn taken up again carries the second call out once
    more: the file already holds exactly that, so nothing changes, and the model reads so."""
    workflows = {"builder": builder("anthropic/claude-haiku-5-5")}
    two_writes = Reply(
        calls=(
            ToolUse("workspace_write", {"path": "a.txt", "content": "A"}, id="w1"),
            ToolUse("workspace_write", {"path": "out.txt", "content": "B\n"}, id="w2"),
        )
    )
    server.queue(two_writes, text("thinking it over", delay=3.0))
    made: dict[str, str] = {}

    async def first(host: Host) -> None:
        made["run"] = await host.start_run("builder")
        await requests_made(server, 2)

    hosted(workflows, first, owner="host-1")
    run_id = made["run"]
    folder = folder_for(run_id, "builder", "run")
    assert (folder / "out.txt").read_text() == "B\n"
    second = TurnMessage.objects.get(run_id=run_id, kind="workspace", content__0__tool_use_id="w2")
    second.delete()  # as if the host died before this answer was committed
    mtime = (folder / "out.txt").stat().st_mtime_ns
    server.queue(tool_call("finish", {"summary": "two files"}, id="p1"))

    async def again(host: Host) -> None:
        run = await until(host, status(run_id, "done", "failed"), timeout=30)
        assert run.status == "done", run.reason

    hosted(workflows, again, owner="host-2")
    answers = [m.content[0] for m in TurnMessage.objects.filter(run_id=run_id, kind="workspace").order_by("seq")]
    assert [(a["tool_use_id"], a["content"].split("\n")[0]) for a in answers] == [
        ("w1", "a.txt created (1 byte)."),
        ("w2", "out.txt already holds exactly this (2 bytes); nothing changed."),
    ]
    assert (folder / "out.txt").stat().st_mtime_ns == mtime
    assert ModelCall.objects.filter(run_id=run_id, status="interrupted").count() == 1


def test_agents_that_share_see_one_folder(server: ModelServer) -> None:
    server.queue(
        tool_call("workspace_write", {"path": "out.txt", "content": "shared\n"}), tool_call("finish", {"summary": "-"})
    )

    async def body(host: Host) -> None:
        run_id = await host.start_run("builder")
        run = await until(host, status(run_id, "done", "failed"), timeout=30)
        assert run.output["shown"]["stdout"] == f"{folder_for(run_id, 'x', 'shared')}\nshared\n"

    hosted({"builder": builder("anthropic/claude-haiku-5-5", mode="shared")}, body)


# -- deleting a run ---------------------------------------------------------------------------------------------


def workspace_of_new_run() -> tuple[Run, Path]:
    run = Run.objects.create(workflow="builder", digest="-")
    folder = folder_for(run.id, "builder", "run")
    folder.mkdir(parents=True)
    (folder / "out.txt").write_text("left behind")
    return run, folder


def test_deleting_a_run_deletes_its_workspaces_once_committed() -> None:
    run, folder = workspace_of_new_run()
    with pytest.raises(RuntimeError), transaction.atomic():
        Run.objects.filter(id=run.id).delete()
        raise RuntimeError("the deletion is rolled back")
    assert folder.is_dir(), "a deletion that was rolled back keeps the folder"
    run_id = run.id
    run.delete()
    assert not (configured_root() / run_id).exists() and configured_root().is_dir()


def test_deleting_runs_in_the_admin_deletes_their_workspaces(admin_client: Any) -> None:
    run, folder = workspace_of_new_run()
    other, kept = workspace_of_new_run()
    response = admin_client.post(
        "/admin/engine/run/", {"action": "delete_selected", "_selected_action": [run.id], "post": "yes"}
    )
    assert response.status_code == 302
    assert not Run.objects.filter(id=run.id).exists() and not folder.parent.exists()
    assert kept.is_dir()


# -- code_review ------------------------------------------------------------------------------------------------


def test_code_review_the_coder_writes_real_files_and_the_tests_run_on_them(settings: Any) -> None:
    settings.JR2_SCRIPTED = True

    async def body(host: Host) -> None:
        run_id = await host.start_run("code_review", {"task": "Add add() to calc.py."})
        run = await until(host, status(run_id, "done", "failed"), timeout=90)
        assert run.status == "done", run.reason
        folder = folder_for(run_id, "coder", "shared")
        assert folder == folder_for(run_id, "reviewer", "shared")
        assert (folder / "calc.py").read_text() == code_review.CALC.format(doc='    """The sum of a and b."""\n')
        assert "def test_add_sums_two_numbers():" in (folder / "test_calc.py").read_text()
        effects = await host.db(lambda: list(EffectRecord.objects.filter(run_id=run_id).order_by("requested_at", "id")))
        assert [(e.slot, e.status) for e in effects] == [("checkout", "done"), ("tests", "done"), ("tests", "done")]
        assert [(e.result["exit_code"], e.result["stdout"].split()[0]) for e in effects[1:]] == [(0, "..")] * 2
        messages = await host.db(
            lambda: list(
                TurnMessage.objects.filter(run_id=run_id, kind="workspace").select_related("turn").order_by("id")
            )
        )
        said = [(m.turn.agent, m.content[0]["content"].split("\n")[0]) for m in messages]
        written = [
            (step[1]["path"], len(step[1]["content"].encode()))
            for step in [*code_review.FIRST_CHANGE, *code_review.FIXES]
            if step[0] == "workspace_write"
        ]
        assert said == [
            ("coder", "calc.py, lines 1-5 of 5:"),
            *[("coder", f"{path} replaced ({size} bytes).") for path, size in written],
            ("reviewer", "calc.py, lines 1-10 of 10:"),
        ]
        assert not any(m.content[0]["is_error"] for m in messages)

    hosted({"code_review": code_review.machine}, body)


def test_run_folders_stay_under_the_configured_root(settings: Any, tmp_path: Path) -> None:
    settings.JR2_WORKSPACE_ROOT = str(tmp_path / "elsewhere")
    assert folder_for("abc", "coder", "run") == tmp_path / "elsewhere" / "abc" / "agent-coder"


def test_an_effect_of_a_child_machine_uses_that_machines_agent(tmp_path: Path, settings: Any) -> None:
    settings.JR2_WORKSPACE_ROOT = str(tmp_path)
    slots = {"sub/coder": agent("script/x", "Code.", workspace="run"), "coder": agent("script/x", "Code.")}
    found = effect_folder("run1", "sub/effect-2", {"workspace": "coder"}, slots.get)
    assert found == str(tmp_path / "run1" / "agent-sub%2Fcoder")
    with pytest.raises(WorkspaceError, match='the Agent "coder" has no workspace'):
        effect_folder("run1", "effect-3", {"workspace": "coder"}, slots.get)


def test_bad_workspace_settings_are_a_system_check(settings: Any) -> None:
    settings.JR2_WORKSPACE_LIMITS = {"files": 0}
    [found] = workspace_settings()
    assert (found.id, found.msg) == ("engine.E001", "JR2_WORKSPACE_LIMITS['files'] must be a positive integer; got 0")
    with pytest.raises(WorkspaceError, match="must be a positive integer"):
        configured_limits()


def test_with_bad_caps_the_turn_faults_saying_what_is_wrong(server: ModelServer, settings: Any) -> None:
    settings.JR2_WORKSPACE_LIMITS = {"files": 0}

    async def body(host: Host) -> None:
        run_id = await host.start_run("builder")
        turn = await until(host, lambda: TurnRecord.objects.filter(run_id=run_id, status="faulted").first())
        assert turn.reason == (
            "the Turn loop failed: WorkspaceError: JR2_WORKSPACE_LIMITS['files'] must be a positive integer; got 0"
        )
        assert server.count() == 0, "the model is never asked"

    hosted({"builder": builder("anthropic/claude-haiku-5-5")}, body)
