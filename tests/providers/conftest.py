"""Fixtures for the provider tests: the fake model server, and the asyncio backend for `pytest.mark.anyio`."""

from __future__ import annotations

import pytest

from tests.fakes.model_server import model_server

__all__ = ["model_server"]


@pytest.fixture
def anyio_backend() -> str:
    """The runtime runs on asyncio, so the providers are tested there (not on trio)."""
    return "asyncio"
