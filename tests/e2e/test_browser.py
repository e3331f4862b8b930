"""The Console in a real browser, as a user sees it: Playwright (sync API) drives Debian's chromium (never a
downloaded browser) against `jr2 up` (daphne and the host, one process; the module-scoped live server of
conftest.py), with the example workflows' scripted stand-ins playing the Agents offline.

Each test asserts on what is visible (text, badges, form fields, the SVG state groups lit `active`) and waits for
the page to change by itself: a test that says "without a reload" checks at its end that the page is still the
document it loaded. With JR2_SCREENSHOTS=1 (`make screenshots`) every main page is saved to docs/screenshots/
(1400x1000 viewport, full page) as the tests pass through it; the README shows them.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import Browser, BrowserContext, Locator, Page, ViewportSize, WebSocketRoute, expect

from tests import browsers
from tests.browsers import WS_WATCH, settled
from tests.databases import BROWSER_ON_SQLITE_PASS
from tests.live_server import ROOT, LiveServer, served

pytestmark = BROWSER_ON_SQLITE_PASS

SHOTS = ROOT / "docs" / "screenshots"
VIEWPORT: ViewportSize = {"width": 1400, "height": 1000}
PASSWORD = "a long test password"
OPERATOR = "olive"  # in the group "operators": starts, answers, cancels, plays seats
OBSERVER = "otto"  # in no group: reads only
QUESTION = "Who reads these notes, and what should they know first?"
RUN_URL = re.compile(r"/runs/([a-z0-9]+)/$")
ACTIVE = re.compile(r"\bactive\b")
WRITER = '#run-turns-list article.turn[data-agent="writer"]'  # the writer's Turns on the run page

expect.set_options(timeout=15_000)


# -- fixtures ------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    # The production lease (conftest's 3 s is for the tests that kill servers; this one is never killed). A short
    # lease renews every second, and a run started while a renewal is under way can be dropped by its own host
    # ("lease lost to another host"), a runtime race reported separately.
    with served(
        tmp_path_factory.mktemp("browser"),
        {"JR2_LEASE_SECONDS": "15"},
        users={OPERATOR: ["operators"], OBSERVER: []},
        password=PASSWORD,
    ) as live:
        yield live


@pytest.fixture(scope="module")
def operator(browser: Browser, server: LiveServer) -> Iterator[BrowserContext]:
    """A browser session logged in as an operator (through the login page)."""
    context = new_context(browser)
    log_in(context, server, OPERATOR).close()
    yield context
    context.close()


@pytest.fixture(scope="module")
def observer(browser: Browser, server: LiveServer) -> Iterator[BrowserContext]:
    """A browser session logged in as a user in no group."""
    context = new_context(browser)
    log_in(context, server, OBSERVER).close()
    yield context
    context.close()


@pytest.fixture
def page(operator: BrowserContext) -> Iterator[Page]:
    """A fresh tab of the operator's session; an uncaught script error on it fails the test."""
    tab = operator.new_page()
    errors = watch_errors(tab)
    yield tab
    tab.close()
    assert not errors, f"script errors on the page: {errors}"


# -- helpers -------------------------------------------------------------------------------------------------------


def watch_errors(tab: Page) -> list[str]:
    errors: list[str] = []
    tab.on("pageerror", lambda error: errors.append(str(error)))
    return errors


def new_context(browser: Browser) -> BrowserContext:
    context = browser.new_context(viewport=VIEWPORT)
    context.add_init_script(WS_WATCH)
    return context


def log_in(context: BrowserContext, server: LiveServer, username: str, next_path: str = "/") -> Page:
    return browsers.log_in(context, server.url, username, PASSWORD, next_path)


def shot(tab: Page, name: str) -> None:
    """Save the page to docs/screenshots/ when JR2_SCREENSHOTS=1 (`make screenshots`), so an ordinary test run
    leaves the tree as it was; the page is still rendered to an image either way."""
    image = tab.screenshot(full_page=True)
    assert image.startswith(b"\x89PNG")
    if os.environ.get("JR2_SCREENSHOTS") == "1":
        SHOTS.mkdir(parents=True, exist_ok=True)
        (SHOTS / f"{name}.png").write_bytes(image)


def state(tab: Page, path: str) -> Locator:
    """The SVG group of a state on the page's graph (`g#state-writing.asking`)."""
    return tab.locator(f'#graph g[id="state-{path}"]')


def mark_document(tab: Page) -> None:
    """Tag the loaded document; `same_document` later proves the page was never reloaded or left."""
    tab.evaluate("window.__sameDocument = 'yes'")


def same_document(tab: Page) -> None:
    assert tab.evaluate("window.__sameDocument") == "yes", "the page was reloaded or navigated away"


def start_from_form(tab: Page, server: LiveServer, changes: str, play: str | None = None) -> str:
    """Open the notes workflow, fill its start form and start; returns the run id of the page it lands on."""
    tab.goto(f"{server.url}/workflows/notes/")
    start = tab.locator("#start")
    start.locator("[name=changes]").fill(changes)
    if play:
        start.get_by_role("checkbox", name=f"play {play} myself").check()
    start.get_by_role("button", name="Start").click()
    tab.wait_for_url(RUN_URL)
    found = RUN_URL.search(tab.url)
    assert found, tab.url
    return found.group(1)


def waiting_run(server: LiveServer, changes: str) -> str:
    """A notes run started through the API, its writer's question open at the Gate."""
    return server.start_run("notes", {"changes": changes}, "waiting")


def reply_through_api(server: LiveServer, run_id: str, text: str) -> None:
    server.answer(run_id, "writing.asking", "reply", text=text)


def gate_form(tab: Page) -> Locator:
    return tab.locator("#run-gates form.gate-form[data-event=reply]")


def writer_picks(tab: Page) -> Locator:
    return tab.locator(WRITER + " li.line.pick > code")


# -- the tests -----------------------------------------------------------------------------------------------------


def test_log_in_and_read_the_notes_workflow(browser: Browser, server: LiveServer) -> None:
    """A visitor who opens a workflow is sent to the login page, logs in, and lands on the workflow: its graph with
    a group per state, the seats, the writer's Menu, the start form; clicking a state opens its details."""
    context = new_context(browser)
    tab = context.new_page()
    errors = watch_errors(tab)
    try:
        tab.goto(f"{server.url}/workflows/notes/")
        expect(tab).to_have_url(re.compile(r"/accounts/login/\?next=/workflows/notes/"))
        expect(tab.get_by_role("heading", name="Log in")).to_be_visible()
        shot(tab, "login")

        browsers.fill_login(tab, OPERATOR, PASSWORD)
        tab.wait_for_url(f"{server.url}/workflows/notes/")
        expect(tab.get_by_role("heading", level=1)).to_contain_text("notes")
        expect(tab.locator("header.top")).to_contain_text(OPERATOR)

        for path in ("writing", "writing.drafting", "writing.asking", "published", "failed"):
            expect(state(tab, path)).to_have_count(1)
        expect(state(tab, "writing")).to_contain_text("Agent writer")
        expect(state(tab, "writing.asking")).to_contain_text("Gate writing.asking")
        expect(tab.locator("#graph svg")).to_contain_text('done [context["replies"] > 0]')

        seats = tab.locator("section.card", has=tab.get_by_role("heading", name="Who may send what")).locator("pre")
        expect(seats).to_contain_text('seats: workflow "notes"')
        expect(seats).to_contain_text("notes.writing agent:writer: [ask, done]")
        expect(seats).to_contain_text("notes.writing.asking gate: [reply]")

        menus = tab.locator("section.card", has=tab.get_by_role("heading", name="Menus"))
        expect(menus.get_by_role("heading", name="writer")).to_contain_text("anthropic/claude-haiku-5-5")
        expect(menus.locator("dl.menu > dt")).to_have_text(["ask", "done"])
        expect(menus).to_contain_text("Ask the editor one question.")

        start = tab.locator("#start")
        expect(start.locator("textarea[name=changes]")).to_be_editable()
        expect(start.get_by_role("checkbox", name="play writer myself")).not_to_be_checked()

        detail = tab.locator('details[id="detail-writing.asking"]')
        expect(detail).not_to_have_attribute("open", "")
        state(tab, "writing.asking").click()
        expect(detail).to_have_attribute("open", "")
        expect(detail).to_contain_text("seat: notes.writing.asking gate: [reply]")
        expect(detail).to_contain_text("reply")
        tab.evaluate("window.scrollTo(0, 0)")
        detail.evaluate("d => d.open = false")
        shot(tab, "workflow")
    finally:
        context.close()
    assert not errors, errors


def test_start_a_run_and_watch_the_writer_ask(page: Page, server: LiveServer) -> None:
    """The start form creates a run and lands on its page; the writer's Turn with its `ask` pick and the Gate's form
    come to the page by themselves."""
    run_id = start_from_form(page, server, "Fix the login redirect.\nFaster start-up.")
    mark_document(page)
    expect(page.get_by_role("heading", level=1)).to_contain_text(run_id)

    expect(writer_picks(page)).to_have_text(["ask"])
    expect(page.locator(WRITER + " li.line.pick").first).to_contain_text(QUESTION)
    expect(page.locator(WRITER + " li.line.prompt").first).to_contain_text("Fix the login redirect.")
    form = gate_form(page)
    expect(form).to_be_visible()
    expect(form.locator("textarea[name=text]")).to_be_editable()
    expect(form.get_by_role("button", name="Send reply")).to_be_enabled()
    expect(page.locator('#run-gates article[id="gate-writing.asking"] dl.meta')).to_contain_text(QUESTION)
    expect(page.locator("#run-status-badge")).to_have_text("waiting")
    expect(state(page, "writing.asking")).to_have_class(ACTIVE)
    expect(state(page, "writing")).to_have_class(ACTIVE)
    expect(state(page, "published")).not_to_have_class(ACTIVE)
    expect(page.locator("#run-now")).to_contain_text("waiting on its pick ask")
    same_document(page)
    shot(page, "run-waiting")


def test_answer_the_gate_in_the_browser(page: Page, server: LiveServer) -> None:
    """Sending the Gate's form: the status moves to done, `published` lights up, and the editor's answer and the
    writer's `done` pick appear in the writer's Turn, all without a reload."""
    start_from_form(page, server, "Fix the login redirect.\nFaster start-up.")
    mark_document(page)
    form = gate_form(page)
    expect(form).to_be_visible()
    settled(page)
    form.locator("textarea[name=text]").fill("Support engineers; lead with the login fix.")
    form.get_by_role("button", name="Send reply").click()

    expect(page.locator("#run-status-badge")).to_have_text("done")
    expect(state(page, "published")).to_have_class(ACTIVE)
    expect(state(page, "writing.asking")).not_to_have_class(ACTIVE)
    answers = page.locator(WRITER + " li.line.answer")
    expect(answers.filter(has_text="The editor replied: Support engineers; lead with the login fix.")).to_be_visible()
    expect(writer_picks(page)).to_have_text(["ask", "done"])
    expect(page.locator("#run-gates")).to_contain_text("No Gate is open.")
    expect(page.locator("#run-output")).to_contain_text("_Written for: Support engineers; lead with the login fix._")
    expect(page.locator(WRITER + " .badge.ended")).to_have_count(1)
    expect(page.get_by_role("button", name="Cancel run")).to_have_count(0)
    same_document(page)
    shot(page, "run-done")


def test_play_the_writers_seat_through_a_whole_run(page: Page, server: LiveServer) -> None:
    """Started with "play writer myself": the writer's Turns come to the page as forms (the Allowed pick enabled,
    the other greyed with the reason); the user asks, answers the Gate, and finishes with their own notes."""
    start_from_form(page, server, "Dark mode.\nExport to CSV.", play="writer")
    mark_document(page)
    seat = page.locator("#seat-writer")
    expect(seat).to_contain_text(f"played by {OPERATOR} (you)")
    expect(seat.get_by_role("heading", name="Your Turn as writer")).to_be_visible()
    expect(seat.locator("pre.prompt")).to_contain_text("Dark mode.")
    ask = seat.locator("form.pick-form[data-event=ask]")
    done = seat.locator("form.pick-form[data-event=done]")
    expect(ask.get_by_role("button", name="Pick ask")).to_be_enabled()
    expect(ask.locator("textarea[name=question]")).to_be_editable()
    expect(done.get_by_role("button", name="Pick done")).to_be_disabled()
    expect(done.locator("textarea[name=notes]")).to_be_disabled()
    expect(done).to_have_class(re.compile(r"\bdisabled\b"))
    expect(done).to_contain_text("not allowed now in notes.writing")
    expect(page.locator("#run-now")).to_contain_text("Allowed picks: ask")
    turn = page.locator(WRITER + " header")
    expect(turn).to_contain_text(f"human/{OPERATOR}")
    expect(turn).to_contain_text("1 call,")  # the Turn's request waits for this user
    settled(page)
    shot(page, "run-seat")

    ask.locator("textarea[name=question]").fill("Who is this release for?")
    ask.get_by_role("button", name="Pick ask").click()
    expect(gate_form(page)).to_be_visible()
    expect(page.locator('#run-gates article[id="gate-writing.asking"]')).to_contain_text("Who is this release for?")
    expect(seat).to_contain_text("Waiting on your pick ask")
    expect(seat.locator("form.pick-form[data-event=ask] button")).to_be_disabled()
    expect(writer_picks(page)).to_have_text(["ask"])
    expect(page.locator(WRITER + " li.line.pick").first).to_contain_text(f"human/{OPERATOR}")
    expect(state(page, "writing.asking")).to_have_class(ACTIVE)

    gate = gate_form(page)
    settled(page)
    gate.locator("textarea[name=text]").fill("Analysts who live in spreadsheets.")
    gate.get_by_role("button", name="Send reply").click()
    expect(
        page.locator(WRITER + " li.line.answer").filter(
            has_text="The editor replied: Analysts who live in spreadsheets."
        )
    ).to_be_visible()
    expect(page.locator("#run-gates")).to_contain_text("No Gate is open.")
    done = seat.locator("form.pick-form[data-event=done]")
    expect(done.get_by_role("button", name="Pick done")).to_be_enabled()
    expect(turn).to_contain_text("2 calls,")  # the Turn's next request waits for this user
    settled(page)
    done.locator("textarea[name=notes]").fill("## New\n- Dark mode\n- CSV export, for analysts")
    done.get_by_role("button", name="Pick done").click()

    expect(page.locator("#run-status-badge")).to_have_text("done")
    expect(state(page, "published")).to_have_class(ACTIVE)
    expect(writer_picks(page)).to_have_text(["ask", "done"])
    expect(page.locator("#run-output")).to_contain_text("CSV export, for analysts")
    expect(page.locator("#run-seats")).to_contain_text("The run has ended.")
    same_document(page)


def confirm_cancel(page: Page, accept: bool) -> list[str]:
    """Click "Cancel run", answering its confirm dialog; returns what the dialog asked."""
    asked: list[str] = []

    def handle(dialog: Any) -> None:
        asked.append(dialog.message)
        if accept:
            dialog.accept()
        else:
            dialog.dismiss()

    page.once("dialog", handle)
    page.get_by_role("button", name="Cancel run").click()
    return asked


def test_cancel_asks_first(page: Page, server: LiveServer) -> None:
    """ "Cancel run" asks for confirmation, naming the run; dismissed, nothing happens."""
    run_id = waiting_run(server, "Keep me.")
    page.goto(f"{server.url}/runs/{run_id}/")
    expect(gate_form(page)).to_be_visible()
    settled(page)
    mark_document(page)
    asked = confirm_cancel(page, accept=False)
    expect(page.locator("#run-status-badge")).to_have_text("waiting")
    assert asked and f"Cancel run {run_id}? Every Turn and Effect stops." in asked[0], asked
    expect(gate_form(page)).to_be_visible()
    same_document(page)
    assert server.wait_for(run_id, "waiting")["status"] == "waiting"


def test_cancel_a_run(page: Page, server: LiveServer) -> None:
    """Cancel, the confirm dialog accepted: the run is cancelled, its Gate and the Cancel button are gone."""
    run_id = waiting_run(server, "Cancel me.")
    page.goto(f"{server.url}/runs/{run_id}/")
    expect(gate_form(page)).to_be_visible()
    settled(page)
    with page.expect_response(re.compile(r"/cancel/$")) as cancelled:
        confirm_cancel(page, accept=True)
    answered = cancelled.value
    if answered.status >= 400:
        body = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", answered.text()))
        why = re.search(r"Forbidden \(403\) (.{0,80})", body)
        raise AssertionError(f"the cancel form was answered {answered.status}: {why.group(1) if why else body[:120]}")
    expect(page.locator("#run-status-badge")).to_have_text("cancelled")
    expect(page.locator("#run-gates")).to_contain_text("No Gate is open.")
    expect(gate_form(page)).to_have_count(0)
    expect(page.get_by_role("button", name="Cancel run")).to_have_count(0)
    expect(page.locator("#run-output")).to_contain_text("Cancelled")
    expect(page.locator(WRITER + " .badge").filter(has_text="open")).to_have_count(0)


def test_step_through_a_replay(page: Page, server: LiveServer) -> None:
    """The replay page steps through a finished run (first, previous, next, last, the slider, the list of steps):
    the step's words and the lit state follow; Re-run says the run replays the same."""
    run_id = waiting_run(server, "Replay me.")
    reply_through_api(server, run_id, "Maintainers.")
    server.wait_for(run_id, "done")
    page.goto(f"{server.url}/runs/{run_id}/replay/")
    words = page.locator("#step-words")
    slider = page.locator("#step-slider")
    total = int(slider.get_attribute("max") or 0)
    assert total >= 5, total
    where = page.locator("#replay-controls")
    expect(where).to_contain_text(f"step {total} of {total}")
    expect(words).to_contain_text("writer picked done")
    expect(state(page, "published")).to_have_class(ACTIVE)

    page.get_by_role("link", name="« first").click()
    expect(where).to_contain_text(f"step 1 of {total}")
    expect(words).to_contain_text('the run started with {changes: "Replay me."}')
    expect(state(page, "writing.drafting")).to_have_class(ACTIVE)
    expect(state(page, "published")).not_to_have_class(ACTIVE)

    page.get_by_role("link", name="next ▶").click()
    expect(where).to_contain_text(f"step 2 of {total}")
    page.get_by_role("link", name="◀ previous").click()
    expect(where).to_contain_text(f"step 1 of {total}")

    asked = page.locator("ol.steps li").filter(has_text="writer picked ask")
    asked_step = int(asked.get_attribute("value") or 0)
    slider.fill(str(asked_step))
    expect(where).to_contain_text(f"step {asked_step} of {total}")
    expect(words).to_contain_text('writer picked ask {question: "Who reads these notes')
    expect(state(page, "writing.asking")).to_have_class(ACTIVE)
    expect(state(page, "writing.drafting")).not_to_have_class(ACTIVE)
    expect(page.locator("aside")).to_contain_text("Gate writing.asking open, accepts reply")
    expect(page.locator("ol.steps li.current")).to_contain_text("writer picked ask")
    shot(page, "replay")

    page.locator("ol.steps li").filter(has_text="got reply").get_by_role("link").click()
    expect(words).to_contain_text('the Gate writing.asking got reply {text: "Maintainers."}')
    expect(state(page, "writing.drafting")).to_have_class(ACTIVE)
    expect(state(page, "writing.asking")).not_to_have_class(ACTIVE)

    page.get_by_role("link", name="last »").click()
    expect(where).to_contain_text(f"step {total} of {total}")
    expect(state(page, "published")).to_have_class(ACTIVE)

    page.get_by_role("link", name="Re-run").click()
    verdict = page.locator("#rerun-verdict")
    expect(verdict).to_have_text(f"same ({total} steps)")
    expect(verdict).to_have_class(re.compile(r"\bok\b"))


def test_dropped_websocket_reconnects_whole(page: Page, server: LiveServer) -> None:
    """The run page's websocket drops (closed abnormally, 1006) after the page missed an update; htmx's websocket
    extension reconnects by itself and the page is whole again: new status, Turn lines and output, no reload.

    The socket is routed through Playwright so the test can drop it: Chromium's offline emulation holds an open
    socket's messages but never closes it, so it cannot show a reconnect."""
    run_id = waiting_run(server, "Reconnect me.")
    sockets: list[WebSocketRoute] = []
    cut = {"now": False}

    def route(ws: WebSocketRoute) -> None:
        upstream = ws.connect_to_server()
        upstream.on_message(lambda message: None if cut["now"] else ws.send(message))
        sockets.append(ws)

    page.route_web_socket(re.compile(r"/ws/runs/"), route)
    page.goto(f"{server.url}/runs/{run_id}/")
    mark_document(page)
    settled(page)
    expect(page.locator("#run-status-badge")).to_have_text("waiting")

    cut["now"] = True  # the network stops delivering
    reply_through_api(server, run_id, "Whoever reads the changelog.")
    server.wait_for(run_id, "done")
    time.sleep(0.3)
    expect(page.locator("#run-status-badge")).to_have_text("waiting")  # the page missed it
    cut["now"] = False
    sockets[-1].close(code=1006, reason="dropped")  # the connection drops
    expect(page.locator("body")).to_have_class(re.compile(r"\boffline\b"))

    expect(page.locator("#run-status-badge")).to_have_text("done", timeout=20_000)
    assert page.evaluate("window.__ws.opens") == 2
    assert len(sockets) == 2
    expect(page.locator("body")).not_to_have_class(re.compile(r"\boffline\b"))
    expect(state(page, "published")).to_have_class(ACTIVE)
    expect(
        page.locator(WRITER + " li.line.answer").filter(has_text="The editor replied: Whoever reads the changelog.")
    ).to_be_visible()
    expect(writer_picks(page)).to_have_text(["ask", "done"])
    expect(page.locator("#run-gates")).to_contain_text("No Gate is open.")
    expect(page.locator("#run-output")).to_contain_text("Reconnect me.")
    same_document(page)


def test_an_observer_reads_but_cannot_act(observer: BrowserContext, server: LiveServer) -> None:
    """A user in no group sees the run, its Gate and its question, follows it live, but gets no form, no cancel and
    no "Take over"; the workflow page has no start form."""
    run_id = waiting_run(server, "Watch me.")
    tab = observer.new_page()
    errors = watch_errors(tab)
    try:
        tab.goto(f"{server.url}/runs/{run_id}/")
        mark_document(tab)
        gate = tab.locator('#run-gates article[id="gate-writing.asking"]')
        expect(gate).to_contain_text(QUESTION)
        expect(gate).to_contain_text("You may read this Gate but not answer it.")
        expect(tab.locator("#run-gates form")).to_have_count(0)
        expect(tab.get_by_role("button", name="Send reply")).to_have_count(0)
        expect(tab.get_by_role("button", name="Cancel run")).to_have_count(0)
        expect(tab.get_by_role("button", name=re.compile("Take over"))).to_have_count(0)
        expect(tab.locator("#seat-writer")).to_contain_text("played by its model")
        expect(writer_picks(tab)).to_have_text(["ask"])

        reply_through_api(server, run_id, "Observers too.")
        expect(tab.locator("#run-status-badge")).to_have_text("done")
        expect(
            tab.locator(WRITER + " li.line.answer").filter(has_text="The editor replied: Observers too.")
        ).to_be_visible()
        same_document(tab)

        tab.goto(f"{server.url}/workflows/notes/")
        expect(tab.locator("#graph svg")).to_be_visible()
        expect(tab.locator("#start")).to_have_count(0)
        expect(tab.get_by_role("button", name="Start")).to_have_count(0)
    finally:
        tab.close()
    assert not errors, errors


XSS = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">'
XSS_REPLY = '<img src=y onerror="window.__pwned=3"><b>bold?</b>'


def test_what_users_wrote_is_shown_as_text(page: Page, server: LiveServer) -> None:
    """Markup in a run's input and in a Gate answer is shown as text, on the page as loaded, in what the websocket
    swaps in, and on the replay page; none of it runs."""
    run_id = start_from_form(page, server, XSS)
    mark_document(page)
    expect(page.locator(WRITER + " li.line.prompt").first).to_contain_text(XSS)
    expect(gate_form(page)).to_be_visible()
    assert page.evaluate("typeof window.__pwned") == "undefined"
    expect(page.locator("#run-live img[src=x]")).to_have_count(0)

    form = gate_form(page)
    settled(page)
    form.locator("textarea[name=text]").fill(XSS_REPLY)
    form.get_by_role("button", name="Send reply").click()
    expect(page.locator("#run-status-badge")).to_have_text("done")
    expect(page.locator(WRITER + " li.line.answer").filter(has_text="The editor replied: " + XSS_REPLY)).to_be_visible()
    expect(page.locator("#run-output")).to_contain_text("<script>window.__pwned=1</script>")
    expect(page.locator("#run-live img")).to_have_count(0)
    expect(page.locator("#run-live b")).to_have_count(0)
    assert page.evaluate("typeof window.__pwned") == "undefined"
    same_document(page)

    page.goto(f"{server.url}/runs/{run_id}/replay/?step=1")
    expect(page.locator("#step-words")).to_contain_text("<script>window.__pwned=1</script>")
    page.goto(f"{server.url}/runs/{run_id}/replay/")
    expect(page.locator("main")).to_contain_text(XSS_REPLY)
    assert page.evaluate("typeof window.__pwned") == "undefined"
    expect(page.locator("main img")).to_have_count(0)


def test_workflows_and_runs_lists(page: Page, server: LiveServer) -> None:
    """The workflows list counts live runs and open Gates; the runs list shows each run's status and filters by
    status."""
    waiting_run(server, "Still waiting.")
    cancelled = waiting_run(server, "Cancelled from the API.")
    with server.client() as client:
        assert client.post(f"/api/runs/{cancelled}/cancel").status_code == 200
        triage = client.post(
            "/api/workflows/triage/runs", json={"title": "Crash on save", "body": "It crashes when I save a file."}
        )
        assert triage.status_code == 201, triage.text
    server.wait_for(str(triage.json()["id"]), "waiting")
    page.goto(f"{server.url}/")
    notes = page.locator("#workflow-notes")
    expect(notes).to_contain_text("notes.writing agent:writer: [ask, done]")
    expect(notes.locator("td").nth(1)).not_to_have_text("0")
    expect(notes.locator(".badge.waiting")).to_be_visible()
    for name in ("code_review", "triage"):
        expect(page.locator(f"#workflow-{name}")).to_be_visible()
    shot(page, "workflows")

    page.get_by_role("link", name="Runs", exact=True).click()
    expect(page.get_by_role("heading", name="Runs")).to_be_visible()
    rows = page.locator("#runs tbody tr")
    expect(rows.filter(has=page.locator(".badge.waiting")).first).to_be_visible()
    expect(rows.filter(has=page.locator(".badge.done")).first).to_be_visible()
    expect(rows.filter(has=page.locator(".badge.cancelled")).first).to_be_visible()
    expect(rows.filter(has_text="triage").first).to_be_visible()
    shot(page, "runs")

    page.locator("select[name=status]").select_option("waiting")
    page.get_by_role("button", name="Filter").click()
    expect(page).to_have_url(re.compile(r"status=waiting"))
    count = rows.count()
    assert count >= 1
    expect(rows.locator("td:nth-child(3) .badge")).to_have_text(["waiting"] * count)


def test_the_clicked_state_is_marked_and_kept_in_the_url(page: Page, server: LiveServer) -> None:
    """A click on a state marks it on the graph and puts it in the URL; a reload of that URL shows it again, with
    its details open; another click moves the mark. The graph of triage, with its guards and its "from any state"
    box, is saved as a screenshot."""
    page.goto(f"{server.url}/workflows/triage/")
    box = page.locator('#graph g[id="from-any-state"]')
    expect(box).to_contain_text("from any state")
    expect(page.locator("#graph svg")).to_contain_text("label [sent_by(desk)]")
    state(page, "triaging.proposed").click()
    expect(state(page, "triaging.proposed")).to_have_class(re.compile(r"\bselected\b"))
    expect(page).to_have_url(re.compile(r"[?&]state=triaging\.proposed$"))
    page.reload()
    expect(state(page, "triaging.proposed")).to_have_class(re.compile(r"\bselected\b"))
    expect(page.locator('details[id="detail-triaging.proposed"]')).to_have_attribute("open", "")
    state(page, "labelled").click()
    expect(state(page, "labelled")).to_have_class(re.compile(r"\bselected\b"))
    expect(state(page, "triaging.proposed")).not_to_have_class(re.compile(r"\bselected\b"))
    expect(page).to_have_url(re.compile(r"[?&]state=labelled$"))
    image = page.locator("section.graph-panel").screenshot()
    assert image.startswith(b"\x89PNG")
    if os.environ.get("JR2_SCREENSHOTS") == "1":
        SHOTS.mkdir(parents=True, exist_ok=True)
        (SHOTS / "graph-guards.png").write_bytes(image)


def test_replay_steps_swap_the_panes_without_a_reload_and_follow_the_arrow_keys(page: Page, server: LiveServer) -> None:
    """Next, previous, a step of the list and ← → swap the replay's panes in place (the document is never
    reloaded), each step's URL is kept, and the browser's back button goes to the step before."""
    run_id = waiting_run(server, "Keys.")
    reply_through_api(server, run_id, "Keyboard users.")
    server.wait_for(run_id, "done")
    page.goto(f"{server.url}/runs/{run_id}/replay/?step=1")
    where = page.locator("#replay-controls")
    total = int(page.locator("#step-slider").get_attribute("max") or 0)
    expect(where).to_contain_text(f"step 1 of {total}")
    mark_document(page)
    page.get_by_role("link", name="next ▶").click()
    expect(where).to_contain_text(f"step 2 of {total}")
    expect(page).to_have_url(re.compile(r"\?step=2$"))
    page.keyboard.press("ArrowRight")
    expect(where).to_contain_text(f"step 3 of {total}")
    expect(page).to_have_url(re.compile(r"\?step=3$"))
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("ArrowLeft")
    expect(where).to_contain_text(f"step 1 of {total}")
    page.keyboard.press("ArrowLeft")  # nothing before the first step
    page.wait_for_timeout(300)
    expect(where).to_contain_text(f"step 1 of {total}")
    page.locator("ol.steps li").filter(has_text="got reply").get_by_role("link").click()
    expect(page.locator("#step-words")).to_contain_text("got reply")
    expect(state(page, "writing.drafting")).to_have_class(ACTIVE)
    page.locator("#step-slider").fill(str(total))
    expect(where).to_contain_text(f"step {total} of {total}")
    page.keyboard.press("ArrowRight")  # nothing after the last
    page.wait_for_timeout(300)
    expect(where).to_contain_text(f"step {total} of {total}")
    same_document(page)
    page.go_back()
    expect(page.locator("#step-words")).to_contain_text("got reply")


def test_what_is_typed_in_a_gate_form_outlives_the_regions_sent_again(page: Page, server: LiveServer) -> None:
    """A reconnected page gets every region again: the Gate form being filled keeps its text and its focus, and
    its button still sends what was typed."""
    run_id = waiting_run(server, "Keep my words.")
    sockets: list[WebSocketRoute] = []

    def route(ws: WebSocketRoute) -> None:
        ws.connect_to_server()
        sockets.append(ws)

    page.route_web_socket(re.compile(r"/ws/runs/"), route)
    page.goto(f"{server.url}/runs/{run_id}/")
    mark_document(page)
    settled(page)
    text = page.locator("#run-gates form.gate-form[data-event=reply] textarea[name=text]")
    text.fill("Half of what I meant")
    sockets[-1].close(code=1006, reason="dropped")
    page.wait_for_function("() => window.__ws.opens >= 2")
    settled(page)
    expect(text).to_have_value("Half of what I meant")
    expect(text).to_be_focused()
    text.press_sequentially(", and the rest.")
    page.locator("#run-gates form.gate-form[data-event=reply]").get_by_role("button", name="Send reply").click()
    expect(page.locator("#run-status-badge")).to_have_text("done", timeout=20_000)
    expect(page.locator("#run-output")).to_contain_text("Half of what I meant, and the rest.")
    same_document(page)


def test_replay_plays_to_the_last_step_and_pauses(page: Page, server: LiveServer) -> None:
    """Play steps the replay on its own at the chosen speed, in place, until the last step; pause stops it."""
    run_id = waiting_run(server, "Play.")
    reply_through_api(server, run_id, "Watchers.")
    server.wait_for(run_id, "done")
    page.goto(f"{server.url}/runs/{run_id}/replay/?step=1")
    where = page.locator("#replay-controls")
    total = int(page.locator("#step-slider").get_attribute("max") or 0)
    mark_document(page)
    page.locator("#play-speed").select_option("2")
    page.get_by_role("button", name="▶ play").click()
    expect(page.get_by_role("button", name="⏸ pause")).to_be_visible()
    page.wait_for_function("() => Number(document.getElementById('replay-panes').dataset.step) > 1")
    expect(where).to_contain_text(f"step {total} of {total}", timeout=30_000)
    page.wait_for_timeout(600)
    expect(where).to_contain_text(f"step {total} of {total}")
    page.locator("#step-slider").fill("2")
    expect(where).to_contain_text(f"step 2 of {total}")
    page.get_by_role("button", name="▶ play").click()
    page.wait_for_function("() => Number(document.getElementById('replay-panes').dataset.step) > 2")
    page.get_by_role("button", name="⏸ pause").click()
    expect(page.get_by_role("button", name="▶ play")).to_be_visible()
    shown = page.locator("#replay-panes").get_attribute("data-step")
    page.wait_for_timeout(800)
    assert page.locator("#replay-panes").get_attribute("data-step") == shown, "pause stopped the steps"
    same_document(page)


def test_the_runs_list_follows_a_new_run_without_a_reload(page: Page, server: LiveServer) -> None:
    page.goto(f"{server.url}/runs/?workflow=notes")
    mark_document(page)
    page.wait_for_function("() => window.__ws.opens > 0")
    run_id = waiting_run(server, "The runs list follows live.")
    badge = page.locator(f"#runs tr#run-{run_id} td:nth-child(3) .badge")
    expect(badge).to_have_text("waiting")
    reply_through_api(server, run_id, "Ops")
    expect(badge).to_have_text("done")
    expect(page.locator(f"#runs tr#run-{run_id} td.ended")).not_to_have_text("live")
    same_document(page)
