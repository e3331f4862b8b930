"""`jr2 fork`, `jr2 export` and `jr2 import` as the installed console script against a live `jr2 up` (a fork goes
through the API; export and import read and write the server's database, or its API with --url), with what they
print and their exit codes; and the API refusing to move an imported run."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.live_server import LiveServer, served

#: A Gate, then an output made from the context: a fork with another greeting ends with another output.
GREET = """
from pydantic import BaseModel, Field
from engine import define_event, jr2_setup


class Door(BaseModel):
    name: str = Field(description="Who to greet.")


class GoInput(BaseModel):
    pass


go = define_event(name="go", input=GoInput, description="Send the greeting.")

machine = jr2_setup(events=[go]).create_machine({
    "id": "greet",
    "input": Door,
    "context": lambda input: {"name": input.name, "greeting": "Hello"},
    "initial": "waiting",
    "states": {
        "waiting": {"invoke": {"src": "gate", "id": "desk"}, "on": {"go": "sent"}},
        "sent": {"type": "final"},
    },
    "output": lambda context: {"text": context["greeting"] + ", " + context["name"] + "!"},
})
"""


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    with served(tmp_path_factory.mktemp("forks"), files={"greet.py": GREET}) as server:
        yield server


def started(live: LiveServer) -> str:
    done = live.jr2("run", "greet", "--input", json.dumps({"name": "Ada"}), "--detach")
    assert done.returncode == 0, done.stderr
    run_id = str(json.loads(done.stdout)["id"])
    live.wait_for(run_id, "waiting")
    return run_id


def count(live: LiveServer) -> int:
    with live.client() as client:
        return int(client.get("/api/runs").json()["count"])


def test_jr2_fork_with_an_edited_context_runs_to_another_output(live: LiveServer) -> None:
    parent = started(live)
    forked = live.jr2(
        "fork", parent[:6], "--step", "1", "--context", json.dumps({"name": "Ada", "greeting": "Bonjour"})
    )
    assert forked.returncode == 0, forked.stderr
    fork = json.loads(forked.stdout)
    assert fork["parent"] == parent and fork["parent_step"] == 1 and fork["status"] == "waiting"
    for run_id in (parent, fork["id"]):
        sent = live.jr2("send", run_id, "--gate", "desk", "--event", "go")
        assert sent.returncode == 0, sent.stderr
    assert live.wait_for(parent, "done")["output"] == {"text": "Hello, Ada!"}
    done = live.wait_for(fork["id"], "done")
    assert done["output"] == {"text": "Bonjour, Ada!"} and done["parent"] == parent
    with live.client() as client:
        assert client.get(f"/api/runs/{parent}").json()["forks"] == [fork["id"]]


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (
            ["--context", '{"name": 1, "greeting": "Hi"}'],
            'jr2 fork: 400: the edited context is refused: context.name must be a string like "Ada"; got a number',
        ),
        (["--context", "[1]"], "jr2 fork: --context must be a JSON object; got list"),
        (["--gate", "desk"], "jr2 fork: --gate and --event go together"),
        (["--gate", "desk", "--event", "nope"], "jr2 fork: 400: the Gate answer is refused after step 1"),
        (["--restart", "writer"], 'jr2 fork: 400: the Agent "writer" has no open Turn at that step (open Turns: none)'),
        (["--restart", "writer", "--restart-all"], "jr2 fork: give --restart AGENT or --restart-all, not both"),
    ],
)
def test_a_refused_fork_says_why_exits_2_and_makes_nothing(live: LiveServer, args: list[str], words: str) -> None:
    parent = started(live)
    before = count(live)
    refused = live.jr2("fork", parent, "--step", "1", *args)
    assert refused.returncode == 2 and words in refused.stderr, refused.stderr
    assert count(live) == before


def test_export_then_import_makes_a_read_only_copy_and_a_bad_file_changes_nothing(
    live: LiveServer, tmp_path: Path
) -> None:
    run_id = started(live)
    target = tmp_path / "run.json"
    exported = live.jr2("export", run_id, "-o", str(target))
    assert exported.returncode == 0, exported.stderr
    assert f"run {run_id}" in exported.stderr and str(target) in exported.stderr
    data = json.loads(target.read_text())
    assert data["format"] == "jr2.run" and data["run"]["status"] == "waiting"
    through_api = json.loads(live.jr2("export", run_id, "--url", live.url).stdout)
    assert through_api["journal"] == data["journal"] and through_api["run"] == data["run"]

    imported = live.jr2("import", str(target))
    assert imported.returncode == 0, imported.stderr
    copy = imported.stdout.strip()
    assert copy != run_id and f"(its id {run_id} is taken here)" in imported.stderr
    with live.client() as client:
        body = client.get(f"/api/runs/{copy}").json()
        assert body["imported_from"] == run_id and body["status"] == "waiting"
        answer = client.post(f"/api/runs/{copy}/gates/desk/events", json={"type": "go"})
        assert answer.status_code == 409 and "read-only" in answer.json()["detail"]
        assert client.post(f"/api/runs/{copy}/cancel").status_code == 409
        assert client.get(f"/api/runs/{copy}").json()["status"] == "waiting"

    before = count(live)
    data["journal"][0]["kind"] = "teleport"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    refused = live.jr2("import", str(bad))
    assert refused.returncode == 2
    assert (
        "jr2 import: " + str(bad) + ": the run export is refused, nothing was imported: journal.0.kind"
        in refused.stderr
    )
    missing = live.jr2("import", str(tmp_path / "nope.json"))
    assert missing.returncode == 2 and "No such file" in missing.stderr
    assert count(live) == before

    schema = live.jr2("export", "--schema")
    assert schema.returncode == 0 and json.loads(schema.stdout)["title"] == "RunExport"
