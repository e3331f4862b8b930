"""What a run's task and its Turn loops wait on, in the few bytes a waiting run can afford.

A host holds a thousand runs waiting at their Gates. `asyncio.Queue` makes four deques when it is made (its items,
its getters, its putters, and an `Event` with a deque of its own), and `asyncio.Event` one: about 600 bytes each,
empty or not, so a waiting run's inbox and Turn loop held 3 KiB of empty deques. These hold a future only while
someone waits and an item list only while items wait. Each serves one waiter, which is all a run's task (its inbox)
or a Turn loop (its wake-up) is.

`wait_up_to` is how a host's loops (its claims and relays, its courier) sleep until woken or their next scan.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any, Generic, Protocol, TypeVar

__all__ = ["Inbox", "Wake", "wait_up_to"]

T = TypeVar("T")


class _OneWaiter:
    """A future made only while its one waiter waits."""

    __slots__ = ("_waiter",)

    def __init__(self) -> None:
        self._waiter: asyncio.Future[None] | None = None

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    async def _wait(self, what: str) -> None:
        """Until `_wake` (or a cancel, which leaves nothing behind)."""
        if self._waiter is not None and not self._waiter.done():
            raise RuntimeError(f"{what} serves one waiter at a time")
        self._waiter = asyncio.get_running_loop().create_future()
        try:
            await self._waiter
        finally:
            self._waiter = None


class Inbox(_OneWaiter, Generic[T]):
    """Items in arrival order for one task (`asyncio.Queue`'s `put_nowait`, `get`, `get_nowait` and `empty`,
    unbounded)."""

    __slots__ = ("_items",)

    def __init__(self) -> None:
        super().__init__()
        self._items: list[T] | None = None

    def put_nowait(self, item: T) -> None:
        if self._items is None:
            self._items = [item]
        else:
            self._items.append(item)
        self._wake()

    def empty(self) -> bool:
        return not self._items

    def qsize(self) -> int:
        return len(self._items or ())

    def get_nowait(self) -> T:
        """The oldest item; `asyncio.QueueEmpty` when there is none."""
        if not self._items:
            raise asyncio.QueueEmpty
        item = self._items.pop(0)
        if not self._items:
            self._items = None
        return item

    async def get(self) -> T:
        """The oldest item, once there is one. A cancelled wait takes nothing."""
        while not self._items:
            await self._wait("an inbox")
        return self.get_nowait()


class Wake(_OneWaiter):
    """A flag one task waits for (`asyncio.Event`'s `set`, `clear`, `is_set` and `wait`)."""

    __slots__ = ("_set",)

    def __init__(self) -> None:
        super().__init__()
        self._set = False

    def set(self) -> None:
        self._set = True
        self._wake()

    def clear(self) -> None:
        self._set = False

    def is_set(self) -> bool:
        return self._set

    async def wait(self) -> None:
        """Return once set (at once if it is)."""
        if not self._set:
            await self._wait("a wake")


class _Settable(Protocol):
    async def wait(self) -> Any: ...


async def wait_up_to(event: _Settable, seconds: float) -> None:
    """Until `event` is set or `seconds` have passed. Not `asyncio.wait_for`: on Python 3.11 it drops a cancel that
    comes as the event is set, so a loop that waited that way went round again and a host's stop waited for it
    forever; a cancel here always goes through."""
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(seconds):
            await event.wait()
