"""What a run's task and its Turn loops wait on (engine/runtime/waiting.py): asyncio.Queue's and asyncio.Event's
behaviour for one waiter, without their empty deques."""

from __future__ import annotations

import asyncio
import sys

import pytest

from engine.runtime.waiting import Inbox, Wake


def test_an_inbox_hands_items_over_in_arrival_order_and_waits_when_empty() -> None:
    async def main() -> None:
        inbox: Inbox[str] = Inbox()
        assert inbox.empty() and inbox.qsize() == 0
        with pytest.raises(asyncio.QueueEmpty):
            inbox.get_nowait()
        getter = asyncio.ensure_future(inbox.get())
        await asyncio.sleep(0)
        assert not getter.done()
        inbox.put_nowait("a")
        inbox.put_nowait("b")
        assert await getter == "a"
        assert inbox.qsize() == 1 and not inbox.empty()
        assert await inbox.get() == "b"
        assert inbox.empty()
        inbox.put_nowait("c")
        assert inbox.get_nowait() == "c"

    asyncio.run(main())


def test_a_cancelled_get_takes_nothing_and_the_next_get_finds_the_item() -> None:
    async def main() -> None:
        inbox: Inbox[int] = Inbox()
        getter = asyncio.ensure_future(inbox.get())
        await asyncio.sleep(0)
        getter.cancel()
        with pytest.raises(asyncio.CancelledError):
            await getter
        inbox.put_nowait(1)
        assert await asyncio.wait_for(inbox.get(), 1) == 1

    asyncio.run(main())


def test_an_inbox_serves_one_waiter() -> None:
    async def main() -> None:
        inbox: Inbox[int] = Inbox()
        first = asyncio.ensure_future(inbox.get())
        await asyncio.sleep(0)
        with pytest.raises(RuntimeError, match="one waiter"):
            await inbox.get()
        inbox.put_nowait(7)
        assert await first == 7

    asyncio.run(main())


def test_a_wake_returns_at_once_when_set_and_waits_once_cleared() -> None:
    async def main() -> None:
        wake = Wake()
        assert not wake.is_set()
        waiter = asyncio.ensure_future(wake.wait())
        await asyncio.sleep(0)
        assert not waiter.done()
        wake.set()
        wake.clear()  # set, then cleared before the waiter ran: it was woken all the same, as by asyncio.Event
        await asyncio.wait_for(waiter, 1)
        wake.set()
        await asyncio.wait_for(wake.wait(), 1)
        wake.clear()
        again = asyncio.ensure_future(wake.wait())
        await asyncio.sleep(0.01)
        assert not again.done()
        again.cancel()

    asyncio.run(main())


def test_an_idle_inbox_and_wake_hold_far_less_than_asyncio_queue_and_event() -> None:
    async def sizes() -> tuple[int, int]:
        queue, event = asyncio.Queue(), asyncio.Event()  # type: ignore[var-annotated]
        theirs = sum(sys.getsizeof(x) for x in (queue._queue, queue._getters, queue._putters, event._waiters))  # type: ignore[attr-defined]
        ours = sys.getsizeof(Inbox()) + sys.getsizeof(Wake())
        return ours, theirs

    ours, theirs = asyncio.run(sizes())
    assert ours * 10 < theirs, (ours, theirs)
