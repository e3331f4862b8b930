"""Refused one-tap links count as failed logins of the address (the limiter counts in the cache): each test starts
and ends with an empty cache, so one test's refusals never limit another's logins."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.core.cache import cache


@pytest.fixture(autouse=True)
def fresh_limits() -> Iterator[None]:
    cache.clear()
    yield
    cache.clear()
