"""The Gate inbox and the runs search in a real browser (Debian's chromium through Playwright, against `jr2 up`, as
in test_browser.py, whose fixtures and helpers these tests share): a Gate that opens in a run appears in an inbox
tab that is already open; a Gate answered with the keyboard; a batch where one Gate closed before the page heard;
a search whose filters live in the URL. With JR2_SCREENSHOTS=1 the inbox and the search are saved to
docs/screenshots/."""

from __future__ import annotations

import re
from typing import Any

from playwright.sync_api import Page, WebSocketRoute, expect

from tests.databases import BROWSER_ON_SQLITE_PASS
from tests.e2e.test_browser import (  # noqa: F401 - the fixtures are used by name
    OPERATOR,
    operator,
    page,
    reply_through_api,
    server,
    settled,
    shot,
    waiting_run,
)
from tests.live_server import LiveServer

pytestmark = BROWSER_ON_SQLITE_PASS

INBOX_ITEM = "#inbox-items article.inbox-item"


def item_of(tab: Page, run_id: str) -> Any:
    return tab.locator(INBOX_ITEM, has=tab.locator(f'a[href="/runs/{run_id}/"]'))


def closed_of(tab: Page, run_id: str) -> Any:
    return tab.locator("#inbox-items article.inbox-closed", has=tab.locator(f'a[href="/runs/{run_id}/"]'))


def header_count(tab: Page) -> int:
    return int(tab.locator("#gate-count-n").inner_text())


def test_a_gate_opened_in_a_run_appears_in_an_open_inbox_and_leaves_with_who_answered(
    page: Page, server: LiveServer
) -> None:
    page.goto(f"{server.url}/gates/?workflow=notes")
    settled(page)
    page.evaluate("window.__sameDocument = 'yes'")
    before = header_count(page)

    run_id = waiting_run(server, "Opened while the inbox was open.")
    item = item_of(page, run_id)
    expect(item).to_be_visible()
    expect(item).to_contain_text("writing.asking")
    expect(item).to_contain_text("Who reads these notes, and what should they know first?")
    expect(item.locator("form[data-event=reply] textarea[name=text]")).to_be_editable()
    expect(page.locator("#gate-count-n")).to_have_text(str(before + 1))

    reply_through_api(server, run_id, "Answered elsewhere.")
    expect(item).to_have_count(0)
    expect(closed_of(page, run_id)).to_contain_text("closed: answered by e2e with reply")
    expect(page.locator("#gate-count-n")).to_have_text(str(before))
    assert page.evaluate("window.__sameDocument") == "yes", "the page was reloaded"


def test_answer_a_gate_with_the_keyboard(page: Page, server: LiveServer) -> None:
    """j/k move to the Gate, Enter goes to its form, Ctrl+Enter sends it; the run moves on."""
    others = [waiting_run(server, "First one."), waiting_run(server, "Second one.")]
    page.goto(f"{server.url}/gates/?workflow=notes&order=newest")
    settled(page)
    shot(page, "gates")
    target = item_of(page, others[0])
    expect(target).to_be_visible()
    for _ in range(page.locator(INBOX_ITEM).count()):
        page.keyboard.press("j")
        if "current" in (target.get_attribute("class") or ""):
            break
    expect(target).to_have_class(re.compile(r"\bcurrent\b"))
    page.keyboard.press("k")
    expect(target).not_to_have_class(re.compile(r"\bcurrent\b"))
    page.keyboard.press("j")
    expect(target).to_have_class(re.compile(r"\bcurrent\b"))
    page.keyboard.press("Enter")
    field = target.locator("textarea[name=text]")
    expect(field).to_be_focused()
    page.keyboard.type("Typed without a mouse.")
    page.keyboard.press("Control+Enter")

    expect(page.locator("#inbox-result")).to_contain_text("1 delivered")
    expect(closed_of(page, others[0])).to_contain_text(f"answered by {OPERATOR} with reply")
    assert "Typed without a mouse." in server.wait_for(others[0], "done")["output"]["notes"]
    assert server.wait_for(others[1], "waiting")["status"] == "waiting", "only the chosen Gate was answered"
    reply_through_api(server, others[1], "Tidy up.")


def test_a_batch_answer_where_one_gate_closed_before_the_page_heard(page: Page, server: LiveServer) -> None:
    """Three Gates of one kind selected; one is answered elsewhere while the page's socket is held up (a slow
    network): the batch delivers two and says the third had closed, and who answered it."""
    held = {"on": False}

    def route(socket: WebSocketRoute) -> None:
        upstream = socket.connect_to_server()
        upstream.on_message(lambda message: None if held["on"] else socket.send(message))

    page.route_web_socket(re.compile(r"/ws/gates/\?"), route)
    made = [waiting_run(server, f"Batch {n}.") for n in range(3)]
    page.goto(f"{server.url}/gates/?workflow=notes")
    for run_id in made:
        expect(item_of(page, run_id)).to_be_visible()
    settled(page)
    for run_id in made:
        item_of(page, run_id).locator("input.inbox-select").check()
    expect(page.locator("#inbox-selection")).to_contain_text("3 selected (notes writing.asking)")
    form = item_of(page, made[0]).locator("form[data-event=reply]")
    expect(form.get_by_role("button")).to_have_text("Send reply to 3 Gates")

    held["on"] = True
    reply_through_api(server, made[1], "Got there first.")
    form.locator("textarea[name=text]").fill("Everyone at once.")
    form.get_by_role("button", name="Send reply to 3 Gates").click()

    result = page.locator("#inbox-result")
    expect(result).to_contain_text("2 delivered, 1 already closed")
    expect(result.locator("li.outcome.closed")).to_contain_text(made[1])
    expect(result.locator("li.outcome.closed")).to_contain_text("answered by e2e with reply")
    expect(result.locator("li.outcome.delivered")).to_have_count(2)
    for run_id in (made[0], made[2]):
        assert "Everyone at once." in server.wait_for(run_id, "done")["output"]["notes"]
    assert "Got there first." in server.wait_for(made[1], "done")["output"]["notes"]


def test_search_runs_with_filters_in_the_url(page: Page, server: LiveServer) -> None:
    answered = waiting_run(server, "Searchable quokka release.")
    reply_through_api(server, answered, "Quokka keepers.")
    server.wait_for(answered, "done")
    waiting = waiting_run(server, "Another quokka, still waiting.")

    page.goto(f"{server.url}/runs/")
    page.locator("#s-text").fill("QUOKKA")
    page.locator("#s-event").fill("reply")
    page.get_by_role("button", name="Filter").click()
    expect(page).to_have_url(re.compile(r"event=reply"))
    expect(page).to_have_url(re.compile(r"text=QUOKKA"))
    rows = page.locator("#runs tbody tr")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text(answered)
    expect(page.locator("#match-count")).to_have_text("1 run matches")
    shot(page, "runs-search")

    shared = page.url
    page.goto(f"{server.url}/")
    page.goto(shared)
    expect(page.locator("#runs tbody tr")).to_have_count(1)
    expect(page.locator("#s-event")).to_have_value("reply")

    page.goto(f"{server.url}/runs/?text=quokka&not_event=reply&status=waiting")
    expect(page.locator("#runs tbody tr")).to_have_count(1)
    expect(page.locator("#runs tbody tr").first).to_contain_text(waiting)
    expect(page.locator('input[name="not_event"]')).to_have_value("reply")
    expect(page.locator("#match-count")).to_have_text("1 run matches")

    page.goto(f"{server.url}/runs/?after=someday")
    expect(page.locator(".search-error")).to_contain_text('after: "someday" is not a date or time')
    expect(page.locator("#match-count")).to_have_text("not searched: 1 filter to fix, named below")
    reply_through_api(server, waiting, "Done now.")
