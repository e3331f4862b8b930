"""The JSON API end to end, on a real `jr2 up` (the module-scoped `live` server): each example workflow through HTTP
with its scripted stand-in Agents (a Gate answered over HTTP, code_review's real pytest Effect), every bad input of
SPEC.md 5 (each answered with JSON whose `detail` names what to fix, and changing nothing), tokens and permissions,
run listing, and the race of several answers to one Gate at once (exactly one is delivered, the rest get 409)."""

from __future__ import annotations

import math
import re
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.live_server import LiveServer, make_server

NOTES_GATE = "writing.asking"
QUESTION = "Who reads these notes, and what should they know first?"


# -- helpers ------------------------------------------------------------------------------------------------------


def error(response: httpx.Response, status: int, *names: str) -> str:
    """The response is `status` with a JSON body whose `detail` (a sentence, not a traceback) names each of `names`."""
    assert response.status_code == status, f"expected {status}, got {response.status_code}: {response.text[:500]}"
    kind = response.headers.get("content-type", "")
    assert kind.startswith("application/json"), f"an error must be JSON, got {kind!r}: {response.text[:300]}"
    body = response.json()
    assert isinstance(body, dict) and isinstance(body.get("detail"), str) and body["detail"].strip(), body
    detail = str(body["detail"])
    assert "Traceback" not in detail, detail
    for name in names:
        assert re.search(rf"(?<![\w.]){re.escape(name)}(?![\w])", detail), f"{name!r} is not named in {detail!r}"
    return detail


def start(client: httpx.Client, workflow: str, door: Any) -> str:
    created = client.post(f"/api/workflows/{workflow}/runs", json=door)
    assert created.status_code == 201, created.text
    body = created.json()
    assert body["workflow"] == workflow and body["url"] == f"/api/runs/{body['id']}", body
    assert body["status"] in ("running", "waiting", "done"), body
    return str(body["id"])


def journal(client: httpx.Client, run_id: str, after: int = 0) -> list[dict[str, Any]]:
    got = client.get(f"/api/runs/{run_id}/journal", params={"after": after} if after else None)
    assert got.status_code == 200, got.text
    return list(got.json()["entries"])


def kinds(entries: list[dict[str, Any]]) -> list[str]:
    """The journal's kinds without the clock's `advance` entries (those depend on timing)."""
    return [e["kind"] for e in entries if e["kind"] != "advance"]


def marks(client: httpx.Client, run_id: str) -> dict[str, Any]:
    """What must not move when an input is refused: the run's seq, status, open Gates and journal length."""
    run = client.get(f"/api/runs/{run_id}").json()
    return {
        "seq": run["seq"],
        "status": run["status"],
        "gates": [g["id"] for g in run["gates"]],
        "journal": len(journal(client, run_id)),
        "context": run["context"],
    }


def run_count(client: httpx.Client) -> int:
    return int(client.get("/api/runs", params={"page_size": 1}).json()["count"])


def notes_waiting(live: LiveServer, client: httpx.Client, changes: str = "One fix.") -> str:
    """A notes run whose writer has asked, so its Gate is open and the run is quiet."""
    run_id = start(client, "notes", {"changes": changes})
    run = live.wait_for(run_id, "waiting")
    assert [g["id"] for g in run["gates"]] == [NOTES_GATE], run
    return run_id


def triage_waiting(live: LiveServer, client: httpx.Client) -> str:
    """A triage run whose Agent has proposed a label: the desk's Gate is open and the run is quiet."""
    run_id = start(client, "triage", {"title": "Crash on save", "body": "It crashes when I save a file."})
    run = live.wait_for(run_id, "waiting")
    assert run["value"] == {"triaging": "proposed"}, run
    return run_id


def gate_url(run_id: str, gate: str = NOTES_GATE) -> str:
    return f"/api/runs/{run_id}/gates/{gate}/events"


def set_permissions(live: LiveServer, username: str, *codenames: str) -> None:
    live.shell(
        "from django.contrib.auth import get_user_model\n"
        "from django.contrib.auth.models import Permission\n"
        f"user = get_user_model().objects.get(username={username!r})\n"
        f"user.user_permissions.set(Permission.objects.filter(content_type__app_label='engine', "
        f"codename__in={list(codenames)!r}))\n"
    )


def new_token(live: LiveServer, username: str, *extra: str) -> str:
    key = live.new_token(username, *extra)
    assert key.startswith("jr2_") and "\n" not in key, key
    return key


@pytest.fixture(scope="module")
def client(live: LiveServer) -> Iterator[httpx.Client]:
    with live.client() as c:
        yield c


@pytest.fixture(scope="module")
def observer(live: LiveServer) -> str:
    """A token of a user who may read but holds none of the run permissions."""
    key = new_token(live, "observer", "--create-user")
    set_permissions(live, "observer")
    return key


# -- the OpenAPI document, the docs, addresses ----------------------------------------------------------------------


def test_openapi_lists_every_path_and_the_docs_are_html(live: LiveServer) -> None:
    document = httpx.get(f"{live.url}/api/openapi.json")
    assert document.status_code == 200 and document.headers["content-type"].startswith("application/json")
    paths = document.json()["paths"]
    for path, method in [
        ("/api/workflows", "get"),
        ("/api/workflows/{name}", "get"),
        ("/api/workflows/{name}/runs", "post"),
        ("/api/runs", "get"),
        ("/api/runs/{run_id}", "get"),
        ("/api/runs/{run_id}/turns", "get"),
        ("/api/runs/{run_id}/journal", "get"),
        ("/api/runs/{run_id}/gates/{gate}/events", "post"),
        ("/api/runs/{run_id}/cancel", "post"),
    ]:
        assert method in paths.get(path, {}), f"{method.upper()} {path} is not in the OpenAPI document: {sorted(paths)}"
    docs = httpx.get(f"{live.url}/api/docs")
    assert docs.status_code == 200 and docs.headers["content-type"].startswith("text/html")
    assert "/api/openapi.json" in docs.text


def test_an_unknown_api_address_is_a_json_404(client: httpx.Client) -> None:
    error(client.get("/api/nothing-here"), 404, "/api/nothing-here")
    error(client.get("/api/runs/x/y/z"), 404, "/api/runs/x/y/z")


def test_a_post_to_an_unknown_api_address_is_a_json_404(client: httpx.Client) -> None:
    """A client posting to a wrong address (with its bearer token, as every API client does) must get the JSON 404,
    not Django's HTML CSRF page."""
    error(client.post("/api/nothing-here", json={}), 404, "/api/nothing-here")
    error(client.post("/api/workflows/notes/run", json={"changes": "x"}), 404, "/api/workflows/notes/run")


def test_a_wrong_method_is_a_json_error_not_an_html_page(client: httpx.Client) -> None:
    """SPEC.md 5: errors are JSON with a `detail`, never an HTML page: a method the address does not take too."""
    error(client.get("/api/workflows/notes/runs"), 405)
    error(client.delete("/api/runs/abcdefghij"), 405)


# -- workflows ------------------------------------------------------------------------------------------------------


def test_the_workflows_with_their_seats_warnings_door_and_menus(client: httpx.Client) -> None:
    listed = client.get("/api/workflows")
    assert listed.status_code == 200, listed.text
    by_name = {w["name"]: w for w in listed.json()}
    assert {"notes", "code_review", "triage"} <= set(by_name)
    for workflow in by_name.values():
        assert workflow["loaded"] is True and workflow["warnings"] == [], workflow
    assert by_name["notes"]["seats"] == [
        "notes.writing agent:writer: [ask, done]",
        "notes.writing.asking gate: [reply]",
    ]
    assert "triage.triaging gate:desk: [confirm, label, withdraw]" in by_name["triage"]["seats"]

    notes = client.get("/api/workflows/notes").json()
    assert notes["door"]["required"] == ["changes"] and notes["door"]["properties"]["changes"]["type"] == "string"
    assert [tool["name"] for tool in notes["menus"]["writer"]] == ["ask", "done"]
    assert notes["menus"]["writer"][0]["input_schema"]["required"] == ["question"]
    assert notes["seats"] == by_name["notes"]["seats"] and notes["warnings"] == []

    triage = client.get("/api/workflows/triage").json()
    assert set(triage["door"]["required"]) == {"title", "body"}
    assert {tool["name"] for tool in triage["menus"]["triager"]} == {"find_duplicates", "label"}
    code_review = client.get("/api/workflows/code_review").json()
    assert set(code_review["menus"]) == {"coder", "reviewer"}


def test_an_unknown_workflow_is_a_404_naming_it(client: httpx.Client) -> None:
    before = run_count(client)
    error(client.get("/api/workflows/nosuch"), 404, "nosuch", "notes")
    error(client.post("/api/workflows/nosuch/runs", json={"changes": "x"}), 404, "nosuch", "notes")
    assert run_count(client) == before


# -- each example workflow through HTTP ---------------------------------------------------------------------------


def test_notes_end_to_end_with_its_gate_answered_over_http(live: LiveServer, client: httpx.Client) -> None:
    run_id = notes_waiting(live, client, "Faster start-up.\nA dark theme.")
    run = client.get(f"/api/runs/{run_id}").json()
    assert run["workflow"] == "notes" and run["scripted"] is True
    assert run["value"] == {"writing": "asking"} and run["context"]["question"] == QUESTION
    assert run["input"] == {"changes": "Faster start-up.\nA dark theme."}
    assert run["output"] is None and run["reason"] == ""
    [gate] = run["gates"]
    assert gate["id"] == NOTES_GATE and gate["state"] == "notes.writing.asking"
    assert gate["meta"] == {"question": QUESTION}
    [event] = gate["events"]
    assert event["type"] == "reply" and event["description"] == "Answer the writer's question."
    assert event["schema"]["required"] == ["text"] and event["schema"]["properties"]["text"]["type"] == "string"
    [turn] = run["turns"]
    assert turn["agent"] == "writer" and turn["scripted"] is True and turn["outstanding"]["event"] == "ask"
    assert isinstance(turn["allowed"], list) and turn["model"].startswith("script/notes.writer")

    answered = client.post(gate_url(run_id), json={"type": "reply", "text": "Operators of the service"})
    assert answered.status_code == 200, answered.text
    assert answered.json()["outcome"] == "delivered" and answered.json()["run"] == run_id
    # The embedded host keeps the answer as the fleet does, so it reads back in the same shape.
    [listed] = client.get(f"/api/runs/{run_id}/inputs").json()
    kept = client.get(listed["url"])
    assert kept.status_code == 200, kept.text
    assert kept.json() == listed
    assert {k: kept.json()[k] for k in ("run", "kind", "status", "reason", "gate", "event")} == {
        "run": run_id,
        "kind": "gate",
        "status": "delivered",
        "reason": "",
        "gate": NOTES_GATE,
        "event": "reply",
    }
    assert kept.json()["url"] == f"/api/runs/{run_id}/inputs/{listed['input']}"
    assert kept.json()["sent_by"] and kept.json()["settled_at"]
    error(client.get(f"/api/runs/{run_id}/inputs/{listed['input'] + 1000}"), 404, run_id)

    done = live.wait_for(run_id, "done")
    assert done["output"]["notes"] == (
        "## What's new\n\n- Faster start-up.\n- A dark theme.\n\n_Written for: Operators of the service_"
    )
    assert done["value"] == "published" and done["gates"] == [] and done["turns"] == []
    assert done["context"]["replies"] == 1
    [row] = [
        r
        for r in client.get("/api/runs", params={"workflow": "notes", "page_size": 500}).json()["results"]
        if r["id"] == run_id
    ]
    assert row["status"] == "done" and row["open_gates"] == 0 and row["scripted"] is True


def test_notes_turns_show_the_whole_conversation(live: LiveServer, client: httpx.Client) -> None:
    run_id = notes_waiting(live, client, "One fix.")
    answered = client.post(gate_url(run_id), json={"type": "reply", "text": "Site reliability engineers"})
    assert answered.status_code == 200, answered.text
    live.wait_for(run_id, "done")
    got = client.get(f"/api/runs/{run_id}/turns")
    assert got.status_code == 200, got.text
    [turn] = got.json()
    assert turn["agent"] == "writer" and turn["state"] == "notes.writing" and turn["status"] == "ended"
    assert turn["model"] == "script/notes.writer" and turn["scripted"] is True
    assert turn["declared_model"] == "anthropic/claude-haiku-5-5"
    assert turn["prompt"] == "Write the release notes for these changes:\nOne fix."
    messages = turn["messages"]
    assert [m["kind"] for m in messages] == ["prompt", "reply", "tool_result", "reply", "tool_result"]
    assert [m["seq"] for m in messages] == [1, 2, 3, 4, 5]
    assert "One fix." in messages[0]["content"][0]["text"]
    [ask] = messages[1]["content"]
    assert ask["type"] == "tool_use" and ask["name"] == "ask" and ask["input"] == {"question": QUESTION}
    [result] = messages[2]["content"]
    assert result["type"] == "tool_result" and result["tool_use_id"] == ask["id"] and result["is_error"] is False
    assert result["content"].startswith("The editor replied: Site reliability engineers")
    [done] = messages[3]["content"]
    assert done["name"] == "done" and "Site reliability engineers" in done["input"]["notes"]
    assert [c["model"] for c in turn["calls"]] == ["script/notes.writer"] * 2
    assert all(c["scripted"] and c["status"] == "done" for c in turn["calls"])
    assert [c["tool_calls"][0]["name"] for c in turn["calls"]] == ["ask", "done"]


def test_notes_journal_lists_every_entry_in_order(live: LiveServer, client: httpx.Client) -> None:
    run_id = notes_waiting(live, client, "One fix.")
    assert client.post(gate_url(run_id), json={"type": "reply", "text": "Everyone"}).status_code == 200
    run = live.wait_for(run_id, "done")
    got = client.get(f"/api/runs/{run_id}/journal").json()
    entries = got["entries"]
    assert got["run"] == run_id and got["seq"] == run["seq"] == len(entries)
    assert [e["seq"] for e in entries] == list(range(1, len(entries) + 1))
    assert kinds(entries) == ["start", "pick", "gate", "pick"]
    named = [e["entry"] for e in entries if e["kind"] != "advance"]
    assert named[0]["input"] == {"changes": "One fix."}
    assert (named[1]["agent"], named[1]["event"], named[1]["outcome"]) == ("writer", "ask", "outstanding")
    assert named[2] == {**named[2], "gate": NOTES_GATE, "event": "reply", "params": {"text": "Everyone"}}
    assert (named[3]["event"], named[3]["outcome"]) == ("done", "ended")
    assert [e["seq"] for e in journal(client, run_id, after=2)] == list(range(3, len(entries) + 1))


def test_code_review_runs_the_real_pytest_effect_and_loops_once(live: LiveServer, client: httpx.Client) -> None:
    run_id = start(client, "code_review", {"task": "Add add() to calc.py."})
    seen_testing = False
    deadline = time.monotonic() + 90
    while True:
        assert time.monotonic() < deadline, "code_review did not finish within 90 s"
        time.sleep(0.02)
        run = client.get(f"/api/runs/{run_id}").json()
        if run["effects"] and run["effects"][0]["slot"] == "tests":
            assert len(run["effects"]) == 1 and run["status"] == "running", run
            [turn] = run["turns"]
            assert turn["agent"] == "reviewer" and turn["outstanding"]["event"] == "run_tests", run
            seen_testing = True
        if run["status"] not in ("running", "waiting"):
            break
    assert seen_testing, "the run never showed its test Effect running"
    assert run["status"] == "done", run
    assert run["value"] == "approved" and run["gates"] == []
    assert run["output"] == {
        "summary": "Addressed the review notes in calc.py.",
        "verdict": "The tests pass and the notes were addressed.",
        "rounds": 1,
    }
    entries = journal(client, run_id)
    picks = [(e["entry"]["agent"], e["entry"]["event"]) for e in entries if e["kind"] == "pick"]
    assert picks == [
        ("coder", "submit"),
        ("reviewer", "run_tests"),
        ("reviewer", "request_changes"),
        ("coder", "submit"),
        ("reviewer", "run_tests"),
        ("reviewer", "approve"),
    ]
    checkout, *results = [e["entry"]["output"] for e in entries if e["kind"] == "effect_done"]
    assert checkout["exit_code"] == 0, "the project was copied into the workspace first"
    assert len(results) == 2 and len([e for e in entries if e["kind"] == "effect_started"]) == 3
    for output in results:
        assert output["exit_code"] == 0 and "100%" in output["stdout"], output

    turns = client.get(f"/api/runs/{run_id}/turns").json()
    assert [t["agent"] for t in turns] == ["coder", "reviewer", "coder", "reviewer"]
    assert turns[0]["conversation"] == turns[2]["conversation"] != turns[1]["conversation"] == turns[3]["conversation"]
    assert "Name the test after what it checks." in turns[2]["prompt"]
    test_answers = [
        m["content"][0]["content"]
        for t in turns
        if t["agent"] == "reviewer"
        for m in t["messages"]
        if m["kind"] == "tool_result" and '"exit_code"' in str(m["content"][0].get("content"))
    ]
    assert len(test_answers) == 2, turns
    writes = [
        m["content"][0]["content"]
        for t in turns
        if t["agent"] == "coder"
        for m in t["messages"]
        if m["kind"] == "workspace"
    ]
    assert [w.split("\n")[0].split(" (")[0] for w in writes] == [
        "calc.py, lines 1-5 of 5:",
        "calc.py replaced",
        "test_calc.py replaced",
        "calc.py replaced",
        "test_calc.py replaced",
    ], writes


def test_triage_desk_confirms_the_agents_proposal(live: LiveServer, client: httpx.Client) -> None:
    run_id = triage_waiting(live, client)
    run = client.get(f"/api/runs/{run_id}").json()
    assert run["context"]["proposal"] == {"label": "bug", "reason": "the report reads like a bug"}
    [desk] = run["gates"]
    assert desk["id"] == "desk" and desk["state"] == "triage.triaging"
    assert desk["meta"] == {  # the proposal the desk confirms is in its meta
        "title": "Crash on save",
        "body": "It crashes when I save a file.",
        "proposed label": "bug",
        "because": "the report reads like a bug",
    }
    events = {e["type"]: e for e in desk["events"]}
    assert set(events) == {"confirm", "label", "withdraw"}
    assert events["label"]["schema"]["properties"]["label"]["enum"] == ["bug", "feature", "question"]
    assert events["withdraw"]["schema"]["required"] == ["reason"]
    assert events["confirm"]["description"] == "Accept the triage Agent's proposed label."

    confirmed = client.post(gate_url(run_id, "desk"), json={"type": "confirm"})
    assert confirmed.status_code == 200, confirmed.text
    done = live.wait_for(run_id, "done")
    assert done["output"] == {"label": "bug", "labelled_by": "triager", "withdrawn": None}
    assert kinds(journal(client, run_id)) == ["start", "pick", "effect_started", "effect_done", "pick", "gate"]


def test_triage_desk_labels_the_issue_directly(live: LiveServer, client: httpx.Client) -> None:
    run_id = start(client, "triage", {"title": "Add an export button", "body": "Please let me export to CSV."})
    labelled = client.post(
        gate_url(run_id, "desk"), json={"type": "label", "label": "feature", "reason": "a new capability"}
    )
    assert labelled.status_code == 200, labelled.text
    done = live.wait_for(run_id, "done")
    assert done["output"] == {"label": "feature", "labelled_by": "desk", "withdrawn": None}
    assert done["value"] == "labelled"
    gates = [e["entry"] for e in journal(client, run_id) if e["kind"] == "gate"]
    assert gates == [
        {**gates[0], "gate": "desk", "event": "label", "params": {"label": "feature", "reason": "a new capability"}}
    ]


def test_triage_desk_withdraws_the_issue(live: LiveServer, client: httpx.Client) -> None:
    run_id = triage_waiting(live, client)
    withdrawn = client.post(gate_url(run_id, "desk"), json={"type": "withdraw", "reason": "reported twice"})
    assert withdrawn.status_code == 200, withdrawn.text
    done = live.wait_for(run_id, "done")
    assert done["output"] == {"label": None, "labelled_by": None, "withdrawn": "reported twice"}
    assert done["value"] == "withdrawn" and done["gates"] == []


# -- bad inputs: each a JSON `detail` naming what to fix, and nothing changed ---------------------------------------


@pytest.mark.parametrize(
    "workflow, door, field",
    [
        ("notes", {}, "changes"),
        ("notes", {"changes": 5}, "changes"),
        ("notes", {"changes": ["a", "b"]}, "changes"),
        ("triage", {"title": "Crash"}, "body"),
        ("code_review", {"task": {"what": "x"}}, "task"),
        ("notes", {"changes": "One fix.\x00"}, "changes"),  # PostgreSQL cannot store NUL: refused, not a 500
    ],
)
def test_a_bad_door_is_a_400_naming_the_field(client: httpx.Client, workflow: str, door: Any, field: str) -> None:
    before = run_count(client)
    response = client.post(f"/api/workflows/{workflow}/runs", json=door)
    error(response, 400, field)
    assert field in [e["field"] for e in response.json().get("errors", [])], response.json()
    assert run_count(client) == before


@pytest.mark.parametrize(
    "address, status",
    [
        ("/api/runs/%00", 404),
        ("/api/runs/ab%00cd/turns", 404),
        ("/api/workflows/no%00tes", 404),
        ("/api/runs/%00/gates/writing.asking/events", 404),
        ("/api/runs?workflow=%00", 400),
        ("/api/runs?status=done&workflow=no%00tes", 400),
    ],
)
def test_an_address_holding_nul_is_a_404_or_a_400_never_a_500(client: httpx.Client, address: str, status: int) -> None:
    """PostgreSQL cannot compare text holding NUL: such an address is refused before anything looks it up."""
    sent = (
        client.post(address, json={"type": "reply", "text": "x"})
        if address.endswith("/events")
        else client.get(address)
    )
    error(sent, status, "NUL character")


@pytest.mark.parametrize(
    "address, status",
    [
        ("/runs/%00/", 404),
        ("/runs/ab%00cd/timeline/", 404),
        ("/workflows/no%00tes/", 404),
        ("/runs/?workflow=%00", 400),
        ("/runs/?q=%00", 400),
        ("/gates/?q=a%00", 400),
    ],
)
def test_a_console_address_holding_nul_is_a_404_or_a_400_never_a_500(
    live: LiveServer, address: str, status: int
) -> None:
    with httpx.Client(base_url=live.url, trust_env=False) as browser:
        response = browser.get(address)
    assert response.status_code == status and "NUL character" in response.text, (
        response.status_code,
        response.text[:300],
    )


@pytest.mark.parametrize("door", [["changes"], "One fix.", 5, True])
def test_a_door_that_is_not_an_object_is_a_400(client: httpx.Client, door: Any) -> None:
    before = run_count(client)
    detail = error(client.post("/api/workflows/notes/runs", json=door), 400)
    assert re.search(r"object|dict", detail, re.I), detail
    assert run_count(client) == before


@pytest.mark.parametrize("body", [b"{changes: x}", b"not json", b'{"changes": "x"'])
def test_a_start_body_that_is_not_json_is_a_400(client: httpx.Client, body: bytes) -> None:
    before = run_count(client)
    detail = error(
        client.post("/api/workflows/notes/runs", content=body, headers={"content-type": "application/json"}), 400
    )
    assert "JSON" in detail, detail
    assert run_count(client) == before


def test_an_answer_to_a_gate_that_is_not_open_is_a_404_naming_the_open_gates(
    live: LiveServer, client: httpx.Client
) -> None:
    run_id = notes_waiting(live, client)
    before = marks(client, run_id)
    error(client.post(gate_url(run_id, "desk"), json={"type": "reply", "text": "x"}), 404, "desk", NOTES_GATE)
    error(client.post(gate_url(run_id, "writing"), json={"type": "reply", "text": "x"}), 404, NOTES_GATE)
    error(client.post(gate_url(run_id, "writing.asking/deeper"), json={"type": "reply", "text": "x"}), 404, NOTES_GATE)
    assert marks(client, run_id) == before


def test_an_event_the_gate_does_not_accept_is_a_400_naming_what_it_accepts(
    live: LiveServer, client: httpx.Client
) -> None:
    run_id = notes_waiting(live, client)
    before = marks(client, run_id)
    error(client.post(gate_url(run_id), json={"type": "done", "notes": "x"}), 400, "reply")
    error(client.post(gate_url(run_id), json={"type": "nonsense"}), 400, "nonsense", "reply")
    assert marks(client, run_id) == before

    desk = triage_waiting(live, client)
    before = marks(client, desk)
    error(
        client.post(gate_url(desk, "desk"), json={"type": "find_duplicates", "query": "crash"}),
        400,
        "confirm",
        "label",
        "withdraw",
    )
    assert marks(client, desk) == before


@pytest.mark.parametrize(
    "gate_body, field",
    [
        ({"type": "reply"}, "text"),
        ({"type": "reply", "text": 5}, "text"),
        ({"type": "reply", "text": {"nested": True}}, "text"),
        ({"type": "reply", "text": "Ad\x00mins"}, "text"),
    ],
)
def test_a_bad_gate_payload_is_a_400_naming_the_field(
    live: LiveServer, client: httpx.Client, gate_body: dict[str, Any], field: str
) -> None:
    run_id = notes_waiting(live, client)
    before = marks(client, run_id)
    detail = error(client.post(gate_url(run_id), json=gate_body), 400, field)
    assert "not valid" in detail, detail
    assert marks(client, run_id) == before


@pytest.mark.parametrize(
    "gate_body, field",
    [
        ({"type": "label", "label": "urgent", "reason": "x"}, "label"),
        ({"type": "label", "label": "bug"}, "reason"),
        ({"type": "withdraw"}, "reason"),
    ],
)
def test_a_bad_desk_payload_is_a_400_naming_the_field(
    live: LiveServer, client: httpx.Client, gate_body: dict[str, Any], field: str
) -> None:
    run_id = triage_waiting(live, client)
    before = marks(client, run_id)
    detail = error(client.post(gate_url(run_id, "desk"), json=gate_body), 400, field)
    assert "not valid" in detail, detail
    assert marks(client, run_id) == before


@pytest.mark.parametrize("sender", ["desk", {"party": "agent", "id": "writer"}, None])
def test_a_gate_body_carrying_sender_is_a_400(live: LiveServer, client: httpx.Client, sender: Any) -> None:
    run_id = notes_waiting(live, client)
    before = marks(client, run_id)
    error(client.post(gate_url(run_id), json={"type": "reply", "text": "x", "sender": sender}), 400, "sender")
    assert marks(client, run_id) == before


@pytest.mark.parametrize(
    "content, what",
    [
        (b"{type: reply}", "JSON"),
        (b"reply", "JSON"),
        (b'["reply", "x"]', "type"),
        (b'"reply"', "type"),
        (b"null", "type"),
        (b'{"text": "x"}', "type"),
        (b'{"type": 5, "text": "x"}', "type"),
    ],
)
def test_a_gate_body_that_is_not_an_event_object_is_a_400(
    live: LiveServer, client: httpx.Client, content: bytes, what: str
) -> None:
    run_id = notes_waiting(live, client)
    before = marks(client, run_id)
    error(client.post(gate_url(run_id), content=content, headers={"content-type": "application/json"}), 400, what)
    assert marks(client, run_id) == before


def test_an_unknown_run_is_a_404_everywhere(client: httpx.Client) -> None:
    for response in (
        client.get("/api/runs/nosuchrun"),
        client.get("/api/runs/nosuchrun/turns"),
        client.get("/api/runs/nosuchrun/journal"),
        client.post(gate_url("nosuchrun"), json={"type": "reply", "text": "x"}),
        client.post("/api/runs/nosuchrun/cancel"),
    ):
        error(response, 404, "nosuchrun")


def test_an_answer_to_a_gate_of_a_finished_run_is_a_409(live: LiveServer, client: httpx.Client) -> None:
    run_id = notes_waiting(live, client)
    assert client.post(gate_url(run_id), json={"type": "reply", "text": "x"}).status_code == 200
    live.wait_for(run_id, "done")
    before = marks(client, run_id)
    detail = error(client.post(gate_url(run_id), json={"type": "reply", "text": "again"}), 409, run_id)
    assert "done" in detail or "ended" in detail, detail
    error(client.post(f"/api/runs/{run_id}/cancel"), 409, run_id)
    assert marks(client, run_id) == before


def test_cancel_ends_the_run_and_closes_its_gates(live: LiveServer, client: httpx.Client) -> None:
    run_id = notes_waiting(live, client)
    cancelled = client.post(f"/api/runs/{run_id}/cancel")
    assert cancelled.status_code == 200, cancelled.text
    assert cancelled.json() == {"outcome": "cancelled", "run": run_id, "status": "cancelled"}
    [kept] = client.get(f"/api/runs/{run_id}/inputs").json()
    assert (kept["kind"], kept["status"]) == ("cancel", "delivered")
    run = client.get(f"/api/runs/{run_id}").json()
    assert run["status"] == "cancelled" and run["gates"] == [] and run["turns"] == [] and run["effects"] == []
    assert kinds(journal(client, run_id))[-1] == "cancel"
    assert all(t["status"] != "open" for t in client.get(f"/api/runs/{run_id}/turns").json())
    listed = client.get("/api/runs", params={"status": "cancelled", "page_size": 500}).json()["results"]
    assert [r["open_gates"] for r in listed if r["id"] == run_id] == [0]

    before = marks(client, run_id)
    error(client.post(f"/api/runs/{run_id}/cancel"), 409, run_id)
    error(client.post(gate_url(run_id), json={"type": "reply", "text": "late"}), 409, run_id)
    assert marks(client, run_id) == before


# -- listing runs -------------------------------------------------------------------------------------------------


def test_runs_filter_by_workflow_and_status(live: LiveServer, client: httpx.Client) -> None:
    waiting = notes_waiting(live, client)
    proposed = triage_waiting(live, client)
    by_workflow = client.get("/api/runs", params={"workflow": "triage", "page_size": 500}).json()
    assert by_workflow["count"] == len(by_workflow["results"]) > 0
    assert {r["workflow"] for r in by_workflow["results"]} == {"triage"}
    assert proposed in [r["id"] for r in by_workflow["results"]] and waiting not in [
        r["id"] for r in by_workflow["results"]
    ]
    by_status = client.get("/api/runs", params={"status": "waiting", "page_size": 500}).json()
    assert {r["status"] for r in by_status["results"]} == {"waiting"}
    assert {waiting, proposed} <= {r["id"] for r in by_status["results"]}
    both = client.get("/api/runs", params={"workflow": "notes", "status": "waiting", "page_size": 500}).json()
    assert waiting in [r["id"] for r in both["results"]] and proposed not in [r["id"] for r in both["results"]]
    assert [r["open_gates"] for r in both["results"] if r["id"] == waiting] == [1]
    done = client.get("/api/runs", params={"status": "done", "page_size": 500}).json()
    assert waiting not in [r["id"] for r in done["results"]]
    unknown = client.get("/api/runs", params={"workflow": "nosuch"})
    assert unknown.status_code == 400 and "nosuch" in unknown.text  # an unknown workflow is named, not "0 runs"


def test_runs_with_an_unknown_status_is_a_400_naming_the_statuses(client: httpx.Client) -> None:
    error(client.get("/api/runs", params={"status": "sleeping"}), 400, "sleeping", "waiting", "done", "cancelled")
    error(client.get("/api/runs", params={"page": "first"}), 400, "page")


def test_runs_are_paginated(live: LiveServer, client: httpx.Client) -> None:
    for _ in range(3):
        start(client, "notes", {"changes": "pagination"})
    everything = client.get("/api/runs", params={"page_size": 500}).json()
    count = everything["count"]
    assert count == len(everything["results"]) >= 3
    ids = [r["id"] for r in everything["results"]]
    created = [r["created_at"] for r in everything["results"]]
    assert created == sorted(created, reverse=True), "runs are listed newest first"
    pages = math.ceil(count / 2)
    seen: list[str] = []
    for page in range(1, pages + 1):
        got = client.get("/api/runs", params={"page_size": 2, "page": page}).json()
        assert (got["count"], got["page"], got["pages"]) == (count, page, pages)
        assert len(got["results"]) == (2 if page < pages else count - 2 * (pages - 1))
        seen += [r["id"] for r in got["results"]]
    assert seen == ids


# -- tokens and permissions ---------------------------------------------------------------------------------------


def every_call(run_id: str) -> list[tuple[str, str, Any]]:
    return [
        ("GET", "/api/workflows", None),
        ("GET", "/api/workflows/notes", None),
        ("GET", "/api/runs", None),
        ("GET", f"/api/runs/{run_id}", None),
        ("GET", f"/api/runs/{run_id}/turns", None),
        ("GET", f"/api/runs/{run_id}/journal", None),
        ("POST", "/api/workflows/notes/runs", {"changes": "x"}),
        ("POST", gate_url(run_id), {"type": "reply", "text": "x"}),
        ("POST", f"/api/runs/{run_id}/cancel", None),
    ]


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Bearer jr2_not-a-real-token"},
        {"Authorization": "Bearer"},
        {"Authorization": "Token {token}"},
        {"Authorization": "{token}"},
    ],
    ids=["none", "wrong", "empty", "other-scheme", "no-scheme"],
)
def test_calls_without_a_valid_token_are_401(live: LiveServer, client: httpx.Client, headers: dict[str, str]) -> None:
    run_id = notes_waiting(live, client)
    before, count = marks(client, run_id), run_count(client)
    headers = {k: v.format(token=live.token) for k, v in headers.items()}
    with httpx.Client(base_url=live.url, headers=headers, timeout=30) as anonymous:
        for method, url, body in every_call(run_id):
            detail = error(anonymous.request(method, url, json=body), 401)
            assert "Bearer" in detail and "jr2 token create" in detail, detail
    assert marks(client, run_id) == before and run_count(client) == count


def test_a_revoked_token_is_401(live: LiveServer, client: httpx.Client) -> None:
    key = new_token(live, "e2e", "--name", "soon-revoked")
    with live.client(key) as mine:
        assert mine.get("/api/runs").status_code == 200
    listed = live.jr2("token", "list")
    [line] = [line for line in listed.stdout.splitlines() if line.rstrip().endswith("soon-revoked")]
    prefix = line.split("…")[0].strip()
    assert prefix == key[: len(prefix)] and len(prefix) >= 8 and "active" in line, line
    revoked = live.jr2("token", "revoke", prefix)
    assert revoked.returncode == 0, revoked.stdout + revoked.stderr
    [line] = [line for line in live.jr2("token", "list").stdout.splitlines() if line.rstrip().endswith("soon-revoked")]
    assert "revoked" in line, line
    # The server trusted the token it checked for JR2_TOKEN_CACHE_SECONDS (2 s; engine/web/tokens.py): revoked in
    # another process (the CLI), it is refused within that, never later.
    revoked_at = time.monotonic()
    with live.client(key) as mine:
        while mine.get("/api/runs").status_code == 200:
            assert time.monotonic() - revoked_at < 2.0 + 1.0, "a revoked token still works past the token cache"
            time.sleep(0.1)

    run_id = notes_waiting(live, client)
    before, count = marks(client, run_id), run_count(client)
    with live.client(key) as mine:
        for method, url, body in every_call(run_id):
            error(mine.request(method, url, json=body), 401)
    assert marks(client, run_id) == before and run_count(client) == count
    assert client.get("/api/runs").status_code == 200, "revoking one token leaves the others working"


def test_a_user_without_the_permissions_reads_but_may_not_start_answer_or_cancel(
    live: LiveServer, client: httpx.Client, observer: str
) -> None:
    run_id = notes_waiting(live, client)
    before, count = marks(client, run_id), run_count(client)
    with live.client(observer) as reader:
        for method, url, _ in every_call(run_id)[:6]:
            assert reader.request(method, url).status_code == 200, url
        error(reader.post("/api/workflows/notes/runs", json={"changes": "x"}), 403, "observer", "engine.start_run")
        error(reader.post(gate_url(run_id), json={"type": "reply", "text": "x"}), 403, "observer", "engine.answer_gate")
        error(reader.post(f"/api/runs/{run_id}/cancel"), 403, "observer", "engine.cancel_run")
    assert marks(client, run_id) == before and run_count(client) == count


def test_each_permission_allows_only_its_own_action(live: LiveServer, client: httpx.Client) -> None:
    key = new_token(live, "answerer", "--create-user")
    set_permissions(live, "answerer", "answer_gate")
    run_id = notes_waiting(live, client)
    count = run_count(client)
    with live.client(key) as answerer:
        error(answerer.post("/api/workflows/notes/runs", json={"changes": "x"}), 403, "engine.start_run")
        error(answerer.post(f"/api/runs/{run_id}/cancel"), 403, "engine.cancel_run")
        assert client.get(f"/api/runs/{run_id}").json()["status"] == "waiting"
        answered = answerer.post(gate_url(run_id), json={"type": "reply", "text": "from the answerer"})
        assert answered.status_code == 200, answered.text
    assert "from the answerer" in live.wait_for(run_id, "done")["output"]["notes"]
    assert run_count(client) == count


def test_open_reads_let_anyone_read_but_not_write(tmp_path: Path) -> None:
    server = make_server(tmp_path, {"JR2_OPEN_READS": "1"})
    try:
        with server.client() as owner:
            run_id = notes_waiting(server, owner)
            before, count = marks(owner, run_id), run_count(owner)
        with httpx.Client(base_url=server.url, timeout=30) as anonymous:
            for method, url, body in every_call(run_id):
                response = anonymous.request(method, url, json=body)
                if method == "GET":
                    assert response.status_code == 200, (url, response.text)
                else:
                    error(response, 401)
            assert anonymous.get(f"/api/runs/{run_id}").json()["gates"][0]["id"] == NOTES_GATE
        with server.client() as owner:
            assert marks(owner, run_id) == before and run_count(owner) == count
    finally:
        server.stop()


# -- the race: several answers to one Gate at once ----------------------------------------------------------------


@pytest.mark.parametrize("round_", range(5))
def test_concurrent_answers_to_one_gate_deliver_exactly_one(
    live: LiveServer, client: httpx.Client, round_: int
) -> None:
    n = 8
    run_id = notes_waiting(live, client)
    clients = [live.client() for _ in range(n)]
    for c in clients:  # connect first, so the answers leave together
        assert c.get("/api/workflows").status_code == 200
    barrier = threading.Barrier(n)
    responses: list[httpx.Response | BaseException | None] = [None] * n

    def answer(i: int) -> None:
        try:
            barrier.wait(timeout=30)
            responses[i] = clients[i].post(gate_url(run_id), json={"type": "reply", "text": f"answer {i}"})
        except BaseException as err:
            responses[i] = err

    threads = [threading.Thread(target=answer, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    for c in clients:
        c.close()
    assert all(isinstance(r, httpx.Response) for r in responses), responses
    got = [r for r in responses if isinstance(r, httpx.Response)]
    statuses = Counter(r.status_code for r in got)
    summary = [(r.status_code, r.json().get("detail") or r.json().get("outcome")) for r in got]
    winners = [i for i, r in enumerate(got) if r.status_code == 200]
    assert len(winners) == 1, summary
    assert got[winners[0]].json()["outcome"] == "delivered"
    done = live.wait_for(run_id, "done")
    assert done["output"]["notes"].endswith(f"_Written for: answer {winners[0]}_")
    gate_entries = [e["entry"] for e in journal(client, run_id) if e["kind"] == "gate"]
    assert len(gate_entries) == 1 and gate_entries[0]["params"] == {"text": f"answer {winners[0]}"}, gate_entries

    assert statuses == {200: 1, 409: n - 1}, f"every losing answer must be a 409 (the Gate closed): {summary}"
    for r in got:
        if r.status_code == 409:
            assert re.search(r"closed|ended", error(r, 409)), summary


# -- forks that restart open Turns ----------------------------------------------------------------------------------


def notes_replied(live: LiveServer, client: httpx.Client) -> tuple[str, int]:
    """A finished notes run and the step after which the editor's reply was taken (the writer's Turn open, with
    nothing outstanding)."""
    run_id = notes_waiting(live, client, "Faster start-up.")
    assert client.post(gate_url(run_id), json={"type": "reply", "text": "Admins"}).status_code == 200
    live.wait_for(run_id, "done")
    step = next(e["seq"] for e in journal(client, run_id) if e["kind"] == "gate")
    return run_id, int(step)


EDITED = {"changes": "A new export button.", "replies": 1, "question": QUESTION}


def test_a_fork_with_restart_turns_rebuilds_the_writers_prompt_from_the_edited_context(
    live: LiveServer, client: httpx.Client
) -> None:
    parent, step = notes_replied(live, client)
    made = client.post(f"/api/runs/{parent}/fork", json={"step": step, "context": EDITED, "restart_turns": ["writer"]})
    assert made.status_code == 201, made.text
    fork = made.json()["id"]
    [first, *_] = journal(client, fork)
    assert first["kind"] == "fork" and first["entry"]["restarted"] == ["writer"]
    live.wait_for(fork, "waiting")  # a fresh conversation: the writer asks again
    assert client.post(gate_url(fork), json={"type": "reply", "text": "Operators"}).status_code == 200
    notes = live.wait_for(fork, "done")["output"]["notes"]
    assert "- A new export button." in notes and "Faster start-up" not in notes


@pytest.mark.parametrize(
    ("restart", "names"),
    [
        ("writer", ["restart_turns"]),
        (1, ["restart_turns"]),
        (["editor"], ["editor", "writer"]),
    ],
)
def test_a_bad_restart_turns_is_a_400_and_forks_nothing(
    live: LiveServer, client: httpx.Client, restart: Any, names: list[str]
) -> None:
    parent, step = notes_replied(live, client)
    before = run_count(client)
    refused = client.post(f"/api/runs/{parent}/fork", json={"step": step, "context": EDITED, "restart_turns": restart})
    error(refused, 400, *names)
    assert run_count(client) == before
