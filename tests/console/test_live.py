"""The live pages' websockets: the whole view on connect, fragments after each commit, permissions checked."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import AnonymousUser
from django.db.backends.utils import CursorWrapper

from console.consumers.run import RunHub
from console.routing import websocket_urlpatterns
from engine.models import Run
from engine.runtime.host import Host
from engine.web.middleware import refuse_nul_websockets
from tests.console.conftest import NOTES_DOOR, WORKFLOWS

pytestmark = pytest.mark.django_db(transaction=True)

APP = URLRouter(websocket_urlpatterns)


def communicator(path: str, user: Any) -> WebsocketCommunicator:
    socket = WebsocketCommunicator(APP, path)
    socket.scope["user"] = user
    return socket


async def receive_until(socket: WebsocketCommunicator, text: str, timeout: float = 10) -> str:
    """Messages until one holds `text` (the page gets every region after each commit)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        left = deadline - asyncio.get_running_loop().time()
        assert left > 0, f"no message with {text!r}"
        message = await socket.receive_from(timeout=left)
        if text in message:
            return message


def test_a_run_page_socket_sends_the_whole_view_then_fragments_as_the_run_moves(
    answerer: Any, settings: Any, channel_layer: str
) -> None:
    settings.JR2_SCRIPTED = True

    async def main() -> None:
        host = Host(WORKFLOWS, owner="live-tests")
        await host.start()
        try:
            run_id = await host.start_run("notes", NOTES_DOOR)
            socket = communicator(f"/ws/runs/{run_id}/", answerer)
            connected, _ = await socket.connect()
            assert connected
            first = await receive_until(socket, 'id="run-gates"')
            for region in (
                "run-status",
                "run-lit",
                "run-gates",
                "run-inputs",
                "run-seats",
                "run-now",
                "run-output",
                "run-turns-head",
                "run-context",
                "run-summary",
                "run-steps-head",
                "costs",
            ):
                assert f'id="{region}"' in first
            assert first.count('hx-swap-oob="true"') == 10
            if 'id="run-status-badge">waiting<' not in first:
                await receive_until(socket, 'id="run-status-badge">waiting<')
            await host.deliver(run_id, "gate", gate="writing.asking", event="reply", params={"text": "Ops"})
            done = await receive_until(socket, 'id="run-status-badge">done<')
            assert 'data-active="published"' in done and "Ops" in done
            await socket.disconnect()

            again = communicator(f"/ws/runs/{run_id}/", answerer)
            assert (await again.connect())[0]
            whole = await again.receive_from(timeout=5)
            assert 'id="run-status-badge">done<' in whole and 'id="run-turns-head"' in whole, (
                "a reconnected page is whole at once"
            )
            await again.disconnect()
        finally:
            await host.stop()

    asyncio.run(main())


def test_a_run_socket_refuses_an_anonymous_visitor_unless_reads_are_open(settings: Any, runs: dict[str, str]) -> None:
    async def main() -> tuple[Any, Any]:
        closed = communicator(f"/ws/runs/{runs['done']}/", AnonymousUser())
        refused = await closed.connect()
        settings.JR2_CONSOLE_OPEN_READS = True
        opened = communicator(f"/ws/runs/{runs['done']}/", AnonymousUser())
        accepted = await opened.connect()
        await opened.disconnect()
        return refused, accepted

    refused, accepted = asyncio.run(main())
    assert refused[0] is False and accepted[0] is True


@pytest.mark.parametrize(
    "path", ["/ws/runs/%00/", "/ws/runs/ab%00/timeline/", "/ws/workflows/no%00tes/", "/ws/gates/?q=%00"]
)
def test_a_socket_whose_address_holds_nul_is_closed_before_anything_is_looked_up(
    path: str, observer: Any, transactional_db: Any
) -> None:
    async def main() -> tuple[Any, ...]:
        socket = WebsocketCommunicator(refuse_nul_websockets(APP), path)
        socket.scope["user"] = observer
        return await socket.connect()

    assert asyncio.run(main()) == (False, 4404)


def test_the_gate_form_in_a_fragment_is_only_for_those_who_may_answer(
    observer: Any, answerer: Any, runs: dict[str, str]
) -> None:
    async def whole(user: Any) -> str:
        socket = communicator(f"/ws/runs/{runs['waiting']}/", user)
        await socket.connect()
        message = await socket.receive_from(timeout=5)
        await socket.disconnect()
        return message

    assert 'name="text"' in asyncio.run(whole(answerer))
    observed = asyncio.run(whole(observer))
    assert 'name="text"' not in observed and "may read this Gate but not answer it" in observed


def test_a_workflow_page_socket_counts_live_runs(observer: Any, settings: Any, channel_layer: str) -> None:
    settings.JR2_SCRIPTED = True

    async def main() -> None:
        host = Host(WORKFLOWS, owner="live-tests")
        await host.start()
        try:
            socket = communicator("/ws/workflows/notes/", observer)
            assert (await socket.connect())[0]
            assert "0 live runs" in await socket.receive_from(timeout=5)
            await host.start_run("notes", NOTES_DOOR)
            assert "1 live run," in await receive_until(socket, "1 live run,")
            await socket.disconnect()
        finally:
            await host.stop()

    asyncio.run(main())
    assert Run.objects.count() == 1


async def waiting_notes_run(host: Host) -> str:
    """A notes run started on `host`, once it waits at its Gate."""
    run_id = await host.start_run("notes", NOTES_DOOR)
    for _ in range(300):
        if await host.db(lambda: Run.objects.filter(id=run_id, status="waiting").exists()):
            break
        await asyncio.sleep(0.02)
    return run_id


def test_a_page_is_sent_only_the_regions_that_changed(answerer: Any, settings: Any) -> None:
    """A region the user may be typing into (a Gate form) is not swapped again when only another region changed."""
    settings.JR2_SCRIPTED = True

    async def main() -> None:
        host = Host(WORKFLOWS, owner="live-tests")
        await host.start()
        try:
            run_id = await waiting_notes_run(host)
            socket = communicator(f"/ws/runs/{run_id}/", answerer)
            assert (await socket.connect())[0]
            await socket.receive_from(timeout=5)
            await host.take_seat(run_id, "writer", (answerer.pk, "ann"))
            moved = await socket.receive_from(timeout=5)
            assert 'id="run-seats"' in moved and "Your Turn as writer" in moved
            assert 'id="run-gates"' not in moved and 'id="run-output"' not in moved
            assert 'id="costs"' not in moved, "taking a seat spends nothing: the cost section is not sent again"
            await socket.disconnect()
        finally:
            await host.stop()

    asyncio.run(main())


def test_the_pages_of_a_commit_share_one_render_of_the_cost_section(runs: dict[str, str]) -> None:
    """The pages of a run ask for the cost section at once after a commit: one render serves them all (each page
    rendering its own, one after another on the sync thread, made ten Gates at once take seconds)."""
    from django.http import QueryDict

    from console.consumers.run import RunHub

    async def main() -> list[str]:
        hub = RunHub(runs["done"])
        return await asyncio.gather(*(hub.costs_of("the commit", QueryDict("")) for _ in range(5)))

    sections = asyncio.run(main())
    assert 'id="costs"' in sections[0]
    assert all(section is sections[0] for section in sections)


def test_a_commit_reads_the_run_once_for_all_its_pages_regions_and_cost_section(
    answerer: Any, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After each commit the run's hub reads the Run row once, on the sync thread, for the regions of every kind of
    viewer and the cost section of every sort (it read it three times: the seats, the page, the costs; ten runs
    moved at once queue their reads on that one thread)."""
    settings.JR2_SCRIPTED = True
    tells: list[str] = []
    reads: list[str] = []
    tell, execute = RunHub.tell, CursorWrapper._execute
    counting = threading.Event()

    async def counted(hub: RunHub, message: Any) -> None:
        tells.append(str(message.get("updated")))
        await tell(hub, message)

    def read(self: CursorWrapper, sql: str, *args: Any) -> Any:
        # the pages' reads, not the host's (its database thread is named jr2-db)
        if counting.is_set() and not threading.current_thread().name.startswith("jr2-db"):
            if sql.startswith("SELECT") and 'FROM "engine_run" ' in sql:
                reads.append(sql)
        return execute(self, sql, *args)

    monkeypatch.setattr(RunHub, "tell", counted)
    monkeypatch.setattr(CursorWrapper, "_execute", read)

    async def main() -> None:
        host = Host(WORKFLOWS, owner="live-tests")
        await host.start()
        try:
            run_id = await waiting_notes_run(host)
            pages = [communicator(f"/ws/runs/{run_id}/" + ("?sort=turns" if i % 2 else ""), answerer) for i in range(4)]
            for page in pages:
                assert (await page.connect())[0]
                await receive_until(page, 'id="run-gates"')
            counting.set()
            await host.deliver(run_id, "gate", gate="writing.asking", event="reply", params={"text": "Ops"})
            for page in pages:
                await receive_until(page, 'id="run-status-badge">done<')
            counting.clear()
            for page in pages:
                await page.disconnect()
        finally:
            await host.stop()

    asyncio.run(main())
    assert tells and 1 <= len(reads) <= len(tells), (len(reads), len(tells))


def test_on_redis_a_commit_is_told_through_pub_sub_to_a_listener_sure_of_its_subscription(
    settings: Any, redis_url: str
) -> None:
    """With Redis the notices have their own layer, pub/sub (one PUBLISH a group, pushed to the web processes at
    once); a listener knows its subscription holds once it heard on its group (`heard_on`), before it reads."""
    from channels.layers import channel_layers, get_channel_layer

    from engine.runtime.notify import NOTICES, PROBE, heard_on, notice_layer

    settings.JR2_SCRIPTED = True
    settings.CHANNEL_LAYERS = {
        "default": {"BACKEND": "channels_redis.core.RedisChannelLayer", "CONFIG": {"hosts": [redis_url]}},
        NOTICES: {"BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer", "CONFIG": {"hosts": [redis_url]}},
    }
    channel_layers.backends.clear()

    async def main() -> tuple[str, list[dict[str, Any]]]:
        layer = notice_layer()
        assert layer is get_channel_layer(NOTICES) and layer is not get_channel_layer()
        channel = await layer.new_channel()
        await layer.group_add("workflow-notes", channel)
        await asyncio.wait_for(heard_on(layer, "workflow-notes", channel), 10)
        host = Host(WORKFLOWS, owner="live-tests")
        await host.start()
        heard: list[dict[str, Any]] = []
        try:
            run_id = await host.start_run("notes", NOTES_DOOR)
            while not heard or heard[-1].get("status") != "waiting":
                message = await asyncio.wait_for(layer.receive(channel), 10)
                if message["type"] != PROBE:
                    heard.append(message)
        finally:
            await host.stop()
            await layer.flush()
        return run_id, heard

    try:
        run_id, heard = asyncio.run(main())
    finally:
        channel_layers.backends.clear()
    assert {(m["type"], m["run"], m["workflow"]) for m in heard} == {("run.updated", run_id, "notes")}
    assert heard[-1]["seq"] == Run.objects.get(id=run_id).seq
