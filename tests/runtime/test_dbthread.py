"""The host's database thread (engine/runtime/dbthread.py): calls run one after another in the order they were made,
each caller gets its own result, and a call made while the thread is busy, or after it has gone idle, is served
(it is told of a new call only while it waits for one)."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from engine.runtime.dbthread import DbThread


def test_calls_made_while_the_thread_is_busy_and_after_it_went_idle_are_all_served_in_order() -> None:
    done: list[int] = []
    release = threading.Event()

    def slow(i: int) -> int:
        release.wait(5)
        done.append(i)
        return i * 10

    def quick(i: int) -> int:
        done.append(i)
        return i * 10

    async def main() -> None:
        thread = DbThread(name="jr2-db-test")
        try:
            first = thread.call(slow, (0,))
            await asyncio.sleep(0.05)  # the thread is in `slow`: the calls below queue behind it, untold
            busy = [thread.call(quick, (i,)) for i in range(1, 20)]
            release.set()
            assert await asyncio.wait_for(first, 5) == 0
            assert await asyncio.wait_for(asyncio.gather(*busy), 5) == [i * 10 for i in range(1, 20)]
            for i in range(20, 25):  # each after the thread has gone idle again: it must be woken
                await asyncio.sleep(0.02)
                assert await asyncio.wait_for(thread.call(quick, (i,)), 5) == i * 10
        finally:
            thread.shutdown()
        assert done == list(range(25))

    asyncio.run(main())


def test_a_failing_call_fails_only_its_caller() -> None:
    def boom() -> None:
        raise ValueError("no such run")

    async def main() -> None:
        thread = DbThread(name="jr2-db-test")
        try:
            bad, good = thread.call(boom, ()), thread.call(time.monotonic, ())
            with pytest.raises(ValueError, match="no such run"):
                await asyncio.wait_for(bad, 5)
            assert await asyncio.wait_for(good, 5) > 0
        finally:
            thread.shutdown()

    asyncio.run(main())
