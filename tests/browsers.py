"""Debian's chromium, driven by Playwright for Python: the one browser the tests use (never a downloaded one), and
logging a browser session in through the Console's login page."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from playwright.sync_api import Browser, BrowserContext, Page, sync_playwright

__all__ = ["CHROMIUM", "CHROMIUM_ARGS", "WS_WATCH", "chromium", "fill_login", "log_in", "settled"]

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
#: An init script (`context.add_init_script`) that counts the page's websocket openings and remembers when it last
#: swapped something in (see `settled`).
WS_WATCH = """
window.__ws = {opens: 0, last: 0};
document.addEventListener('htmx:wsOpen', () => { window.__ws.opens++; window.__ws.last = performance.now(); });
document.addEventListener('htmx:wsAfterMessage', () => { window.__ws.last = performance.now(); });
"""


@contextmanager
def chromium() -> Iterator[Browser]:
    """A headless chromium, closed at the end; a clear error when it is not installed."""
    if not CHROMIUM.exists():
        raise RuntimeError(
            f"Debian's chromium is not installed at {CHROMIUM}: `apt-get install chromium` (`make "
            "test` does it as root). The tests drive that browser and never download one."
        )
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            launched.close()


def fill_login(tab: Page, username: str, password: str) -> None:
    """Fill the login form on `tab` and send it, as a person does."""
    tab.get_by_label("Username").fill(username)
    tab.get_by_label("Password").fill(password)
    tab.get_by_role("button", name="Log in").click()


def log_in(context: BrowserContext, url: str, username: str, password: str, next_path: str = "/") -> Page:
    """A tab of `context` logged in through the login page of the server at `url`, landed on `next_path`."""
    tab = context.new_page()
    tab.goto(f"{url}/accounts/login/?next={next_path}")
    fill_login(tab, username, password)
    tab.wait_for_url(url + next_path)
    return tab


def settled(tab: Page, quiet_ms: int = 300) -> None:
    """Wait until the live page's websocket is open and has swapped nothing in for `quiet_ms` (its context has
    `WS_WATCH`).

    A live update that changes the Gate or seat region replaces it whole (what was typed in its forms is put back,
    console.js), so a click that lands while it is being swapped is lost. A person reads the page before acting;
    the tests wait for it to be quiet the same way."""
    # A function, not an expression: Playwright evals an expression inside the page, which the CSP forbids.
    tab.wait_for_function(
        "quiet => window.__ws.opens > 0 && performance.now() - window.__ws.last > quiet", arg=quiet_ms
    )
