"""The Console shows a seat an MCP session holds, in a real browser: chromium (tests/browsers.py) on the run page of
`jr2 up` while the official SDK's streamable HTTP client holds the writer's seat, and the page changing by itself
when the session ends and the seat goes back to the model."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from playwright.sync_api import Browser, expect

from tests import browsers
from tests.databases import BROWSER_ON_SQLITE_PASS
from tests.live_server import LiveServer, served

pytestmark = BROWSER_ON_SQLITE_PASS

PASSWORD = "a long test password"

expect.set_options(timeout=15_000)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    with served(
        tmp_path_factory.mktemp("browser-mcp"),
        {"JR2_LEASE_SECONDS": "15"},
        users={"olive": ["operators"]},
        password=PASSWORD,
    ) as live:
        live.env["OLIVE_TOKEN"] = live.new_token("olive")
        yield live


def hold_seat(server: LiveServer, run_id: str, held: threading.Event, release: threading.Event) -> None:
    """An MCP session (client "Claude Code") that takes the writer's seat and keeps it until `release`."""

    async def session() -> None:
        headers = {"Authorization": f"Bearer {server.env['OLIVE_TOKEN']}"}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=60) as http,
            streamable_http_client(f"{server.url}/mcp/runs/{run_id}/seats/writer/", http_client=http) as (r, w),
            ClientSession(r, w, client_info=types.Implementation(name="Claude Code", version="2")) as client,
        ):
            await client.initialize()
            first = await client.call_tool("await_turn", {"timeout_s": 30})
            assert not first.is_error
            held.set()
            await anyio.to_thread.run_sync(release.wait)

    anyio.run(session)


def test_the_run_page_shows_the_seat_held_over_mcp(browser: Browser, server: LiveServer) -> None:
    with server.client(server.env["OLIVE_TOKEN"]) as client:
        made = client.post("/api/workflows/notes/runs?play=writer", json={"changes": "- faster search"})
    assert made.status_code == 201, made.text
    run_id = made.json()["id"]
    held, release = threading.Event(), threading.Event()
    holder = threading.Thread(target=hold_seat, args=(server, run_id, held, release), daemon=True)
    holder.start()
    try:
        assert held.wait(60), "the MCP session did not take the seat"
        context = browser.new_context()
        tab = browsers.log_in(context, server.url, "olive", PASSWORD, f"/runs/{run_id}/")
        seat = tab.locator("#seat-writer")
        expect(seat).to_contain_text("played by mcp/olive via Claude Code")
        expect(seat.locator(".badge.mcp")).to_have_text("over MCP")
        expect(seat.get_by_role("button", name="Take over writer")).to_have_count(0)
        tab.evaluate("window.__sameDocument = 'yes'")
        release.set()
        holder.join(30)
        expect(seat).to_contain_text("played by its model")
        expect(seat.locator(".badge.mcp")).to_have_count(0)
        assert tab.evaluate("window.__sameDocument") == "yes"
        context.close()
    finally:
        release.set()
