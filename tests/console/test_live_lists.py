"""The lists that follow live: `/runs/` (its socket `/ws/runs/?<filters>`), a workflow page's "Recent runs" and a
live run's cost table, each sent anew from the database when a run moves (real host, real channel layers)."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest
from channels.testing import WebsocketCommunicator

from engine.runtime.host import Host
from tests.console.conftest import NOTES_DOOR, WORKFLOWS
from tests.console.test_live import communicator, receive_until

pytestmark = pytest.mark.django_db(transaction=True)


def costs_of(message: str) -> str:
    found = re.search(r'<section class="card costs" id="costs" hx-swap-oob="true">.*?</section>', message, re.S)
    assert found, "the message carries the cost section"
    return found.group(0)


async def shown_until(
    socket: WebsocketCommunicator, text: str, shown: str = "", timeout: float = 10
) -> tuple[str, str]:
    """Messages until one holds `text`: that message, and the cost section the page shows then (the newest one it
    was sent: a message carries it only when it changed)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        left = deadline - asyncio.get_running_loop().time()
        assert left > 0, f"no message with {text!r}"
        message = await socket.receive_from(timeout=left)
        if 'id="costs"' in message:
            shown = costs_of(message)
        if text in message:
            return message, shown


def calls_in_writing(costs: str) -> int:
    """The table's model calls (its second number) in the state `writing`."""
    found = re.search(
        r'<tr data-state="writing">.*?</th>\s*<td class="num">\d+</td><td class="num">(\d+)<', costs, re.S
    )
    assert found, "the table has a row for writing"
    return int(found.group(1))


async def received(socket: WebsocketCommunicator) -> str:
    """Everything the socket was sent and not yet read."""
    out = []
    while not await socket.receive_nothing(timeout=0.3):
        out.append(await socket.receive_from())
    return "".join(out)


def test_the_runs_list_follows_a_run_within_its_filters(observer: Any, settings: Any, channel_layer: str) -> None:
    settings.JR2_SCRIPTED = True

    async def main() -> None:
        host = Host(WORKFLOWS, owner="live-tests")
        await host.start()
        try:
            every = communicator("/ws/runs/", observer)
            done = communicator("/ws/runs/?status=done&page=1", observer)
            triage = communicator("/ws/runs/?workflow=triage", observer)
            for socket in (every, done, triage):
                assert (await socket.connect())[0]
            assert 'id="match-count" hx-swap-oob="true">0 runs<' in await every.receive_from(timeout=5)
            assert ">0 runs match<" in await done.receive_from(timeout=5)
            assert ">0 runs match<" in await triage.receive_from(timeout=5)

            run_id = await host.start_run("notes", NOTES_DOOR)
            row = re.compile(rf'<tr id="run-{run_id}">.*?<span class="badge (\w+)">', re.S)
            waiting = await receive_until(every, '<span class="badge waiting">waiting</span>')
            assert 'id="runs-list" hx-swap-oob="true"' in waiting and ">1 run<" in waiting
            assert row.search(waiting).group(1) == "waiting"  # type: ignore[union-attr]
            assert f"run-{run_id}" not in await received(done), "a waiting run is not in a list of done runs"

            await host.deliver(run_id, "gate", gate="writing.asking", event="reply", params={"text": "Ops"})
            ended = await receive_until(every, '<span class="badge done">done</span>')
            assert row.search(ended).group(1) == "done"  # type: ignore[union-attr]
            shown = await receive_until(done, f'<tr id="run-{run_id}">')
            assert ">1 run matches<" in shown
            assert f"run-{run_id}" not in await received(triage), "a notes run is not in a list of triage runs"
            for socket in (every, done, triage):
                await socket.disconnect()
        finally:
            await host.stop()

    asyncio.run(main())


def test_a_runs_socket_with_a_bad_filter_says_so(observer: Any, channel_layer: str) -> None:
    async def main() -> str:
        socket = communicator("/ws/runs/?after=yesterday&page=x", observer)
        assert (await socket.connect())[0]
        message = await socket.receive_from(timeout=5)
        await socket.disconnect()
        return message

    message = asyncio.run(main())
    assert "not searched: 1 filter to fix" in message and "Fix the search above to see runs." in message


def test_a_workflow_pages_recent_runs_follow_its_runs(observer: Any, settings: Any, channel_layer: str) -> None:
    settings.JR2_SCRIPTED = True

    async def main() -> None:
        host = Host(WORKFLOWS, owner="live-tests")
        await host.start()
        try:
            socket = communicator("/ws/workflows/notes/", observer)
            assert (await socket.connect())[0]
            first = await socket.receive_from(timeout=5)
            assert 'id="recent-runs" hx-swap-oob="true"' in first and "none yet" in first
            run_id = await host.start_run("notes", NOTES_DOOR)
            recent = re.compile(rf'id="recent-runs".*?<code>{run_id}</code></a> <span class="badge (\w+)">', re.S)
            waiting = await receive_until(socket, f"<code>{run_id}</code>")
            assert recent.search(waiting).group(1) in ("running", "waiting")  # type: ignore[union-attr]
            await host.deliver(run_id, "gate", gate="writing.asking", event="reply", params={"text": "Ops"})
            done = await receive_until(socket, "0 live runs")
            assert recent.search(done).group(1) == "done"  # type: ignore[union-attr]
            await socket.disconnect()
        finally:
            await host.stop()

    asyncio.run(main())


def test_a_live_runs_cost_table_follows_it_sorted_as_the_page_asked(
    observer: Any, settings: Any, channel_layer: str
) -> None:
    settings.JR2_SCRIPTED = True

    async def main() -> tuple[str, str]:
        host = Host(WORKFLOWS, owner="live-tests")
        await host.start()
        try:
            run_id = await host.start_run("notes", NOTES_DOOR)
            socket = communicator(f"/ws/runs/{run_id}/?sort=-calls", observer)
            assert (await socket.connect())[0]
            _, before = await shown_until(socket, 'id="run-status-badge">waiting<')
            await host.deliver(run_id, "gate", gate="writing.asking", event="reply", params={"text": "Ops"})
            _, after = await shown_until(socket, 'id="run-status-badge">done<', before)
            await socket.disconnect()
            return before, after
        finally:
            await host.stop()

    before, after = asyncio.run(main())
    for costs in (before, after):
        assert 'aria-sort="descending"><a href="/runs/' in costs and 'data-sort="calls"' in costs
        assert "sort=calls#costs" in costs, "its links go to the run page, the other way round"
    assert calls_in_writing(before) == 1 and calls_in_writing(after) == 2, "the writer's second model call is counted"
