"""A live jr2 server for end-to-end tests (tests/live_server.py): `jr2 up` as a real subprocess on a free port, with
its own SQLite file and a copy of the workflows folder, and an API token for a user with every run permission."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.live_server import LiveServer, served


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """One server for a test module (runs are independent, so tests share it)."""
    with served(tmp_path_factory.mktemp("live")) as server:
        yield server


@pytest.fixture
def fresh(tmp_path: Path) -> Iterator[LiveServer]:
    """A server of its own, for tests that kill and restart it."""
    with served(tmp_path) as server:
        yield server
