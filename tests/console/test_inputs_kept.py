"""The person who answers sees what became of the answer, live: sent through the Console's form while no worker
holds the run, it is accepted and shown pending on the run page (to every open page of the run, over its
websocket, and on the Gate and its inbox card), then delivered once a worker takes the run. A web host and worker
hosts in one process, each with its own database thread, as separate processes would be."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from django.test import AsyncClient
from django.urls import reverse

from console.pages.gates import inbox_items, open_gates
from engine.models import Run, RunInput
from engine.runtime.host import Host
from engine.runtime.providers import aclose_all
from tests.console.conftest import NOTES_DOOR, WORKFLOWS
from tests.console.test_live import communicator, receive_until
from tests.runtime.hosting import status, until

pytestmark = pytest.mark.django_db(transaction=True)

GATE = "writing.asking"


async def die(host: Host) -> None:
    """What SIGKILL leaves: the host stops at once, its leases stay in the rows."""
    for task in host._tasks:
        task.cancel()
    await asyncio.gather(*(d.stop() for d in host.drivers.values()), *host._tasks, return_exceptions=True)
    host.drivers.clear()
    host.parking.runs.clear()
    host._executor.shutdown(wait=True)


def test_an_answer_sent_while_no_worker_holds_the_run_shows_pending_then_delivered_live(
    answerer: Any, settings: Any
) -> None:
    settings.JR2_SCRIPTED = True
    settings.JR2_RELAY_WAIT = 0.3
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

    async def main() -> None:
        worker = Host(WORKFLOWS, owner="worker-1", role="worker", scan_seconds=0.05)
        web = Host(WORKFLOWS, owner="web-1", role="web")
        await worker.start()
        await web.start()  # the Console's forms reach this process's host: the web one
        later = Host(WORKFLOWS, owner="worker-2", role="worker", scan_seconds=0.05)
        try:
            run_id = await web.start_run("notes", NOTES_DOOR)
            await until(web, status(run_id, "waiting"))
            await die(worker)
            socket = communicator(f"/ws/runs/{run_id}/", answerer)
            assert (await socket.connect())[0]
            await receive_until(socket, 'id="run-inputs"')

            client = AsyncClient()
            await client.aforce_login(answerer)
            sent = await client.post(
                reverse("console:answer", args=[run_id, GATE]),
                {"_event": "reply", "text": "Ops"},
                headers={"HX-Request": "true"},
            )
            assert sent.status_code == 200, sent.content[:500]
            page = sent.content.decode()
            assert "The answer reply from ann is kept and waits to be delivered" in page
            assert "ann answered writing.asking with reply:" in page and '<strong class="input-status">pending' in page
            shown = await receive_until(socket, '<strong class="input-status">pending')
            assert 'id="run-inputs"' in shown
            [item] = await asyncio.to_thread(lambda: inbox_items(list(open_gates().filter(run_id=run_id)), True))
            assert [(w.sent_by, w.event, w.status) for w in item.waiting] == [("ann", "reply", "pending")]

            await web.db(lambda: Run.objects.filter(id=run_id).update(lease_owner=""))
            await later.start()
            delivered = await receive_until(socket, '<strong class="input-status">delivered')
            assert "ann answered writing.asking with reply:" in delivered
            assert await web.db(lambda: list(RunInput.objects.values_list("status", flat=True))) == ["delivered"]
            await until(web, status(run_id, "done"))
            await socket.disconnect()
        finally:
            for host in (later, web):
                if host.ready.is_set():
                    await host.stop()
            await aclose_all()

    asyncio.run(main())


def test_the_admin_lists_inputs_read_only_with_their_outcome(client: Any, django_user_model: Any) -> None:
    run = Run.objects.create(workflow="notes", status="waiting")
    RunInput.objects.create(run=run, kind="gate", args="{}", status="refused", reason="the Gate closed", sent_by="ann")
    client.force_login(django_user_model.objects.create_superuser("root", "root@example.org", "pw"))
    listed = client.get("/admin/engine/runinput/")
    assert listed.status_code == 200
    assert "ann" in listed.content.decode() and "refused" in listed.content.decode()
    assert client.get("/admin/engine/runinput/add/").status_code == 403
