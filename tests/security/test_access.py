"""Broken access control (OWASP A01): every Console view and every API operation, for an anonymous visitor, an
observer (no group), a gate-answerer and an operator, on a live `jr2 up`, logged in through the login form.

Reads need a login (the Console) or a token (the API); each action needs its permission; a refused action is 403
(401 for the API without a token) and changes nothing in the database."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.live_server import LiveServer
from tests.security.conftest import csrf_of, database_rows, log_in

NOTES = {"changes": "One fix."}
GATE = "writing.asking"
#: What each role may do, by action (docs/console.md, "Who may do what").
MAY = {"anonymous": set(), "observer": set(), "answerer": {"answer"}, "operator": {"answer", "start", "cancel", "play"}}


@pytest.fixture(scope="module")
def waiting(site: LiveServer) -> str:
    """A notes run waiting at its Gate, for the refusals (nobody may change it)."""
    return site.start_run("notes", NOTES, "waiting")


@pytest.fixture(scope="module")
def clients(site: LiveServer) -> Iterator[dict[str, httpx.Client]]:
    made = {"anonymous": httpx.Client(base_url=site.url, timeout=30)}
    made.update({name: log_in(site, name) for name in ("observer", "answerer", "operator")})
    yield made
    for client in made.values():
        client.close()


@pytest.fixture(scope="module")
def tokens(site: LiveServer) -> dict[str, str | None]:
    made: dict[str, str | None] = {"anonymous": None}
    for name in ("observer", "answerer", "operator"):
        made[name] = site.new_token(name)
    return made


def post(client: httpx.Client, url: str, data: dict[str, str]) -> httpx.Response:
    """A form POST as the browser sends it: the CSRF token from the cookie the site set (anonymous visitors get one
    from the login page), so that only the permission decides."""
    if "csrftoken" not in client.cookies:
        client.get("/accounts/login/")
    token = client.cookies["csrftoken"]
    return client.post(url, data={"csrfmiddlewaretoken": token, **data}, headers={"Referer": str(client.base_url)})


def actions(run_id: str) -> list[tuple[str, str, dict[str, str]]]:
    return [
        ("start", "/workflows/notes/runs/", {"changes": "From the form."}),
        ("answer", f"/runs/{run_id}/gates/{GATE}/", {"_event": "reply", "text": "An answer"}),
        ("cancel", f"/runs/{run_id}/cancel/", {}),
        ("play", f"/runs/{run_id}/seats/writer/take/", {}),
        ("play", f"/runs/{run_id}/seats/writer/give/", {}),
        ("play", f"/runs/{run_id}/seats/writer/pick/", {"_event": "done", "notes": "by hand"}),
    ]


@pytest.mark.parametrize("role", ["anonymous", "observer", "answerer", "operator"])
def test_console_pages_need_a_login(
    site: LiveServer, clients: dict[str, httpx.Client], waiting: str, role: str
) -> None:
    for url in [
        "/",
        "/workflows/notes/",
        "/workflows/notes/graph.svg",
        "/runs/",
        f"/runs/{waiting}/",
        f"/runs/{waiting}/replay/",
    ]:
        got = clients[role].get(url)
        if role == "anonymous":
            assert got.status_code == 302 and got.headers["location"].startswith("/accounts/login/?next="), url
        else:
            assert got.status_code == 200, (role, url, got.status_code)
    admin = clients[role].get("/admin/")
    assert admin.status_code == 302 and "/admin/login/" in admin.headers["location"], "only staff see the admin"


@pytest.mark.parametrize("role", ["anonymous", "observer", "answerer", "operator"])
def test_console_actions_without_the_permission_are_403_and_change_nothing(
    site: LiveServer, clients: dict[str, httpx.Client], waiting: str, role: str
) -> None:
    before = database_rows(site)
    for action, url, data in actions(waiting):
        if action in MAY[role]:
            continue
        got = post(clients[role], url, data)
        assert got.status_code == 403, (role, url, got.status_code, got.text[:200])
    assert database_rows(site) == before


def test_a_gate_answerer_answers_a_gate_from_the_console(site: LiveServer, clients: dict[str, httpx.Client]) -> None:
    run_id = site.start_run("notes", NOTES, "waiting")
    got = post(clients["answerer"], f"/runs/{run_id}/gates/{GATE}/", {"_event": "reply", "text": "Admins"})
    assert got.status_code == 302, got.text[:300]
    assert "Admins" in site.wait_for(run_id, "done")["output"]["notes"]


def test_an_operator_starts_plays_gives_back_and_cancels_from_the_console(
    site: LiveServer, clients: dict[str, httpx.Client]
) -> None:
    operator = clients["operator"]
    got = post(operator, "/workflows/notes/runs/", {"changes": "From the form."})
    assert got.status_code == 302 and got.headers["location"].startswith("/runs/"), got.text[:300]
    run_id = got.headers["location"].split("/")[2]
    site.wait_for(run_id, "waiting")
    assert post(operator, f"/runs/{run_id}/seats/writer/take/", {}).status_code == 302
    with site.client() as api:
        assert api.get(f"/api/runs/{run_id}").json()["status"] == "waiting"
    assert post(operator, f"/runs/{run_id}/seats/writer/give/", {}).status_code == 302
    assert post(operator, f"/runs/{run_id}/cancel/", {}).status_code == 302
    assert site.wait_for(run_id, "cancelled")["status"] == "cancelled"


def api_calls(run_id: str) -> list[tuple[str, str, str, Any]]:
    return [
        ("read", "GET", "/api/workflows", None),
        ("read", "GET", "/api/workflows/notes", None),
        ("read", "GET", "/api/runs", None),
        ("read", "GET", f"/api/runs/{run_id}", None),
        ("read", "GET", f"/api/runs/{run_id}/turns", None),
        ("read", "GET", f"/api/runs/{run_id}/journal", None),
        ("start", "POST", "/api/workflows/notes/runs", NOTES),
        ("answer", "POST", f"/api/runs/{run_id}/gates/{GATE}/events", {"type": "reply", "text": "x"}),
        ("cancel", "POST", f"/api/runs/{run_id}/cancel", None),
    ]


@pytest.mark.parametrize("role", ["anonymous", "observer", "answerer", "operator"])
def test_api_operations_without_the_token_or_permission_are_refused_and_change_nothing(
    site: LiveServer, tokens: dict[str, str | None], waiting: str, role: str
) -> None:
    headers = {"Authorization": f"Bearer {tokens[role]}"} if tokens[role] else {}
    before = database_rows(site)
    with httpx.Client(base_url=site.url, headers=headers, timeout=30) as client:
        for action, method, url, body in api_calls(waiting):
            if action in MAY[role]:
                continue
            got = client.request(method, url, json=body)
            if role == "anonymous":
                assert got.status_code == 401, (url, got.status_code)
            elif action == "read":
                assert got.status_code == 200, (role, url, got.status_code)
            elif action not in MAY[role]:
                assert got.status_code == 403 and f"engine.{action}" in got.json()["detail"], (role, url, got.text)
    assert database_rows(site) == before


def test_api_operations_with_the_permission_act(site: LiveServer, tokens: dict[str, str | None]) -> None:
    run_id = site.start_run("notes", NOTES, "waiting")
    with site.client(tokens["answerer"]) as answerer:
        assert (
            answerer.post(f"/api/runs/{run_id}/gates/{GATE}/events", json={"type": "reply", "text": "Ops"}).status_code
            == 200
        )
    with site.client(tokens["operator"]) as operator:
        created = operator.post("/api/workflows/notes/runs", json=NOTES)
        assert created.status_code == 201, created.text
        site.wait_for(created.json()["id"], "waiting")
        assert operator.post(f"/api/runs/{created.json()['id']}/cancel").status_code == 200


def test_a_csrf_token_of_one_session_does_not_serve_another(site: LiveServer, clients: dict[str, httpx.Client]) -> None:
    """The observer's form token in the operator's request: refused (403), nothing started."""
    observer_page = clients["observer"].get("/workflows/notes/")
    operator = clients["operator"]
    before = database_rows(site)
    got = operator.post(
        "/workflows/notes/runs/",
        data={"csrfmiddlewaretoken": csrf_of(observer_page.text), "changes": "x"},
        headers={"Referer": site.url},
    )
    assert got.status_code == 403 and "CSRF" in got.text
    assert database_rows(site) == before
