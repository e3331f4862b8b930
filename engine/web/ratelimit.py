"""A small limiter on Django's cache for failed logins and wrong API tokens.

    wait = blocked("token", client_ip(request), "30/60")    # seconds to wait, or 0
    failed("token", client_ip(request), "30/60")            # count one failure

Fixed windows: a key may fail `limit` times per `window` seconds; past that it is refused until the window ends
(the caller answers 429 with Retry-After). Counting uses `cache.add` and `cache.incr`, atomic on Redis and within
one process on local memory, so a fleet of several web processes must share the cache: settings point it at Redis
when REDIS_URL is set.

Every API call with a token asks `blocked`, and on a fleet each ask was a Redis round trip on the event loop (a
tenth of a web process's time at 1,000 starts). So a process takes a key that has used under half its failures as
clear for `CLEAR_FOR` seconds without asking again, unless it counts a failure of that key itself: a block that
other processes' failures set is honoured here within that second, one this process's failures set at once.
"""

from __future__ import annotations

import math
import time

from django.conf import settings
from django.core.cache import cache
from django.http import HttpRequest

__all__ = ["blocked", "failed", "parse", "client_ip", "CLEAR_FOR"]

#: Seconds a process takes a key far from its limit as clear without asking the cache again.
CLEAR_FOR = 1.0
#: cache key -> until when (monotonic) this process takes it as clear
_clear: dict[str, float] = {}


def parse(rate: str) -> tuple[int, int]:
    """'30/60' -> (30 failures, per 60 seconds); a clear error for anything else."""
    try:
        limit, window = (int(part) for part in rate.split("/"))
    except ValueError:
        raise ValueError(f"a rate is '<failures>/<seconds>', like '30/60'; got {rate!r}") from None
    if limit < 1 or window < 1:
        raise ValueError(f"a rate needs at least 1 failure per at least 1 second; got {rate!r}")
    return limit, window


def _key(scope: str, who: str, window: int, now: float) -> tuple[str, float]:
    start = math.floor(now / window) * window
    return f"jr2-rate:{scope}:{who}:{int(start)}", start + window


def blocked(scope: str, who: str, rate: str) -> int:
    """Seconds until `who` may try again in `scope` (0: it may now)."""
    limit, window = parse(rate)
    now = time.time()
    key, ends = _key(scope, who, window, now)
    mono = time.monotonic()
    if _clear.get(key, 0.0) > mono:
        return 0
    count = int(cache.get(key, 0))
    if count >= limit:
        return max(1, math.ceil(ends - now))
    if count * 2 < limit:
        if len(_clear) > 4096:
            for old, until in list(_clear.items()):  # a copy: request threads add keys meanwhile
                if until <= mono:
                    _clear.pop(old, None)
        _clear[key] = mono + CLEAR_FOR
    return 0


def failed(scope: str, who: str, rate: str) -> None:
    """Count one failure of `who` in `scope`, in the current window."""
    _, window = parse(rate)
    key, _ = _key(scope, who, window, time.time())
    _clear.pop(key, None)
    if not cache.add(key, 1, timeout=window + 1):
        try:
            cache.incr(key)
        except ValueError:  # it expired between add and incr
            cache.add(key, 1, timeout=window + 1)


def client_ip(request: HttpRequest) -> str:
    """The caller's address: REMOTE_ADDR, or behind a proxy (`JR2_BEHIND_PROXY`) the last address of
    X-Forwarded-For, the one the proxy itself added (the earlier ones are the client's word)."""
    if getattr(settings, "JR2_BEHIND_PROXY", False):
        forwarded = [a.strip() for a in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if a.strip()]
        if forwarded:
            return forwarded[-1]
    return str(request.META.get("REMOTE_ADDR") or "unknown")
