"""Debian's chromium, driven by Playwright for Python: the one browser the tests use (never a downloaded one)."""
from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from playwright.sync_api import Browser, sync_playwright

__all__ = ["CHROMIUM", "CHROMIUM_ARGS", "chromium"]

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]


@contextmanager
def chromium() -> Iterator[Browser]:
    """A headless chromium, closed at the end; a clear error when it is not installed."""
    if not CHROMIUM.exists():
        raise RuntimeError(f"Debian's chromium is not installed at {CHROMIUM}: `apt-get install chromium` (`make "
                           "test` does it as root). The tests drive that browser and never download one.")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            launched.close()
