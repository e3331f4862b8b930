"""Clocks: how delayed events meet time. Inject `SimulatedClock` to test timers without sleeping."""

from __future__ import annotations

import asyncio
import heapq
import itertools
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

__all__ = ["Clock", "SimulatedClock", "RealClock"]


class Clock(Protocol):
    def now(self) -> float: ...
    def set_timeout(self, fn: Callable[[], None], ms: float) -> Any: ...
    def clear_timeout(self, handle: Any) -> None: ...


class SimulatedClock:
    """A clock that moves only when told: `increment(ms)` fires, in due order, every timer that comes due."""

    def __init__(self, start: float = 0) -> None:
        self._now = float(start)
        self._heap: list[tuple[float, int, int]] = []
        self._callbacks: dict[int, Callable[[], None]] = {}
        self._ids = itertools.count(1)
        self._seq = itertools.count()

    def now(self) -> float:
        return self._now

    def set_timeout(self, fn: Callable[[], None], ms: float) -> int:
        handle = next(self._ids)
        self._callbacks[handle] = fn
        heapq.heappush(self._heap, (self._now + max(0.0, float(ms)), next(self._seq), handle))
        return handle

    def clear_timeout(self, handle: Any) -> None:
        self._callbacks.pop(handle, None)

    def set(self, ms: float) -> None:
        """Move to the absolute time `ms`, firing what comes due on the way."""
        if ms < self._now:
            raise ValueError(f"a simulated clock does not go back (now {self._now}, asked {ms})")
        self._advance_to(float(ms))

    def increment(self, ms: float) -> None:
        if ms < 0:
            raise ValueError(f"increment takes a non-negative number of ms; got {ms}")
        self._advance_to(self._now + ms)

    def _advance_to(self, target: float) -> None:
        while self._heap and self._heap[0][0] <= target:
            due, _, handle = heapq.heappop(self._heap)
            fn = self._callbacks.pop(handle, None)
            if fn is None:
                continue
            self._now = max(self._now, due)
            fn()
        self._now = target

    @property
    def pending(self) -> int:
        return len(self._callbacks)


class RealClock:
    """Wall-clock time: asyncio's loop when one runs in this thread, else a timer thread."""

    def now(self) -> float:
        return time.monotonic() * 1000.0

    def set_timeout(self, fn: Callable[[], None], ms: float) -> Any:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            timer = threading.Timer(max(0.0, ms) / 1000.0, fn)
            timer.daemon = True
            timer.start()
            return timer
        return loop.call_later(max(0.0, ms) / 1000.0, fn)

    def clear_timeout(self, handle: Any) -> None:
        handle.cancel()
