"""The timeline, forks, the compare view and export/import in a real browser: Playwright drives Debian's chromium
against `jr2 up` (its own server here, with the workflows folder plus a small `greet` workflow whose output is made
from its context). With JR2_SCREENSHOTS=1 each new page is saved to docs/screenshots/, as tests/e2e/test_browser.py
does for the others."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.databases import BROWSER_ON_SQLITE_PASS
from tests.e2e.test_browser import OPERATOR, PASSWORD, operator, page, settled, shot, waiting_run  # noqa: F401 - operator and page are fixtures, used by name
from tests.e2e.test_cli_forks import GREET
from tests.live_server import LiveServer, served

pytestmark = BROWSER_ON_SQLITE_PASS

RUN_URL = re.compile(r"/runs/([a-z0-9]+)/$")

expect.set_options(timeout=15_000)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    with served(
        tmp_path_factory.mktemp("browser-forks"),
        {"JR2_LEASE_SECONDS": "15"},
        files={"greet.py": GREET},
        users={OPERATOR: ["operators"]},
        password=PASSWORD,
    ) as live:
        yield live


def test_the_timeline_draws_the_run_opens_a_bars_detail_and_moves_live(page: Page, server: LiveServer) -> None:
    run_id = waiting_run(server, "Faster start-up.\nA new export button.")
    page.goto(f"{server.url}/runs/{run_id}/")
    page.locator("#run-timeline-link").click()
    page.wait_for_url(f"{server.url}/runs/{run_id}/timeline/")
    chart = page.locator("#timeline-chart")
    expect(chart.locator(".tl-row.tl-turn .tl-label")).to_contain_text("Turn turn-1 · writer")
    expect(chart.locator(".tl-row.tl-gate .tl-label")).to_have_text("Gate writing.asking")
    expect(chart.locator("rect.bar.call")).not_to_have_count(0)
    detail = page.locator('details[id="tl-gate-writing.asking"]')
    expect(detail).not_to_have_attribute("open", "")
    chart.locator('a[href="#tl-gate-writing.asking"]').click()
    expect(detail).to_have_attribute("open", "")
    expect(detail).to_contain_text("Who reads these notes")
    page.evaluate("window.__sameDocument = 'yes'")
    page.wait_for_function("window.__ws.opens > 0")
    server.answer(run_id, "writing.asking", "reply", text="Operators")
    expect(page.locator('details[id="tl-gate-writing.asking"]')).to_contain_text("answered", timeout=20_000)
    expect(page.locator('details[id="tl-gate-writing.asking"]')).to_have_attribute("open", "")
    assert page.evaluate("window.__sameDocument") == "yes", "the chart moved without a reload"
    shot(page, "timeline")


def test_a_fork_with_an_edited_context_runs_to_a_different_output(page: Page, server: LiveServer) -> None:
    parent = server.start_run("greet", {"name": "Ada"}, "waiting")
    page.goto(f"{server.url}/runs/{parent}/")
    page.locator("#run-fork-link").click()
    expect(page.locator("#fork-step-words")).to_contain_text("step 1: the run started with")
    context = page.locator("#fork-context")
    expect(context).to_have_value(re.compile('"greeting": "Hello"'))
    context.fill(json.dumps({"name": 7, "greeting": "Hello"}))
    page.locator("#fork-submit").click()
    expect(page.locator("#fork-errors")).to_contain_text('context.name must be a string like "Ada"; got a number')
    page.locator("#fork-context").fill(json.dumps({"name": "Ada", "greeting": "Bonjour"}, indent=2))
    shot(page, "fork")
    page.locator("#fork-submit").click()
    page.wait_for_url(RUN_URL)
    found = RUN_URL.search(page.url)
    assert found
    fork = found.group(1)
    assert fork != parent
    expect(page.locator("#run-parent")).to_contain_text(f"Forked from {parent} after step 1")
    settled(page)
    page.locator("#gate-desk form").get_by_role("button", name="Send go").click()
    expect(page.locator("#run-status-badge")).to_have_text("done")
    expect(page.locator("#run-output")).to_contain_text('"text": "Bonjour, Ada!"')
    shot(page, "run-fork")
    server.answer(parent, "desk", "go")
    assert server.wait_for(parent, "done")["output"] == {"text": "Hello, Ada!"}


def test_the_compare_view_marks_the_first_difference(page: Page, server: LiveServer) -> None:
    parent = server.start_run("greet", {"name": "Grace"}, "waiting")
    with server.client() as client:
        made = client.post(
            f"/api/runs/{parent}/fork",
            json={"step": 1, "context": {"name": "Grace", "greeting": "Hi"}, "answer": {"gate": "desk", "event": "go"}},
        )
        assert made.status_code == 201, made.text
    fork = made.json()["id"]
    server.wait_for(fork, "done")
    server.answer(parent, "desk", "go")
    server.wait_for(parent, "done")
    page.goto(f"{server.url}/runs/{parent}/")
    page.locator("#run-forks").get_by_role("link", name="compare").click()
    expect(page.locator("#compare-verdict")).to_have_text(re.compile(r"^first difference at step 1: the context"))
    first = page.locator("#first-difference")
    expect(first).to_contain_text("first difference")
    contexts = first.locator("details[open]")
    expect(contexts).to_have_count(2)
    expect(contexts.nth(0)).to_contain_text('"greeting": "Hello"')
    expect(contexts.nth(1)).to_contain_text('"greeting": "Hi"')
    expect(page.locator("#compare-table tbody tr")).to_have_count(2)
    expect(page.locator("#compare-table tbody tr").nth(1)).to_contain_text("the run ends done")
    shot(page, "compare")


def test_export_then_import_gives_a_read_only_run(page: Page, server: LiveServer, tmp_path: Path) -> None:
    run_id = server.start_run("greet", {"name": "Linus"}, "waiting")
    page.goto(f"{server.url}/runs/{run_id}/")
    with page.expect_download() as download:
        page.locator("#run-export-link").click()
    saved = tmp_path / download.value.suggested_filename
    download.value.save_as(saved)
    assert saved.name == f"jr2-run-{run_id}.json" and json.loads(saved.read_text())["run"]["id"] == run_id

    page.goto(f"{server.url}/runs/")
    page.locator("#import-link").click()
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"format": "jr2.run", "version": 1}))
    page.locator("#import-file").set_input_files(str(bad))
    page.locator("#import-submit").click()
    expect(page.locator("#import-error")).to_contain_text("bad.json: the run export is refused, nothing was imported")
    shot(page, "import")
    page.locator("#import-file").set_input_files(str(saved))
    page.locator("#import-submit").click()
    page.wait_for_url(RUN_URL)
    found = RUN_URL.search(page.url)
    assert found and found.group(1) != run_id
    expect(page.locator("#run-imported")).to_contain_text(f"a read-only copy of run {run_id}")
    expect(page.locator("#run-status-badge")).to_have_text("waiting")
    expect(page.locator("#run-gates")).to_contain_text("You may read this Gate but not answer it.")
    expect(page.get_by_role("button", name="Cancel run")).to_have_count(0)
    shot(page, "run-imported")
