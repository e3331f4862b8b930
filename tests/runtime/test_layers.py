"""The embedded default's channel layer: Channels' in-memory layer, looking for what expired at most once a
second instead of at every send and receive, and otherwise the same."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from engine.runtime import layers
from engine.runtime.layers import InMemoryLayer


def test_a_group_send_reaches_every_member_once_and_a_full_channel_misses_it() -> None:
    async def main() -> None:
        layer = InMemoryLayer(capacity=1)
        a, b, full = [await layer.new_channel() for _ in range(3)]
        for channel in (a, b, full):
            await layer.group_add("run-x", channel)
        await layer.send(full, {"type": "first"})
        await layer.group_send("run-x", {"type": "run.updated", "seq": 2})
        assert await layer.receive(a) == {"type": "run.updated", "seq": 2}
        assert await layer.receive(b) == {"type": "run.updated", "seq": 2}
        assert await layer.receive(full) == {"type": "first"}
        assert layer.channels == {}  # every queue emptied is gone, as in Channels' own

    asyncio.run(main())


def test_what_expired_is_looked_for_once_a_second_not_at_every_call(monkeypatch: pytest.MonkeyPatch) -> None:
    async def main() -> None:
        layer = InMemoryLayer()
        scans: list[int] = []
        scan = layer._clean_expired
        monkeypatch.setattr(layer, "_clean_expired", lambda: (scans.append(1), scan()))
        channels = [await layer.new_channel() for _ in range(50)]
        for channel in channels:
            await layer.group_add("run-y", channel)
        for seq in range(20):
            await layer.group_send("run-y", {"type": "run.updated", "seq": seq})
            for channel in channels:
                assert (await layer.receive(channel))["seq"] == seq
        assert len(scans) <= 2, len(scans)  # 20 sends and 1,000 receives in well under two seconds

    asyncio.run(main())


def test_an_expired_message_and_membership_still_go(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(layers, "CLEAN_EVERY", 0.0)

    async def main() -> None:
        layer: Any = InMemoryLayer(expiry=0.05, group_expiry=1)
        old, other = await layer.new_channel(), await layer.new_channel()
        await layer.group_add("run-z", old)
        await layer.send(old, {"type": "stale"})
        await asyncio.sleep(0.1)
        await layer.group_send("run-z", {"type": "fresh"})  # the stale message expires: `old` leaves the group
        assert old not in layer.groups.get("run-z", {})
        await layer.send(other, {"type": "kept"})
        assert await layer.receive(other) == {"type": "kept"}

    asyncio.run(main())


def test_tell_puts_one_notice_on_every_member_of_each_group_at_once_and_a_full_channel_misses_it() -> None:
    async def main() -> None:
        layer = InMemoryLayer(capacity=1)
        run_page, runs_page, full = [await layer.new_channel() for _ in range(3)]
        await layer.group_add("run-x", run_page)
        await layer.group_add("runs", runs_page)
        await layer.group_add("runs", full)
        await layer.send(full, {"type": "first"})
        notice = {"type": "run.updated", "run": "x", "seq": 3}
        layer.tell(("run-x", "workflow-notes", "runs"), notice)  # no await: nothing is left for a task to do
        assert layer.channels[run_page].qsize() == 1 and layer.channels[runs_page].qsize() == 1
        got = await layer.receive(run_page)
        assert got == notice and got is not notice  # each member its own copy
        assert await layer.receive(runs_page) == notice
        assert await layer.receive(full) == {"type": "first"}
        assert layer.channels == {}

    asyncio.run(main())


def test_a_notice_reaches_the_in_memory_layers_groups_without_a_task(settings: Any) -> None:
    from channels.layers import channel_layers, get_channel_layer

    from engine.runtime.notify import GATES_GROUP, notify

    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "engine.runtime.layers.InMemoryLayer"}}
    channel_layers.backends.clear()

    async def main() -> None:
        layer = get_channel_layer()
        assert isinstance(layer, InMemoryLayer)
        page, inbox = await layer.new_channel(), await layer.new_channel()
        await layer.group_add("run-r1", page)
        await layer.group_add(GATES_GROUP, inbox)
        tasks = len(asyncio.all_tasks())
        notify("r1", "notes", "waiting", 4, "2026-12-03T12:00:00+00:00", gates=True)
        assert len(asyncio.all_tasks()) == tasks
        want = {"type": "run.updated", "run": "r1", "workflow": "notes", "status": "waiting", "seq": 4}
        assert await layer.receive(page) == {**want, "updated": "2026-12-03T12:00:00+00:00"}
        assert (await layer.receive(inbox))["seq"] == 4

    try:
        asyncio.run(main())
    finally:
        channel_layers.backends.clear()
