"""Django's cache on Redis (the fleet's limiter, engine/web/ratelimit.py) keeps its connections between requests:
Django makes a cache backend per async context, per request under daphne, and every one shares the process's pool
(jr2/redis_pool.py) instead of connecting to Redis again."""

from __future__ import annotations

import asyncio
import contextvars
import os
from typing import Any

import pytest
from django.core.cache import caches

pytestmark = pytest.mark.skipif(
    not os.environ.get("REDIS_URL"), reason="Redis only: the suite's second pass (scripts/services run) sets REDIS_URL"
)


def connections(pool: Any) -> int:
    return len(pool._available_connections) + len(pool._in_use_connections)


def test_requests_caches_share_one_pool_and_its_connection() -> None:
    async def one_request(key: str) -> tuple[Any, Any]:
        cache = caches["default"]  # a backend of this context: as each request under daphne gets its own
        await asyncio.to_thread(cache.set, key, 1)
        pool = cache._cache._get_connection_pool(write=True)  # type: ignore[attr-defined]
        return pool, cache

    async def requests() -> list[tuple[Any, Any, int]]:
        found = []
        for i in range(3):  # one after another, each in a context of its own, as daphne's requests are
            task = asyncio.create_task(one_request(f"jr2-test-pool-{i}"), context=contextvars.Context())
            pool, backend = await task
            found.append((pool, backend, connections(pool)))
        return found

    found = asyncio.run(requests())
    assert len({id(backend) for _, backend, _ in found}) == 3  # three backends, as three requests would have
    assert len({id(pool) for pool, _, _ in found}) == 1  # one pool for all
    assert found[0][2] == found[2][2]  # and no connection more after the first
