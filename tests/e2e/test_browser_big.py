"""Big runs and big Machines in a real browser (Playwright driving Debian's chromium against `jr2 up`): a run opens
with its newest steps and Turns and loads older ones as the user scrolls, live steps arrive at the top without
duplicates, a deep link opens an old step marked and in view, "copy link" copies its address, compound states
collapse and expand (remembered), the overview of a 300-state Machine, and a child Machine's own graph.

The server runs this worktree's code (PYTHONPATH) with the ledger workflow (bench/ledger.py) and the graph
benchmark's 300-state Machine (bench/graph.py) in its workflows folder. With JR2_SCREENSHOTS=1 (`make screenshots`)
the pages are saved to docs/screenshots/.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, WebSocketRoute, expect

from tests.databases import BROWSER_ON_SQLITE_PASS
from tests.e2e.test_browser import OPERATOR, PASSWORD, SHOTS, log_in, new_context, page, settled  # noqa: F401 - page is a fixture, used by name
from tests.live_server import ROOT, LiveServer, served

pytestmark = BROWSER_ON_SQLITE_PASS

STEP_PAGE = 50  # console/pages/feeds.py STEP_PAGE
STEP_HEAD = 10  # console/pages/feeds.py STEP_HEAD: the newest steps a live update carries

expect.set_options(timeout=15_000)


def shot(tab: Page, name: str) -> None:
    """The visible part of the page (these pages are long), saved to docs/screenshots/ with JR2_SCREENSHOTS=1."""
    image = tab.screenshot()
    assert image.startswith(b"\x89PNG")
    if os.environ.get("JR2_SCREENSHOTS") == "1":
        SHOTS.mkdir(parents=True, exist_ok=True)
        (SHOTS / f"{name}.png").write_bytes(image)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    files = {
        "ledger.py": "from bench.ledger import machine  # noqa: F401\n",
        "big.py": "from bench.graph import big_machine\n\nmachine = big_machine()\n",
    }
    with served(
        tmp_path_factory.mktemp("browser-big"),
        {"JR2_LEASE_SECONDS": "15", "PYTHONPATH": str(ROOT)},
        files=files,
        users={OPERATOR: ["operators"]},
        password=PASSWORD,
    ) as live:
        yield live


@pytest.fixture(scope="module")
def operator(browser: Browser, server: LiveServer) -> Iterator[BrowserContext]:
    context = new_context(browser)
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=server.url)
    log_in(context, server, OPERATOR).close()
    yield context
    context.close()


def tick(server: LiveServer, run_id: str, times: int) -> int:
    """Answer the ledger's desk `times` times through the API; returns the run's last step."""
    with server.client() as client:
        for _ in range(times):
            sent = client.post(f"/api/runs/{run_id}/gates/desk/events", json={"type": "tick"})
            assert sent.status_code == 200 and sent.json()["outcome"] == "delivered", sent.text
        return int(client.get(f"/api/runs/{run_id}").json()["seq"])


@pytest.fixture(scope="module")
def big_run(server: LiveServer) -> dict[str, Any]:
    """A ledger run: 60 notes in laps of 20 (3 Turns of the clerk), then its desk ticked to over 250 steps."""
    run_id = server.start_run("ledger", {"notes": 60, "lap": 20}, "waiting")
    server.answer(run_id, "writing.asking", "reply", text="ok")
    server.wait_for(run_id, "waiting")
    seq = tick(server, run_id, 1)
    seq = tick(server, run_id, max(0, (260 - seq) // 2 + 1))
    return {"id": run_id, "seq": seq}


def step_ids(tab: Page) -> list[int]:
    found = tab.eval_on_selector_all("#run-steps-list li.step", "els => els.map(e => e.dataset.cursor)")
    return [int(x) for x in found]


def test_a_big_run_opens_newest_first_and_loads_older_steps_as_the_user_scrolls(
    page: Page, server: LiveServer, big_run: dict[str, Any]
) -> None:
    run_id, last = big_run["id"], big_run["seq"]
    page.goto(f"{server.url}/runs/{run_id}/")
    expect(page.locator("#run-summary")).to_contain_text(f"{last} steps")
    assert step_ids(page) == list(range(last, last - STEP_PAGE, -1)), "one page of the newest steps, nothing more"
    turns = page.locator("#run-turns-list > article.turn")
    first_turns = turns.count()
    assert 0 < first_turns < 3
    page.locator("#run-steps").scroll_into_view_if_needed()
    shot(page, "run-big")

    steps = page.locator("#run-steps-list li.step")
    while steps.count() < last:
        before = steps.count()
        page.locator("#run-steps-list > .feed-more").scroll_into_view_if_needed()
        expect(steps).not_to_have_count(before)
    assert step_ids(page) == list(range(last, 0, -1)), "every step once, newest first"
    expect(page.locator("#run-steps-list > .feed-more")).to_have_count(0)

    page.locator("#run-turns-list > .feed-more").scroll_into_view_if_needed()
    expect(turns).to_have_count(3)
    expect(page.locator("#run-turns-list li.line.pick").filter(has_text="Finding 1:")).to_have_count(1)
    expect(page.locator("#run-turns-list li.line.pick").filter(has_text="Finding 60:")).to_have_count(1)


def test_new_steps_arrive_live_at_the_top_once(page: Page, server: LiveServer, big_run: dict[str, Any]) -> None:
    run_id = big_run["id"]
    page.goto(f"{server.url}/runs/{run_id}/")
    settled(page)
    page.evaluate("window.__sameDocument = 'yes'")
    shown = step_ids(page)
    last = tick(server, run_id, 3)
    expect(page.locator(f"#step-{last}")).to_be_attached()
    expect(page.locator("#run-summary")).to_contain_text(f"{last} steps")
    now = step_ids(page)
    assert now[: last - shown[0]] == list(range(last, shown[0], -1)) and now[last - shown[0] :] == shown, (
        "the new steps on top, in order, and nothing twice"
    )
    expect(page.locator("#run-steps-list li.step").first).to_contain_text("the Gate desk got tick")
    assert page.evaluate("window.__sameDocument") == "yes"
    big_run["seq"] = last


def test_steps_a_page_missed_while_its_socket_was_held_are_loaded_in_the_gap(
    page: Page, server: LiveServer, big_run: dict[str, Any]
) -> None:
    """The socket's messages are held (the page misses updates) while the run moves more steps than a live update
    carries; when they flow again the page gets the newest steps on top and a loader for exactly those between,
    which fills the gap as it scrolls into view: every step once, in order, no reload."""
    run_id = big_run["id"]
    held = {"now": False}

    def route(ws: WebSocketRoute) -> None:
        upstream = ws.connect_to_server()
        upstream.on_message(lambda message: None if held["now"] else ws.send(message))

    page.route_web_socket(re.compile(r"/ws/runs/"), route)
    page.goto(f"{server.url}/runs/{run_id}/")
    settled(page)
    page.evaluate("window.__sameDocument = 'yes'")
    shown = step_ids(page)
    held["now"] = True
    tick(server, run_id, STEP_HEAD)  # 2 steps a tick: twice what one update carries
    page.wait_for_timeout(300)
    assert step_ids(page) == shown, "the page missed them"
    held["now"] = False
    last = tick(server, run_id, 1)
    expect(page.locator(f"#step-{last}")).to_be_attached()
    now = step_ids(page)
    assert now[:STEP_HEAD] == list(range(last, last - STEP_HEAD, -1)) and now[STEP_HEAD:] == shown
    gap = page.locator("#run-steps-list > li.feed-more").first
    expect(gap).to_have_attribute("hx-get", f"/runs/{run_id}/steps/?before={last - STEP_HEAD + 1}&after={shown[0]}")
    gap.scroll_into_view_if_needed()
    expect(page.locator(f"#step-{shown[0] + 1}")).to_be_attached()
    assert step_ids(page) == list(range(last, shown[-1] - 1, -1)), "every step once, in order"
    assert page.evaluate("window.__sameDocument") == "yes"
    big_run["seq"] = last


def test_a_deep_link_opens_an_old_step_marked_and_copy_link_copies_its_address(
    page: Page, server: LiveServer, big_run: dict[str, Any]
) -> None:
    run_id = big_run["id"]
    page.goto(f"{server.url}/runs/{run_id}/?step=30")
    target = page.locator("#step-30")
    expect(target).to_have_class(re.compile(r"\btarget\b"))
    expect(target).to_be_in_viewport()
    assert len(step_ids(page)) == 2 * STEP_PAGE, "the head and the page around step 30, not the whole run"
    target.get_by_role("button", name="copy link").click()
    expect(target.get_by_role("button", name="copied")).to_be_visible()
    assert page.evaluate("navigator.clipboard.readText()") == f"{server.url}/runs/{run_id}/?step=30"
    shot(page, "run-big-deep-link")

    other = page.locator("#step-12")
    other.get_by_role("link", name="#12").click()
    page.wait_for_url(f"{server.url}/runs/{run_id}/?step=12")
    expect(page.locator("#step-12")).to_have_class(re.compile(r"\btarget\b"))


def test_collapsing_a_state_is_remembered_and_a_child_machine_opens_its_graph(
    page: Page, server: LiveServer, big_run: dict[str, Any]
) -> None:
    page.goto(f"{server.url}/workflows/ledger/")
    writing = page.locator('#graph g[id="state-writing"]')
    expect(page.locator('#graph g[id="state-writing.asking"]')).to_be_attached()
    count = page.locator("#fold-count")
    expect(count).to_have_text(re.compile(r"^\(0 of \d+ collapsed\)$"))
    writing.locator(".fold-toggle").click()
    expect(writing).to_have_class(re.compile(r"\bstate-collapsed\b"))
    expect(count).to_have_text(re.compile(r"^\(1 of \d+ collapsed\)$"))  # counted again, not stale
    expect(page.locator('#graph g[id="state-writing.asking"]')).to_have_count(0)
    page.reload()
    expect(page.locator('#graph g[id="state-writing"]')).to_have_class(re.compile(r"\bstate-collapsed\b"))
    shot(page, "workflow-collapsed")

    page.goto(f"{server.url}/runs/{big_run['id']}/")
    run_writing = page.locator('#graph g[id="state-writing"]')
    expect(run_writing).to_have_class(re.compile(r"\bstate-collapsed\b"))
    expect(run_writing).to_have_class(re.compile(r"\bvisited\b"))
    run_writing.locator(".fold-toggle").click()
    expect(page.locator('#graph g[id="state-writing.asking"]')).to_have_class(re.compile(r"\bvisited\b"))
    expect(page.locator('#graph g[id="state-ticking"]')).to_have_class(re.compile(r"\bactive\b"))
    page.goto(f"{server.url}/workflows/ledger/")
    expect(page.locator('#graph g[id="state-writing.asking"]')).to_be_attached()

    page.locator('#graph g[id="state-archiving"] text.child-machine').click()
    page.wait_for_url(f"{server.url}/workflows/ledger/machines/archive/")
    expect(page.locator('#graph g[id="state-packing"]')).to_be_attached()
    expect(page.locator("h1")).to_contain_text("child Machine archive")
    shot(page, "child-machine")


def test_a_300_state_machine_opens_at_its_size_with_an_overview(page: Page, server: LiveServer) -> None:
    page.goto(f"{server.url}/workflows/big/")
    graph, overview = page.locator("#graph"), page.locator("#graph-minimap")
    expect(overview).to_be_visible()
    expect(overview.locator("svg")).to_be_attached()
    assert page.evaluate(
        "document.getElementById('graph').scrollWidth > 3 * document.getElementById('graph').clientWidth"
    )
    box = overview.bounding_box()
    assert box is not None
    page.mouse.click(box["x"] + box["width"] * 0.9, box["y"] + box["height"] / 2)
    assert page.evaluate("document.getElementById('graph').scrollLeft") > 0, "the overview moves the view"
    shot(page, "workflow-big")
    page.get_by_role("button", name="whole Machine").click()
    expect(overview).to_be_hidden()
    assert page.evaluate(
        "document.getElementById('graph').scrollWidth <= document.getElementById('graph').clientWidth + 1"
    )
    page.get_by_role("button", name="actual size").click()
    expect(overview).to_be_visible()
    page.locator('#graph g[id="state-team3"] .fold-toggle').click()
    expect(graph.locator('g[id="state-team3"]')).to_have_class(re.compile(r"\bstate-collapsed\b"))
    expect(graph.locator('g[id="state-team3.g0"]')).to_have_count(0)
    page.locator('#graph g[id="state-team3"] .fold-toggle').click()
    expect(graph.locator('g[id="state-team3.g0"]')).to_be_attached()
