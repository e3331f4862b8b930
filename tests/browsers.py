"""Debian's chromium, driven by Playwright for Python: the one browser the tests use (never a downloaded one), and
logging a browser session in through the Console's login page."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from playwright.sync_api import Browser, BrowserContext, Page, sync_playwright

__all__ = ["CHROMIUM", "CHROMIUM_ARGS", "chromium", "fill_login", "log_in"]

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


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
