"""The Gate inbox live: a Gate that opens in any run appears on every open inbox, one answered elsewhere is replaced
by who answered it, and every page's header count of open Gates follows.

The runtime tells the group `gates` when a commit opened or closed a Gate (engine/runtime/notify.py). One
`GatesHub` per process is the only subscriber: it hears a notice once, reads the open Gates once, and tells each
listening socket what is open now and what opened since. Notices carry no state and may be dropped: the database
is what is shown, and a socket that connects is sent what differs from the page it came with.
"""
from __future__ import annotations

import asyncio
import json
import logging
from typing import Protocol
from urllib.parse import parse_qs

from asgiref.sync import sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from channels.layers import get_channel_layer
from django.http import QueryDict
from django.template.loader import render_to_string

from engine.models import GateRecord, Run
from engine.runtime.notify import GATES_GROUP

from console.access import can, can_read
from console.gates import closed, item_for

__all__ = ["GatesHub", "GateCountConsumer", "InboxConsumer"]

log = logging.getLogger("console.live")

#: An open Gate as the hub knows it: record id -> (workflow, Gate id, run id).
Open = dict[int, tuple[str, str, str]]


def read_open() -> Open:
    rows = GateRecord.objects.filter(closed_at=None, run__status__in=Run.LIVE).values_list(
        "pk", "workflow", "gate", "run_id")
    return {pk: (workflow, gate, run) for pk, workflow, gate, run in rows}


class Listener(Protocol):
    async def gates_changed(self, open_now: Open, opened: list[int]) -> None: ...


class GatesHub:
    """This process's one subscription to `gates`, and the sockets it tells."""

    _hubs: dict[asyncio.AbstractEventLoop, GatesHub] = {}

    def __init__(self) -> None:
        self.listeners: set[Listener] = set()
        self.open: Open = {}
        self._channel = ""
        self._task: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()

    @classmethod
    def of(cls) -> GatesHub:
        loop = asyncio.get_running_loop()
        hub = cls._hubs.get(loop)
        if hub is None:
            hub = cls._hubs[loop] = cls()
        return hub

    async def join(self, listener: Listener) -> Open:
        """Subscribe (once) before reading, so no commit falls between the two; returns what is open now."""
        self.listeners.add(listener)
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._listen(), name="gates hub")
        await self._ready.wait()
        return self.open

    async def leave(self, listener: Listener) -> None:
        self.listeners.discard(listener)
        if self.listeners or self._task is None:
            return
        self._task.cancel()
        self._task = None
        self._ready = asyncio.Event()
        self._hubs.pop(asyncio.get_running_loop(), None)
        layer = get_channel_layer()
        if layer is not None and self._channel:
            await layer.group_discard(GATES_GROUP, self._channel)

    async def _listen(self) -> None:
        layer = get_channel_layer()
        self._channel = await layer.new_channel()
        await layer.group_add(GATES_GROUP, self._channel)
        self.open = await sync_to_async(read_open)()
        self._ready.set()
        while True:
            await layer.receive(self._channel)
            try:
                await self._tell()
            except Exception:  # noqa: BLE001 - one failed read must not stop the inbox pages from living on
                log.exception("telling the inbox pages failed")

    async def _tell(self) -> None:
        now = await sync_to_async(read_open)()
        opened = sorted(set(now) - set(self.open))
        self.open = now
        await asyncio.gather(*(listener.gates_changed(now, opened) for listener in list(self.listeners)),
                             return_exceptions=True)


class GateCountConsumer(AsyncWebsocketConsumer):
    """`/ws/gates/count/`: the header's count of open Gates, and the Gates that opened (for a notification)."""

    async def connect(self) -> None:
        if not can_read(self.scope.get("user")):
            await self.close(code=4403)
            return
        self.hub = GatesHub.of()
        open_now = await self.hub.join(self)
        await self.accept()
        await self.gates_changed(open_now, [])

    async def disconnect(self, code: int) -> None:
        if hasattr(self, "hub"):
            await self.hub.leave(self)

    async def gates_changed(self, open_now: Open, opened: list[int]) -> None:
        await self.send(text_data=json.dumps({"open": len(open_now), "opened": [
            {"workflow": open_now[pk][0], "gate": open_now[pk][1], "run": open_now[pk][2]} for pk in opened]}))


class InboxConsumer(AsyncWebsocketConsumer):
    """`/ws/gates/?workflow=&gate=&order=&shown=<ids>`: the inbox page's items. A Gate that opens and matches the
    page's filters is added (first or last, by the page's order); one that closes is replaced by how it closed.
    `shown` is what the page was rendered with, so connecting sends only what changed since."""

    async def connect(self) -> None:
        self.user = self.scope.get("user")
        if not can_read(self.user):
            await self.close(code=4403)
            return
        params = parse_qs(self.scope.get("query_string", b"").decode(), keep_blank_values=True)
        self.workflow = (params.get("workflow") or [""])[0]
        self.gate = (params.get("gate") or [""])[0]
        self.order = (params.get("order") or ["oldest"])[0]
        query = QueryDict(mutable=True)
        query.update({k: v for k, v in (("workflow", self.workflow), ("gate", self.gate), ("order", self.order))
                      if v and not (k == "order" and v == "oldest")})
        self.query = query.urlencode()
        shown = (params.get("shown") or [""])[0]
        self.shown = {int(i) for i in shown.split(",") if i.isdigit()}
        self.answering = await sync_to_async(can)(self.user, "answer")
        self.hub = GatesHub.of()
        open_now = await self.hub.join(self)
        await self.accept()
        await self.gates_changed(open_now, [])

    async def disconnect(self, code: int) -> None:
        if hasattr(self, "hub"):
            await self.hub.leave(self)

    def _matches(self, gate: tuple[str, str, str]) -> bool:
        return (not self.workflow or gate[0] == self.workflow) and (not self.gate or gate[1] == self.gate)

    async def gates_changed(self, open_now: Open, opened: list[int]) -> None:
        mine = {pk for pk, gate in open_now.items() if self._matches(gate)}
        added, gone = sorted(mine - self.shown), sorted(self.shown - mine)
        if self.order == "newest":
            added.reverse()
        self.shown = mine
        html = await sync_to_async(self._render)(added, gone, len(mine))
        await self.send(text_data=html)

    def _render(self, added: list[int], gone: list[int], count: int) -> str:
        records = GateRecord.objects.in_bulk(added + gone)
        parts = [f'<span id="inbox-count" hx-swap-oob="true">{count}</span>']
        where = "afterbegin" if self.order == "newest" else "beforeend"
        for pk in added:
            if pk in records:
                item = item_for(records[pk], self.answering)
                parts.append(f'<div hx-swap-oob="{where}:#inbox-items">' + render_to_string(
                    "console/gates/_item.html", {"item": item, "query": self.query, "live": True}) + "</div>")
        for pk in gone:
            if pk in records:
                outcome = closed(records[pk])
                parts.append(render_to_string("console/gates/_closed.html",
                                              {"record": outcome.record, "detail": outcome.detail, "oob": True}))
        return "".join(parts)

