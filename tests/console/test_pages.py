"""The Console's pages for every example workflow and every run status, who may see and do what, and escaping."""

from __future__ import annotations

import asyncio
import re
import xml.etree.ElementTree as ET
from typing import Any

import pytest
from django.test import AsyncClient, Client
from django.utils.html import escape

from engine.models import JournalEntry, Run
from engine.runtime.host import Host
from tests.console.conftest import WORKFLOWS, logged_in, post_as
from workflows import notes

pytestmark = pytest.mark.django_db(transaction=True)


def group_of(page: str, path: str) -> str:
    match = re.search(rf'<g id="state-{re.escape(path)}"[^>]*>', page)
    assert match, f"no SVG group for state {path}"
    return match.group(0)


# -- who may read ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("url", ["/", "/workflows/notes/", "/workflows/notes/graph.svg", "/runs/"])
def test_an_anonymous_visitor_is_sent_to_the_login_page(url: str, client: Client) -> None:
    response = client.get(url)
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/?next=")


def test_open_reads_let_anyone_read_but_show_no_form_to_act(
    client: Client, settings: Any, runs: dict[str, str]
) -> None:
    settings.JR2_CONSOLE_OPEN_READS = True
    page = client.get(f"/runs/{runs['waiting']}/").content.decode()
    assert "writing.asking" in page and "You may read this Gate but not answer it." in page
    assert "Send reply" not in page and "Cancel run" not in page
    assert "Start a run" not in client.get("/workflows/notes/").content.decode()


def test_the_login_page_logs_a_user_in(client: Client, observer: Any) -> None:
    assert client.get("/accounts/login/").status_code == 200
    response = client.post("/accounts/login/", {"username": "olga", "password": "pw-olga", "next": "/runs/"})
    assert response.status_code == 302 and response["Location"] == "/runs/"
    assert client.get("/runs/").status_code == 200


# -- workflows ------------------------------------------------------------------------------------------------


def test_home_lists_each_workflow_with_its_live_runs_gates_and_warnings(observer: Any, runs: dict[str, str]) -> None:
    page = logged_in(observer).get("/").content.decode()
    for name in WORKFLOWS:
        assert f'id="workflow-{name}"' in page
    row = page[page.index('id="workflow-notes"') : page.index('id="workflow-triage"')]
    assert re.search(r"status=running,waiting\">1</a>", row), "notes has one live run"
    assert '<span class="badge waiting">1</span>' in row, "and one open Gate"


def test_home_shows_a_workflow_that_fails_to_load_with_its_file_and_line(
    observer: Any, settings: Any, tmp_path: Any
) -> None:
    settings.JR2_WORKFLOWS = str(tmp_path)
    (tmp_path / "broken.py").write_text("x = 1\nimport jr2_no_such_module  # <script>\n")
    page = logged_in(observer).get("/").content.decode()
    assert 'id="workflow-broken"' in page and "broken.py, line 2" in page
    assert "jr2_no_such_module" in page


@pytest.mark.parametrize("name", list(WORKFLOWS))
def test_a_workflow_page_draws_its_graph_seats_menus_and_start_form(name: str, operator: Any) -> None:
    machine = WORKFLOWS[name]
    page = logged_in(operator).get(f"/workflows/{name}/").content.decode()
    svg = page[page.index("<svg") : page.index("</svg>") + 6]
    ids = {g.get("id") for g in ET.fromstring(svg).iter("{http://www.w3.org/2000/svg}g")}
    for node in machine.nodes:
        if node.path:
            assert "state-" + ".".join(node.path) in ids
    assert machine.seats_text(name).replace("—", "&mdash;") in page or all(
        line.strip() in page for line in machine.seats_text(name).splitlines()[1:]
    )
    for tools in (machine.menu(agent) for agent in machine.menus()):
        for tool in tools:
            assert f"<code>{tool['name']}</code>" in page
    assert "Start a run" in page
    for field, info in machine.door.model_fields.items():
        assert f'name="{field}"' in page and escape(info.description or "") in page


def test_the_start_form_marks_required_fields_and_shows_the_servers_errors_at_the_field(operator: Any) -> None:
    page = logged_in(operator).get("/workflows/notes/").content.decode()
    assert 'name="changes"' in page and 'class="required"' in page
    response = post_as(operator, "/workflows/notes/runs/", {"changes": ""})
    assert response.status_code == 400
    body = response.content.decode()
    assert "field-error" in body and "has-error" in body
    assert Run.objects.count() == 0


def test_starting_a_run_from_the_form_goes_to_its_page(operator: Any, settings: Any) -> None:
    settings.JR2_SCRIPTED = True
    response = post_as(operator, "/workflows/notes/runs/", {"changes": "One fix."})
    run = Run.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/runs/{run.id}/"
    assert run.input == {"changes": "One fix."} and run.started_by == operator


def test_the_graph_svg_is_served_as_svg(observer: Any) -> None:
    response = logged_in(observer).get("/workflows/notes/graph.svg")
    assert response["Content-Type"].startswith("image/svg+xml")
    assert 'id="state-writing.asking"' in response.content.decode()


# -- runs -----------------------------------------------------------------------------------------------------


def test_the_runs_list_filters_by_workflow_and_status_and_counts(observer: Any, runs: dict[str, str]) -> None:
    client = logged_in(observer)
    page = client.get("/runs/").content.decode()
    assert all(f'id="run-{run_id}"' in page for run_id in runs.values())
    waiting = client.get("/runs/?status=waiting").content.decode()
    assert f'id="run-{runs["waiting"]}"' in waiting and f'id="run-{runs["done"]}"' not in waiting
    triage = client.get("/runs/?workflow=triage").content.decode()
    assert f'id="run-{runs["triage"]}"' in triage and f'id="run-{runs["waiting"]}"' not in triage
    assert "1 run" in triage


def test_the_runs_list_pages(observer: Any, runs: dict[str, str], monkeypatch: Any) -> None:
    import console.pages.runlist

    monkeypatch.setattr(console.pages.runlist, "PAGE_SIZE", 4)
    client = logged_in(observer)
    first, second = client.get("/runs/").content.decode(), client.get("/runs/?page=2").content.decode()
    assert "page 1 of 2" in first and "page 2 of 2" in second
    shown = set(re.findall(r'id="run-(\w+)"', first)) | set(re.findall(r'id="run-(\w+)"', second))
    assert shown == set(runs.values())


def test_a_waiting_run_shows_its_lit_state_its_gate_form_and_the_agents_turn(
    answerer: Any, runs: dict[str, str]
) -> None:
    page = logged_in(answerer).get(f"/runs/{runs['waiting']}/").content.decode()
    assert "active" in group_of(page, "writing.asking") and "active" in group_of(page, "writing")
    assert "active" not in group_of(page, "published")
    assert 'data-active="writing writing.asking"' in page
    assert '<span class="badge waiting" id="run-status-badge">waiting</span>' in page
    assert 'name="text"' in page and "The answer, in prose." in page and "Send reply" in page
    assert "Who reads these notes, and what should they know first?" in page
    assert "notes.writing agent:writer: [ask, done]" in page
    assert "<code>ask</code>" in page and "script/notes.writer" in page and "badge scripted" in page
    assert 'ws-connect="/ws/runs/' in page


def test_a_seat_names_the_model_that_plays_it_not_only_the_declared_one(
    observer: Any, runs: dict[str, str], settings: Any
) -> None:
    declared = notes.machine.agents["writer"].model
    page = logged_in(observer).get(f"/runs/{runs['waiting']}/").content.decode()
    assert f"script/notes.writer (scripted stand-in for {declared})" in page
    settings.JR2_SCRIPTED = False
    settings.JR2_MODEL_OVERRIDE = {"notes.writer": "local/smollm2"}
    page = logged_in(observer).get(f"/runs/{runs['waiting']}/").content.decode()
    assert f"local/smollm2 (JR2_MODEL_OVERRIDE, declared {declared})" in page


def test_an_observer_sees_the_gate_but_no_form_and_no_cancel(observer: Any, runs: dict[str, str]) -> None:
    page = logged_in(observer).get(f"/runs/{runs['waiting']}/").content.decode()
    assert "You may read this Gate but not answer it." in page
    assert 'name="text"' not in page and "Cancel run" not in page


@pytest.mark.parametrize("status", ["done", "cancelled", "failed", "triage"])
def test_every_run_status_renders(status: str, operator: Any, runs: dict[str, str]) -> None:
    run = Run.objects.get(id=runs[status])
    page = logged_in(operator).get(f"/runs/{run.id}/").content.decode()
    assert f'id="run-status-badge">{run.status}<' in page
    if run.status == "done":
        assert "Output" in page and "visited" in page
    if run.status == "failed":
        assert "the model stopped answering" in page
    if run.status == "cancelled":
        assert "Cancelled" in page and "Cancel run" not in page


def test_a_code_review_run_with_effects_renders(operator: Any, runs_with_code_review: dict[str, str]) -> None:
    run = Run.objects.get(id=runs_with_code_review["code_review"])
    page = logged_in(operator).get(f"/runs/{run.id}/").content.decode()
    assert f'id="run-status-badge">{run.status}<' in page and run.status == "done"
    assert "Output" in page and "visited" in page


def test_a_run_page_for_no_such_run_is_404(observer: Any, transactional_db: Any) -> None:
    assert logged_in(observer).get("/runs/nosuchrun/").status_code == 404


# -- acting -----------------------------------------------------------------------------------------------------


def test_answering_a_gate_in_the_browser_moves_the_run(answerer: Any, runs: dict[str, str]) -> None:
    run_id = runs["waiting"]
    response = post_as(answerer, f"/runs/{run_id}/gates/writing.asking/", {"_event": "reply", "text": "Ops people"})
    assert response.status_code == 302
    run = Run.objects.get(id=run_id)
    assert run.status == "done" and "Ops people" in run.output["notes"]


def test_a_bad_gate_answer_shows_the_error_at_the_field_and_changes_nothing(
    answerer: Any, runs: dict[str, str]
) -> None:
    run_id = runs["waiting"]
    before = JournalEntry.objects.filter(run_id=run_id).count()
    response = post_as(answerer, f"/runs/{run_id}/gates/writing.asking/", {"_event": "reply"})
    assert response.status_code == 400 and "field-error" in response.content.decode()
    assert JournalEntry.objects.filter(run_id=run_id).count() == before


def test_an_htmx_gate_answer_gets_the_new_regions_back(answerer: Any, runs: dict[str, str]) -> None:
    response = post_as(
        answerer,
        f"/runs/{runs['waiting']}/gates/writing.asking/",
        {"_event": "reply", "text": "Ops"},
        headers={"HX-Request": "true"},
    )
    body = response.content.decode()
    assert response.status_code == 200 and 'id="run-status"' in body and 'hx-swap-oob="true"' in body


@pytest.mark.parametrize(
    "who, url, data",
    [
        ("observer", "gates/writing.asking/", {"_event": "reply", "text": "x"}),
        ("observer", "cancel/", {}),
        ("answerer", "cancel/", {}),
    ],
)
def test_acting_without_the_permission_is_403_and_changes_nothing(
    who: str, url: str, data: dict[str, Any], runs: dict[str, str], request: Any
) -> None:
    user = request.getfixturevalue(who)
    run_id = runs["waiting"]
    response = post_as(user, f"/runs/{run_id}/{url}", data)
    assert response.status_code == 403
    assert Run.objects.get(id=run_id).status == "waiting"


def test_starting_a_run_without_the_permission_is_403(answerer: Any) -> None:
    assert post_as(answerer, "/workflows/notes/runs/", {"changes": "x"}).status_code == 403
    assert Run.objects.count() == 0


def test_an_operator_cancels_a_run(operator: Any, runs: dict[str, str]) -> None:
    response = post_as(operator, f"/runs/{runs['waiting']}/cancel/", {})
    assert response.status_code == 302
    assert Run.objects.get(id=runs["waiting"]).status == "cancelled"


def test_every_form_carries_a_csrf_token(operator: Any, runs: dict[str, str]) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(operator)
    page = client.get(f"/runs/{runs['waiting']}/").content.decode()
    forms = re.findall(r"<form method=\"post\".*?</form>", page, re.S)
    assert forms and all("csrfmiddlewaretoken" in form for form in forms)
    assert client.post(f"/runs/{runs['waiting']}/cancel/").status_code == 403


# -- escaping -------------------------------------------------------------------------------------------------

HOSTILE = '<script>alert(1)</script> <img src=x onerror=alert(2)> <a href="javascript:alert(3)">x</a>'


def test_what_a_user_or_an_agent_wrote_is_escaped_everywhere(operator: Any, settings: Any) -> None:
    settings.JR2_SCRIPTED = True

    async def main() -> str:
        host = Host(WORKFLOWS, owner="console-tests")
        await host.start()
        try:
            run_id = await host.start_run("notes", {"changes": HOSTILE})
            for _ in range(200):
                if await host.db(lambda: Run.objects.filter(id=run_id, status="waiting").exists()):
                    break
                await asyncio.sleep(0.02)
            await host.deliver(run_id, "gate", gate="writing.asking", event="reply", params={"text": HOSTILE})
            for _ in range(200):
                if await host.db(lambda: Run.objects.filter(id=run_id, status="done").exists()):
                    break
                await asyncio.sleep(0.02)
            return run_id
        finally:
            await host.stop()

    run_id = asyncio.run(main())
    client = logged_in(operator)
    for url in (f"/runs/{run_id}/", f"/runs/{run_id}/replay/?step=4", "/runs/"):
        page = client.get(url).content.decode()
        assert "<script>alert" not in page and "<img src=x" not in page and 'href="javascript:' not in page, url
    page = client.get(f"/runs/{run_id}/").content.decode()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


# -- replay -----------------------------------------------------------------------------------------------------


def test_replay_steps_through_the_journal_in_words(observer: Any, runs: dict[str, str]) -> None:
    run_id = runs["done"]
    steps = JournalEntry.objects.filter(run_id=run_id).count()
    client = logged_in(observer)
    first = client.get(f"/runs/{run_id}/replay/?step=1").content.decode()
    assert "step <strong>1</strong> of" in first and "active" in group_of(first, "writing.drafting")
    pick = next(e.seq for e in JournalEntry.objects.filter(run_id=run_id, kind="pick"))
    at_pick = client.get(f"/runs/{run_id}/replay/?step={pick}").content.decode()
    assert "writer picked ask" in at_pick and "active" in group_of(at_pick, "writing.asking")
    last = client.get(f"/runs/{run_id}/replay/").content.decode()
    assert f"step <strong>{steps}</strong> of {steps}" in last and "active" in group_of(last, "published")


def test_rerunning_against_the_current_machine_says_same(observer: Any, runs: dict[str, str]) -> None:
    page = logged_in(observer).get(f"/runs/{runs['done']}/replay/?rerun=1").content.decode()
    assert re.search(r'id="rerun-verdict">same \(\d+ steps\)<', page)


def test_rerunning_against_an_edited_machine_names_the_first_divergence(
    observer: Any, runs: dict[str, str], monkeypatch: Any
) -> None:
    import console.pages.runview
    from engine import jr2_setup

    strict = jr2_setup(events=list(notes.machine.events.values()), actors=dict(notes.machine.slots)).create_machine(
        {**_notes_config(), "states": {**_notes_config()["states"]}}
    )
    monkeypatch.setattr(console.pages.runview, "machine_of", lambda name: strict)
    monkeypatch.setattr("console.pages.replaying.machine_of", lambda name: strict)
    page = logged_in(observer).get(f"/runs/{runs['done']}/replay/?rerun=1").content.decode()
    assert "rerun-verdict" in page and "same" not in re.search(r'id="rerun-verdict">([^<]*)<', page).group(1)


def _notes_config() -> dict[str, Any]:
    """The notes Machine with `done` allowed only after two replies: an edit that real history no longer fits."""
    import copy

    config = copy.copy(notes.machine.statechart.config)
    writing = dict(config["states"]["writing"])
    done = dict(writing["on"]["done"])
    done["guard"] = lambda context: context["replies"] > 1
    writing["on"] = {**writing["on"], "done": done}
    config["states"] = {**config["states"], "writing": writing}
    return config


# -- playing a seat -------------------------------------------------------------------------------------------


def test_starting_a_run_playing_the_writer_shows_the_menu_as_forms_with_the_allowed_picks(
    operator: Any, settings: Any
) -> None:
    settings.JR2_SCRIPTED = True
    assert "play <strong>writer</strong> myself" in logged_in(operator).get("/workflows/notes/").content.decode()
    response = post_as(operator, "/workflows/notes/runs/", {"changes": "One fix.", "_play": "writer"})
    run = Run.objects.get()
    assert response.status_code == 302 and run.view["seats"] == {"writer": "oscar"}
    page = logged_in(operator).get(f"/runs/{run.id}/").content.decode()
    assert "Your Turn as writer" in page and "Write the release notes for these changes" in page
    ask = re.search(r'<form[^>]*data-event="ask".*?</form>', page, re.S).group(0)
    done = re.search(r'<form[^>]*data-event="done".*?</form>', page, re.S).group(0)
    assert "disabled" not in ask and 'name="question"' in ask
    assert "<fieldset disabled" in done and "not allowed now" in done
    assert "Give writer back to the model" in page


def test_a_pick_in_the_seat_goes_through_the_turn_loop(operator: Any, settings: Any) -> None:
    settings.JR2_SCRIPTED = True

    async def main() -> str:
        host = Host(WORKFLOWS, owner="console-tests")
        await host.start()
        try:
            client = AsyncClient()
            await client.aforce_login(operator)
            run_id = await host.start_run("notes", {"changes": "One fix."}, seats={"writer": (operator.pk, "oscar")})
            refused = await client.post(f"/runs/{run_id}/seats/writer/pick/", {"_event": "ask"})
            assert refused.status_code == 400 and "field-error" in refused.content.decode()
            picked = await client.post(f"/runs/{run_id}/seats/writer/pick/", {"_event": "ask", "question": "Tone?"})
            assert picked.status_code == 302
            for _ in range(300):
                if await host.db(lambda: Run.objects.filter(id=run_id, status="waiting").exists()):
                    break
                await asyncio.sleep(0.02)
            given = await client.post(f"/runs/{run_id}/seats/writer/give/", {})
            assert given.status_code == 302
            await host.cancel(run_id)
            return run_id
        finally:
            await host.stop()

    run_id = asyncio.run(main())
    picks = [(e.entry["event"], e.entry["player"]) for e in JournalEntry.objects.filter(run_id=run_id, kind="pick")]
    assert picks == [("ask", "human/oscar")]
    assert Run.objects.get(id=run_id).view["seats"] == {}


def test_taking_a_seat_needs_the_play_permission(answerer: Any, runs: dict[str, str]) -> None:
    response = post_as(answerer, f"/runs/{runs['waiting']}/seats/writer/take/", {})
    assert response.status_code == 403
    assert Run.objects.get(id=runs["waiting"]).view.get("seats", {}) == {}
    page = logged_in(answerer).get(f"/runs/{runs['waiting']}/").content.decode()
    assert "Take over writer" not in page


def test_an_operator_takes_over_a_running_agent(operator: Any, runs: dict[str, str]) -> None:
    assert "Take over writer" in logged_in(operator).get(f"/runs/{runs['waiting']}/").content.decode()
    response = post_as(operator, f"/runs/{runs['waiting']}/seats/writer/take/", {})
    assert response.status_code == 302
    assert Run.objects.get(id=runs["waiting"]).view["seats"] == {"writer": "oscar"}


def test_a_states_details_name_the_authors_guard_not_the_seat_guard(observer: Any) -> None:
    page = logged_in(observer).get("/workflows/triage/").content.decode()
    detail = re.search(r'<details id="detail-triaging".*?</details>', page, re.S).group(0)
    assert "[sent_by(desk)]" in detail and "[seat]" not in detail
