"""A mailbox: events for one processing function, taken one at a time, in order (xstate's Mailbox).

An event that arrives while another is being processed (an actor's own action sending to itself, a child that
finished as it started) only joins the queue; the loop already running takes it after the current one. That is
run-to-completion: no event is processed inside another.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["Mailbox"]

T = TypeVar("T")


class Mailbox(Generic[T]):
    """Queued items for `process`; `run` takes them in order until the queue is empty or `active` says stop.

    The queue is a list, not a deque: it rarely holds more than one or two items, and an empty deque is about 600
    bytes, which every waiting run's actors held."""

    def __init__(self, process: Callable[[T], None]) -> None:
        self._process = process
        self._queue: list[T] = []
        self.busy = False
        self.push: Callable[[T], None] = self._queue.append  # bound once: it runs for every event

    def clear(self) -> None:
        self._queue.clear()

    def __len__(self) -> int:
        return len(self._queue)

    def run(self, active: Callable[[], bool]) -> None:
        """Process queued items while `active()`; a call made while processing (re-entrant) returns at once,
        leaving its items to the loop already running."""
        if self.busy:
            return
        self.busy = True
        try:
            while self._queue and active():
                self._process(self._queue.pop(0))
        finally:
            self.busy = False
