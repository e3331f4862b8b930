"""One Redis connection pool per process for Django's cache (settings.CACHES on a fleet).

Django makes a cache backend per async context, and so, for `jr2 web` under daphne, per request: each of those
made its own `redis.ConnectionPool` and a new connection to Redis for the limiter's first read (engine/web/
ratelimit.py), about a quarter of a web process's CPU per API call under load. Handing every backend the same pool
keeps the connections open between requests. redis-py's pool is thread-safe and knows when it was forked."""

from __future__ import annotations

import threading
from typing import Any

import redis

__all__ = ["SharedPool"]

_lock = threading.Lock()
_pools: dict[str, redis.ConnectionPool] = {}


class SharedPool(redis.ConnectionPool):
    """A `redis.ConnectionPool` whose `from_url` gives the process's one pool for that URL and those options."""

    @classmethod
    def from_url(cls, url: str, **kwargs: Any) -> Any:
        key = f"{url} {sorted(kwargs.items(), key=lambda item: item[0])!r}"
        with _lock:
            pool = _pools.get(key)
            if pool is None:
                pool = _pools[key] = redis.ConnectionPool.from_url(url, **kwargs)
            return pool
