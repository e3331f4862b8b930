"""The Console's fork form, Export and Import: who may use them, the engine's refusals shown in words with nothing
made, and a fork or an import landing on its new run's page."""

from __future__ import annotations

import html
import json
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from engine.models import JournalEntry, Run, TurnMessage, TurnRecord
from tests.console.conftest import logged_in, post_as

pytestmark = pytest.mark.django_db(transaction=True)


def asked(run_id: str) -> int:
    return int(JournalEntry.objects.get(run_id=run_id, kind="pick", entry__event="ask").seq)


def post_fork(user: Any, run_id: str, data: dict[str, Any]) -> Any:
    """POST the fork form with a host running in this process; wait until no run is running."""
    return post_as(user, f"/runs/{run_id}/fork/", data)


def test_the_fork_form_shows_the_context_and_the_gates_open_after_the_step(
    operator: Any, observer: Any, runs: dict[str, str]
) -> None:
    run_id = runs["waiting"]
    step = asked(run_id)
    page = logged_in(operator).get(f"/runs/{run_id}/fork/?step={step}").content.decode()
    assert 'id="fork-form"' in page and "&quot;replies&quot;: 0" in page
    assert 'value="writing.asking|reply"' in page and 'name="writing.asking.reply-text"' in page
    assert 'id="fork-answer-input"' not in page, "the Gate answer is a form from its schema, not raw JSON"
    before = logged_in(operator).get(f"/runs/{run_id}/fork/?step=1").content.decode()
    assert 'value="writing.asking|reply"' not in before, "no Gate is open after step 1"
    assert 'id="fork-form"' not in logged_in(observer).get(f"/runs/{run_id}/fork/").content.decode()
    ended = logged_in(operator).get(f"/runs/{runs['done']}/fork/").content.decode()
    assert "had already ended (done)" in ended and 'id="fork-form"' not in ended
    assert logged_in(operator).get("/runs/nosuchrun/fork/").status_code == 404


@pytest.mark.parametrize(
    ("data", "words"),
    [
        ({"context": "{not json"}, "the context is not JSON"),
        ({"context": json.dumps({"changes": "x"})}, "context.replies is missing"),
        (
            {"answer": "writing.asking|reply"},
            'the answer "reply" to Gate "writing.asking" is refused: text: This field is required.',
        ),
        ({"answer": "writing.asking|reply", "writing.asking.reply-text": "  "}, "text: This field"),
        ({"answer": "nowhere|go"}, "no open Gate takes the answer 'nowhere|go' after this step"),
        ({"restart": "editor"}, 'the Agent "editor" has no open Turn at that step (open Turns: writer)'),
        ({"restart": "writer"}, 'its pick "ask" is outstanding at that step'),
    ],
)
def test_a_refused_fork_is_shown_on_the_form_and_makes_nothing(
    data: dict[str, Any], words: str, operator: Any, runs: dict[str, str]
) -> None:
    run_id = runs["waiting"]
    count = Run.objects.count()
    response = post_fork(operator, run_id, {"step": asked(run_id), **data})
    body = html.unescape(response.content.decode())
    assert response.status_code == 400 and 'id="fork-errors"' in body and words in body
    assert Run.objects.count() == count


def test_a_fork_with_another_answer_lands_on_its_page_and_runs_on(operator: Any, runs: dict[str, str]) -> None:
    run_id = runs["waiting"]
    response = post_fork(
        operator,
        run_id,
        {"step": asked(run_id), "answer": "writing.asking|reply", "writing.asking.reply-text": "Night owls"},
    )
    assert response.status_code == 302
    fork = Run.objects.get(id=response["Location"].strip("/").split("/")[-1])
    assert fork.parent_id == run_id and fork.status == "done" and "Night owls" in fork.output["notes"]
    assert Run.objects.get(id=run_id).status == "waiting"


def test_forking_needs_the_start_permission(answerer: Any, runs: dict[str, str]) -> None:
    count = Run.objects.count()
    response = post_fork(answerer, runs["waiting"], {"step": 1, "context": "{}"})
    assert response.status_code == 403 and Run.objects.count() == count


def test_export_then_import_gives_a_read_only_copy(operator: Any, observer: Any, runs: dict[str, str]) -> None:
    run_id = runs["waiting"]
    response = logged_in(observer).get(f"/runs/{run_id}/export.json")
    assert response["Content-Disposition"] == f'attachment; filename="jr2-run-{run_id}.json"'
    data = json.loads(response.content)
    assert data["format"] == "jr2.run" and data["run"]["id"] == run_id
    upload = SimpleUploadedFile("run.json", response.content, content_type="application/json")
    made = logged_in(operator).post("/runs/import/", {"file": upload})
    assert made.status_code == 302
    copy = Run.objects.get(id=made["Location"].strip("/").split("/")[-1])
    assert copy.imported_from == run_id and copy.status == "waiting"
    page = logged_in(operator).get(f"/runs/{copy.id}/").content.decode()
    assert 'id="run-imported"' in page and "Cancel run" not in page and "Send reply" not in page
    assert "Cancel run" in logged_in(operator).get(f"/runs/{run_id}/").content.decode()


def test_a_bad_import_is_refused_in_words_and_changes_nothing(
    operator: Any, observer: Any, runs: dict[str, str]
) -> None:
    count = Run.objects.count()
    data = json.loads(logged_in(operator).get(f"/runs/{runs['done']}/export.json").content)
    data["journal"][1]["seq"] = 7
    upload = SimpleUploadedFile("bad.json", json.dumps(data).encode(), content_type="application/json")
    response = logged_in(operator).post("/runs/import/", {"file": upload})
    assert response.status_code == 400
    assert (
        "bad.json: the run export is refused, nothing was imported: journal: the seqs must run"
        in response.content.decode()
    )
    garbage = SimpleUploadedFile("x.json", b"<html>", content_type="application/json")
    assert "x.json is not JSON" in logged_in(operator).post("/runs/import/", {"file": garbage}).content.decode()
    denied = logged_in(observer).post("/runs/import/", {"file": SimpleUploadedFile("y.json", b"{}")})
    assert denied.status_code == 403
    assert Run.objects.count() == count


def test_the_fork_form_names_the_open_turns_that_keep_their_prompt(operator: Any, runs: dict[str, str]) -> None:
    run_id = runs["waiting"]
    page = logged_in(operator).get(f"/runs/{run_id}/fork/?step={asked(run_id)}").content.decode()
    notice = page[page.index('id="fork-open-turns"') :]
    notice = notice[: notice.index("</div>")]
    assert "keeps the prompt it was given" in notice and "before your edit" in notice
    assert "<strong>writer</strong> in <code>notes.writing</code>" in notice
    assert "its pick <code>ask</code> is" in notice and 'name="restart"' not in notice, "outstanding: no restart"
    triage = logged_in(operator).get(f"/runs/{runs['triage']}/fork/?step=1").content.decode()
    assert 'id="fork-open-turns"' in triage and "<strong>triager</strong>" in triage


def replied(run_id: str) -> int:
    return int(JournalEntry.objects.get(run_id=run_id, kind="gate", entry__event="reply").seq)


def test_the_fork_form_offers_to_restart_an_open_turn_and_the_fork_rebuilds_its_prompt(
    operator: Any, runs: dict[str, str]
) -> None:
    run_id, step = runs["done"], replied(runs["done"])
    page = logged_in(operator).get(f"/runs/{run_id}/fork/?step={step}").content.decode()
    assert 'type="checkbox"' in page and 'name="restart" value="writer"' in page
    edited = {"changes": "A dark theme.", "question": "Who reads these?", "replies": 1}
    response = post_fork(operator, run_id, {"step": step, "context": json.dumps(edited), "restart": "writer"})
    assert response.status_code == 302, response.content.decode()
    fork = Run.objects.get(id=response["Location"].strip("/").split("/")[-1])
    entry = JournalEntry.objects.get(run=fork, seq=1).entry
    assert entry["restarted"] == ["writer"] and entry["context"] == edited
    [turn] = TurnRecord.objects.filter(run=fork)
    assert turn.prompt == "Write the release notes for these changes:\nA dark theme."
    first = TurnMessage.objects.filter(run=fork, conversation=turn.conversation).order_by("seq").first()
    assert first is not None and "A dark theme." in first.content[0]["text"]
    assert "Faster start-up" not in first.content[0]["text"]


def test_without_a_restart_the_forks_open_turn_keeps_its_old_prompt(operator: Any, runs: dict[str, str]) -> None:
    run_id, step = runs["done"], replied(runs["done"])
    edited = {"changes": "A dark theme.", "question": "Who reads these?", "replies": 1}
    response = post_fork(operator, run_id, {"step": step, "context": json.dumps(edited)})
    assert response.status_code == 302
    fork = Run.objects.get(id=response["Location"].strip("/").split("/")[-1])
    assert "restarted" not in JournalEntry.objects.get(run=fork, seq=1).entry
    assert "Faster start-up." in TurnRecord.objects.get(run=fork).prompt
