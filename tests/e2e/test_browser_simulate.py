"""The simulator in a real browser (Debian's chromium through Playwright) against `jr2 up`: the user plays every party
of tests/simulation/lab.py by hand. A guard is shown false, then true once the context changes; the Agent's pick is
refused while its search is outstanding; the Effect is resolved by hand; the timer fires; back undoes a step; and
clicking an edge offers its event. Every step is an htmx swap: the page is never reloaded.

With JR2_SCREENSHOTS=1 (`make screenshots`) the simulator is saved as docs/screenshots/simulate.png."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, BrowserContext, Locator, Page, expect

from tests.databases import BROWSER_ON_SQLITE_PASS
from tests.e2e.test_browser import PASSWORD, VIEWPORT, log_in, mark_document, same_document, shot, state, watch_errors
from tests.live_server import LiveServer, served

pytestmark = BROWSER_ON_SQLITE_PASS

LAB = (Path(__file__).parents[1] / "simulation" / "lab.py").read_text(encoding="utf-8")
ACTIVE = re.compile(r"\bactive\b")
DONE_EVENT = "xstate.done.actor.0.lab.researching.searching"

expect.set_options(timeout=15_000)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    with served(
        tmp_path_factory.mktemp("simulate"),
        files={"lab.py": LAB},
        users={"sam": [], "olive": ["operators"]},
        password=PASSWORD,
    ) as live:
        yield live


@pytest.fixture(scope="module")
def reader(browser: Browser, server: LiveServer) -> Iterator[BrowserContext]:
    """A user in no group: simulating changes nothing stored, so reading is enough."""
    context = browser.new_context(viewport=VIEWPORT)
    log_in(context, server, "sam").close()
    yield context
    context.close()


@pytest.fixture(scope="module")
def operator(browser: Browser, server: LiveServer) -> Iterator[BrowserContext]:
    """A user who may start runs, and so may save scenarios into the project."""
    context = browser.new_context(viewport=VIEWPORT)
    log_in(context, server, "olive").close()
    yield context
    context.close()


@pytest.fixture
def page(reader: BrowserContext, server: LiveServer) -> Iterator[Page]:
    yield from started(reader, server)


def started(context: BrowserContext, server: LiveServer) -> Iterator[Page]:
    tab = context.new_page()
    errors = watch_errors(tab)
    tab.goto(f"{server.url}/workflows/lab/simulate/")
    new = tab.locator("#sim-new")
    if new.count():
        new.click()
    start = tab.locator("#sim-start")
    start.locator("[name=topic]").fill("tides")
    start.get_by_role("button", name="Start simulating").click()
    expect(tab.locator("#sim-status")).to_have_text("active")
    mark_document(tab)
    yield tab
    same_document(tab)
    tab.close()
    assert not errors, f"script errors on the page: {errors}"


def offer(tab: Page, event: str, kind: str | None = None) -> Locator:
    where = f'#sim-events details.sim-offer[data-event="{event}"]'
    return tab.locator(where + (f'[data-kind="{kind}"]' if kind else ""))


def open_offer(tab: Page, event: str, kind: str | None = None) -> Locator:
    found = offer(tab, event, kind)
    found.locator("summary").click()
    expect(found).to_have_attribute("open", "")
    return found


def search(tab: Page, query: str) -> None:
    found = open_offer(tab, "search")
    found.locator("textarea[name$=-query]").fill(query)
    found.get_by_role("button", name="pick search").click()
    expect(tab.locator("#sim-active")).to_have_text("researching, researching.searching")


def test_a_guard_false_then_true_an_outstanding_pick_refused_and_an_effect_resolved_by_hand(page: Page) -> None:
    finish = offer(page, "finish")
    expect(finish).to_contain_text("not allowed")
    expect(finish).to_contain_text('the guard [context["found"] > 0] of researching was false')
    expect(finish.locator("table.sim-candidates .guard-false")).to_have_text("false")
    expect(state(page, "researching.idle")).to_have_class(ACTIVE)

    search(page, "moon")
    expect(state(page, "researching.searching")).to_have_class(ACTIVE)
    expect(page.locator("#sim-result")).to_contain_text("outstanding")
    expect(page.locator("#sim-turns")).to_contain_text("outstanding: search")
    expect(offer(page, "finish")).to_contain_text('the pick "search" is outstanding')

    finish = open_offer(page, "finish")
    finish.locator("textarea[name$=-summary]").fill("too early")
    finish.get_by_role("button", name="pick finish").click()
    expect(page.locator("#sim-message")).to_contain_text('refused: the pick "search" is outstanding')
    expect(page.locator("#sim-active")).to_have_text("researching, researching.searching")

    done = open_offer(page, DONE_EVENT, "effect_done")
    done.locator("textarea[name$=-output]").fill('{"hits": 2}')
    done.get_by_role("button", name="send").click()
    expect(page.locator("#sim-active")).to_have_text("researching, researching.idle")
    expect(page.locator('#sim-context tr.changed[data-key="found"]')).to_contain_text("1")
    expect(page.locator("#sim-step table.sim-candidates tr.taken")).to_contain_text("researching.idle")
    expect(page.locator('#sim-turns article[data-agent="researcher"]')).to_contain_text('"hits": 2')
    finish = offer(page, "finish")
    expect(finish).to_contain_text("allowed")
    expect(finish).not_to_contain_text("not allowed")
    expect(finish.locator("table.sim-candidates .guard-true")).to_have_text("true")
    expect(state(page, "researching.idle")).to_have_class(ACTIVE)
    expect(state(page, "researching.searching")).not_to_have_class(ACTIVE)
    finish.locator("summary").click()
    expect(finish).to_have_attribute("open", "")
    page.evaluate("window.scrollTo(0, 0)")
    shot(page, "simulate")


def test_a_timer_fired_and_back_undoes_it(page: Page) -> None:
    expect(page.locator("#sim-next-due")).to_have_text("60000 ms")
    controls = page.locator("#sim-controls")
    controls.locator("input[name=ms]").fill("1500")
    controls.get_by_role("button", name="advance", exact=True).click()
    expect(page.locator("#sim-now")).to_have_text("1500 ms")
    expect(page.locator("#sim-next-due")).to_have_text("58500 ms")

    page.locator("#sim-next-timer").click()
    expect(page.locator("#sim-status")).to_have_text("done")
    expect(page.locator("#sim-active")).to_have_text("expired")
    expect(page.locator("#sim-step")).to_contain_text("took xstate.after.60000.lab.researching")
    expect(state(page, "expired")).to_have_class(ACTIVE)

    page.locator("#sim-undo").click()
    expect(page.locator("#sim-status")).to_have_text("active")
    expect(page.locator("#sim-now")).to_have_text("1500 ms")
    expect(state(page, "expired")).not_to_have_class(ACTIVE)
    expect(state(page, "researching.idle")).to_have_class(ACTIVE)
    page.locator("#sim-redo").click()
    expect(page.locator("#sim-active")).to_have_text("expired")


def test_clicking_an_edge_offers_its_event(page: Page) -> None:
    page.locator('#graph g.edge[data-event="search"] text').first.click()
    expect(offer(page, "search")).to_have_attribute("open", "")
    expect(page.locator("#sim-edge-note")).to_contain_text("Offered: search")
    page.locator('#graph g.edge[data-event="approve"] text').first.click()
    expect(page.locator("#sim-edge-note")).to_contain_text("approve is not offered now")


def test_a_scenario_saved_then_jr2_test_passes_and_fails_after_the_machine_is_edited(
    operator: BrowserContext, server: LiveServer
) -> None:
    for page in started(operator, server):
        search(page, "moon")
        done = open_offer(page, DONE_EVENT, "effect_done")
        done.get_by_role("button", name="send").click()
        expect(page.locator("#sim-active")).to_have_text("researching, researching.idle")
        finish = open_offer(page, "finish")
        finish.locator("textarea[name$=-summary]").fill("The moon moves the tides.")
        finish.get_by_role("button", name="pick finish").click()
        expect(page.locator("#sim-active")).to_have_text("review")
        approve = open_offer(page, "approve")
        approve.get_by_label("Whether the summary is good enough.").check()
        approve.get_by_role("button", name="send approve").click()
        expect(page.locator("#sim-status")).to_have_text("done")

        page.locator("#sim-save summary").click()
        page.get_by_label("scenario name").fill("moon_approved")
        page.get_by_label("scenario description").fill("one search, then approved")
        page.get_by_role("button", name="Save as scenario").click()
        expect(page.locator("#sim-message")).to_have_text(
            "saved as scenario moon_approved (moon_approved.json); jr2 test replays it"
        )

    path = server.workflows / "lab.scenarios" / "moon_approved.json"
    assert path.exists()
    passed = server.jr2("test", "lab")
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "moon_approved" in passed.stdout and "ok (5 steps)" in passed.stdout

    source = server.workflows / "lab.py"
    try:
        source.write_text(LAB.replace('context["found"] > 0', 'context["found"] > 1'))
        failed = server.jr2("test", "lab")
    finally:
        source.write_text(LAB)
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "moon_approved" in failed.stdout and "step 4" in failed.stdout, failed.stdout
