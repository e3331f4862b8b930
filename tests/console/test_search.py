"""Runs search: every filter and its exclusion is a query on the server, lives in the URL, and the page says how
many runs match; a wrong filter is refused in words and matches nothing. The API's runs list takes the same."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client
from django.utils.html import escape

from engine.models import Run

pytestmark = pytest.mark.django_db(transaction=True)


def found(client: Client, query: str) -> tuple[set[str], str]:
    response = client.get(f"/runs/?{query}")
    page = response.content.decode()
    assert response.status_code == 200, page
    return set(re.findall(r'<tr id="run-(\w+)"', page)), page


@pytest.fixture
def client(observer: Any) -> Client:
    signed_in = Client()
    signed_in.force_login(observer)
    return signed_in


def test_each_filter_and_its_exclusion_finds_the_right_runs(
    client: Client, runs_with_code_review: dict[str, str]
) -> None:
    runs = runs_with_code_review
    notes_runs = {runs[k] for k in ("waiting", "done", "cancelled", "failed")}
    cases = {
        "event=reply": {runs["done"]},
        "workflow=notes&not_event=reply": notes_runs - {runs["done"]},
        "in=writing.asking": {runs["waiting"], runs["cancelled"]},  # a cancelled run stays where it stopped
        "passed=writing.asking": notes_runs,
        "agent=triager": {runs["triage"]},
        "not_agent=writer": {runs["triage"], runs["code_review"]},
        "gate=writing.asking": {runs["waiting"]},
        "gate=desk,writing.asking": {runs["waiting"], runs["triage"]},
        "not_gate=writing.asking&workflow=notes": notes_runs - {runs["waiting"]},
        "text=FASTER%20start-up": notes_runs,
        "text=admins": {runs["done"]},
        "not_text=faster": {runs["triage"], runs["code_review"]},
        "status=waiting,failed": {runs["waiting"], runs["triage"], runs["failed"]},
        "not_status=done,cancelled,failed": {runs["waiting"], runs["triage"]},
        "not_workflow=notes": {runs["triage"], runs["code_review"]},
        "workflow=notes&event=reply,ask&not_in=published": notes_runs - {runs["done"]},
        "after=2000-01-01": set(runs.values()),
        "before=2000-01-01": set(),
    }
    for query, expected in cases.items():
        shown, page = found(client, query)
        assert shown == expected, query
        assert f"{len(expected)} run" in page and "match" in page, query


def test_filters_live_in_the_url_and_the_form_shows_them(client: Client, runs: dict[str, str]) -> None:
    _, page = found(client, "workflow=notes&not_event=reply&text=faster")
    assert 'name="not_event" value="reply"' in page and 'name="text" id="s-text" value="faster"' in page
    assert '<option value="notes" selected>' in page
    assert re.search(r'id="match-count">3 runs match<', page)


def test_a_wrong_filter_is_named_and_matches_nothing(client: Client, runs: dict[str, str]) -> None:
    for query, words in {
        "status=sleeping": "status: unknown status sleeping",
        "after=yesterday": 'after: "yesterday" is not a date or time',
        "after=2030-01-01&before=2020-01-01": "after must be earlier than before",
        "event=" + "x" * 301: "event: a value is longer than 300 characters",
    }.items():
        response = client.get(f"/runs/?{query}")
        page = response.content.decode()
        assert response.status_code == 400 and escape(words) in page, query
        assert not re.findall(r'<tr id="run-(\w+)"', page), query


def test_a_searched_text_is_escaped_on_the_page(client: Client, runs: dict[str, str]) -> None:
    _, page = found(client, "text=%3Cscript%3Ealert(1)%3C/script%3E")
    assert "<script>alert(1)" not in page and "&lt;script&gt;alert(1)" in page


def test_the_api_runs_list_takes_the_same_filters(client: Client, settings: Any, runs: dict[str, str]) -> None:
    settings.JR2_OPEN_READS = True
    api = Client()
    body = api.get("/api/runs?workflow=notes&not_event=reply&passed=writing.asking").json()
    assert body["count"] == 3 and {r["id"] for r in body["results"]} == {
        runs["waiting"],
        runs["cancelled"],
        runs["failed"],
    }
    assert api.get("/api/runs?gate=desk").json()["results"][0]["id"] == runs["triage"]
    wrong = api.get("/api/runs?status=sleeping,done")
    assert wrong.status_code == 400 and "unknown status sleeping" in wrong.json()["detail"]


def test_waiting_is_its_own_status_in_the_list_the_run_page_and_the_api(
    client: Client, settings: Any, runs: dict[str, str]
) -> None:
    settings.JR2_OPEN_READS = True
    assert Run.objects.get(id=runs["waiting"]).status == "waiting"
    _, page = found(client, "status=waiting")
    assert f'<tr id="run-{runs["waiting"]}"' in page and '<span class="badge waiting">waiting</span>' in page
    assert '<span class="badge running">' not in page
    run_page = client.get(f"/runs/{runs['waiting']}/").content.decode()
    assert 'id="run-status-badge">waiting<' in run_page
    assert Client().get(f"/api/runs/{runs['waiting']}").json()["status"] == "waiting"


def test_a_state_is_found_named_as_the_pages_show_it_or_below_its_machine(client: Client, runs: dict[str, str]) -> None:
    notes_runs = {runs[k] for k in ("waiting", "done", "cancelled", "failed")}
    for query in ("in=writing.asking", "in=notes.writing.asking", "in=notes.writing.asking,writing.asking"):
        shown, _ = found(client, query)
        assert shown == {runs["waiting"], runs["cancelled"]}, query
    assert found(client, "passed=notes.writing.asking")[0] == notes_runs
    assert found(client, "not_in=notes.writing.asking&workflow=notes")[0] == notes_runs - {
        runs["waiting"],
        runs["cancelled"],
    }
    # the Machine's name limits the reading below it to that Machine's runs: triage has no state writing.asking
    assert runs["triage"] not in found(client, "passed=notes.writing.asking")[0]


def test_an_unknown_workflow_or_state_is_said_in_words(client: Client, runs: dict[str, str]) -> None:
    for query, words in {
        "workflow=nope": 'workflow: there is no workflow "nope" and no run of one (workflows: code_review, ',
        "not_workflow=nope": 'not_workflow: there is no workflow "nope"',
        "in=notes.nowhere": 'in: no workflow has a state "notes.nowhere" and no run was ever in one',
        "passed=nowhere": 'passed: no workflow has a state "nowhere"',
    }.items():
        response = client.get(f"/runs/?{query}")
        page = response.content.decode()
        assert response.status_code == 400 and escape(words) in page, (query, page[-3000:])
        assert "0 runs match" not in page and not re.findall(r'<tr id="run-(\w+)"', page), query


def test_a_workflow_no_longer_loaded_but_with_runs_is_not_unknown(client: Client, runs: dict[str, str]) -> None:
    Run.objects.filter(id=runs["done"]).update(workflow="retired")
    assert found(client, "workflow=retired")[0] == {runs["done"]}
