"""Settings for every test: Agents' workspaces go to a temporary folder of the session, never beside the code
(servers the e2e tests start keep theirs beside their own database, in their own temporary folder). And the
browser the browser tests share, one per test module, and channel layers of its own for each test. The PostgreSQL
pass leaves the pure tests to the SQLite pass."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from channels.layers import channel_layers
from django.conf import settings
from playwright.sync_api import Browser

from tests.browsers import chromium
from tests.databases import on_postgres

_ROOT = tempfile.mkdtemp(prefix="jr2-test-workspaces-")
TESTS = Path(__file__).resolve().parent
#: Folders of pure tests (the interpreter, its differential and simulation runs, the layout, the docs' code): they
#: touch no database, so the PostgreSQL pass would only run them a second time.
NO_DATABASE = frozenset({"statechart", "differential", "simulation", "layout", "docs"})


def pytest_configure(config: pytest.Config) -> None:
    settings.JR2_WORKSPACE_ROOT = _ROOT


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On the PostgreSQL pass, the tests of NO_DATABASE are skipped, saying why (one that asks for the database
    still runs)."""
    if not on_postgres():
        return
    skip = pytest.mark.skip(reason="no database: the same on either, the SQLite pass runs it")
    for item in items:
        parts = item.path.relative_to(TESTS).parts if item.path.is_relative_to(TESTS) else ()
        if len(parts) > 1 and parts[0] in NO_DATABASE and item.get_closest_marker("django_db") is None:
            item.add_marker(skip)


def pytest_unconfigure(config: pytest.Config) -> None:
    shutil.rmtree(_ROOT, ignore_errors=True)


@pytest.fixture(autouse=True)
def fresh_channel_layers() -> Iterator[None]:
    """Each test gets new channel layers: a layer's asyncio locks (and the Redis layer's pools) bind to the event
    loop that first uses them, and tests each run their own loop, so a layer kept from an earlier test can fail
    with "bound to a different event loop"."""
    yield
    channel_layers.backends.clear()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Debian's chromium (tests/browsers.py), for one test module."""
    try:
        with chromium() as launched:
            yield launched
    except RuntimeError as err:
        pytest.fail(str(err))
