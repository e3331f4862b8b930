"""The limiter's shortcut (engine/web/ratelimit.py): a key far from its limit is taken as clear for a second without
asking the cache again, a failure this process counts ends that at once, and a block other processes' failures
set (the shared cache's count, written here behind the limiter's back) is honoured within the second."""

from __future__ import annotations

import time

import pytest
from django.core.cache import cache

from engine.web import ratelimit


@pytest.fixture(autouse=True)
def fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    cache.clear()
    monkeypatch.setattr(ratelimit, "_clear", {})


def _count_elsewhere(scope: str, who: str, rate: str, n: int) -> None:
    """Failures counted by another web process: in the shared cache only."""
    _, window = ratelimit.parse(rate)
    key, _ = ratelimit._key(scope, who, window, time.time())
    cache.set(key, int(cache.get(key, 0)) + n, timeout=window + 1)


def test_this_processs_own_failures_block_at_once() -> None:
    rate = "3/300"
    for _ in range(3):
        assert ratelimit.blocked("token", "10.0.0.1", rate) == 0
        ratelimit.failed("token", "10.0.0.1", rate)
    assert 0 < ratelimit.blocked("token", "10.0.0.1", rate) <= 300
    assert ratelimit.blocked("token", "10.0.0.2", rate) == 0  # another address is not


def test_a_block_set_elsewhere_is_honoured_within_clear_for(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ratelimit, "CLEAR_FOR", 0.2)
    rate = "4/300"
    assert ratelimit.blocked("token", "10.0.0.3", rate) == 0  # asked once: clear for 0.2 s
    _count_elsewhere("token", "10.0.0.3", rate, 4)
    assert ratelimit.blocked("token", "10.0.0.3", rate) == 0  # not asked again yet
    time.sleep(0.25)
    assert ratelimit.blocked("token", "10.0.0.3", rate) > 0


def test_a_key_past_half_its_failures_is_asked_every_time() -> None:
    rate = "4/300"
    _count_elsewhere("token", "10.0.0.4", rate, 2)
    assert ratelimit.blocked("token", "10.0.0.4", rate) == 0
    _count_elsewhere("token", "10.0.0.4", rate, 2)
    assert ratelimit.blocked("token", "10.0.0.4", rate) > 0  # no shortcut taken at 2 of 4


def test_the_shortcuts_of_many_addresses_are_pruned_once_past_their_second(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ratelimit, "CLEAR_FOR", 3600.0)  # none expires while they are made, however slow the machine
    for i in range(4100):
        assert ratelimit.blocked("token", f"10.1.{i // 256}.{i % 256}", "60/60") == 0
    assert len(ratelimit._clear) == 4100
    for key in list(ratelimit._clear):
        ratelimit._clear[key] = 0.0  # their second is over
    assert ratelimit.blocked("token", "10.2.0.1", "60/60") == 0
    assert len(ratelimit._clear) == 1  # the 4,100 expired ones went, the new one stays
