"""CSRF on every form, and session fixation at login, on a live `jr2 up`.

The forms are found in the pages themselves (home, a workflow, a waiting run with a held seat, the login page and
the header's log-out), so a form added later is covered too: each one POSTed without its CSRF token is refused with
403 and changes nothing; the same POST with the token goes through (so the 403 is the token's doing)."""

from __future__ import annotations

import re

import httpx

from tests.live_server import LiveServer
from tests.security.conftest import PASSWORD, csrf_of, database_rows, log_in

FORM = re.compile(r'<form\b[^>]*\bmethod="post"[^>]*>', re.IGNORECASE)
ACTION = re.compile(r'\baction="([^"]*)"')


def post_forms(html: str, page: str) -> set[str]:
    found = set()
    for tag in FORM.findall(html):
        action = ACTION.search(tag)
        found.add(action.group(1).replace("&amp;", "&") if action and action.group(1) else page)
    return found


def test_every_post_form_is_refused_without_its_csrf_token(site: LiveServer) -> None:
    operator = log_in(site, "operator")
    run_id = site.start_run("notes", {"changes": "One fix."}, "waiting")
    take = operator.post(
        f"/runs/{run_id}/seats/writer/take/",
        headers={"Referer": site.url},
        data={"csrfmiddlewaretoken": operator.cookies["csrftoken"]},
    )
    assert take.status_code == 302, "the operator holds the writer's seat, so its pick forms show"
    pages = ["/", "/workflows/notes/", "/workflows/triage/", "/runs/", f"/runs/{run_id}/", f"/runs/{run_id}/replay/"]
    actions: set[str] = set()
    for page in pages:
        html = operator.get(page).text
        actions |= post_forms(html, page)
    login_page = httpx.get(f"{site.url}/accounts/login/").text
    actions |= post_forms(login_page, "/accounts/login/")
    expected = {
        "/accounts/login/",
        "/accounts/logout/",
        "/workflows/notes/runs/",
        f"/runs/{run_id}/cancel/",
        f"/runs/{run_id}/gates/writing.asking/",
        f"/runs/{run_id}/seats/writer/give/",
    }
    assert expected <= actions, f"forms not found: {expected - actions}"
    before = database_rows(site)
    for action in sorted(actions):
        got = operator.post(
            action, data={"_event": "reply", "text": "x", "changes": "x"}, headers={"Referer": site.url}
        )
        assert got.status_code == 403 and "CSRF" in got.text, (action, got.status_code, got.text[:200])
    assert database_rows(site) == before
    assert operator.get("/runs/").status_code == 200, "the refused log-out left the session alone"
    with_token = operator.post(
        f"/runs/{run_id}/cancel/",
        headers={"Referer": site.url},
        data={"csrfmiddlewaretoken": operator.cookies["csrftoken"]},
    )
    assert with_token.status_code == 302, "the same form with its token goes through"


def test_the_session_key_changes_at_login_so_a_fixed_one_is_worthless(site: LiveServer) -> None:
    victim = httpx.Client(base_url=site.url, timeout=30)
    victim.get("/accounts/login/")
    planted = "fixated" + "0" * 25
    victim.cookies.set("sessionid", planted, domain="127.0.0.1")
    page = victim.get("/accounts/login/")
    done = victim.post(
        "/accounts/login/",
        data={"username": "observer", "password": PASSWORD, "next": "/", "csrfmiddlewaretoken": csrf_of(page.text)},
        headers={"Referer": site.url},
    )
    assert done.status_code == 302
    session = done.cookies.get("sessionid")
    assert session and session != planted, "login must issue a new session key"
    attacker = httpx.Client(base_url=site.url, timeout=30, cookies={"sessionid": planted})
    assert attacker.get("/runs/").status_code == 302, "the planted key is not logged in"
    assert victim.get("/runs/").status_code == 200

    before = log_in(site, "observer")
    old = before.cookies["sessionid"]
    again = before.get("/accounts/login/")
    relogged = before.post(
        "/accounts/login/",
        data={"username": "answerer", "password": PASSWORD, "next": "/", "csrfmiddlewaretoken": csrf_of(again.text)},
        headers={"Referer": site.url},
    )
    assert relogged.status_code == 302 and relogged.cookies.get("sessionid") not in (None, old)
    stale = httpx.Client(base_url=site.url, timeout=30, cookies={"sessionid": old})
    assert stale.get("/runs/").status_code == 302, "the key of the earlier login no longer works"
