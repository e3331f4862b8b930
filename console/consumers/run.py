"""Live pages: Channels consumers that keep an open run page (or workflow page) whole.

On connect a consumer sends every region the page shows (level-triggered: nothing is assumed about what the client
had, so a client that reconnects is whole again at once). The runtime sends `run.updated` (with the commit's time)
to the groups `run-<id>` and `workflow-<name>` after each commit; the page is then sent again the regions that
changed, as HTML elements htmx's websocket extension swaps out of band (a region the user is typing into is left
alone unless it changed). Group messages carry no state (they may be dropped): the database is always what is shown.

One `RunHub` per run and process is the only subscriber to the run's group; it hears a notice once, reads the run
once, renders the regions once per kind of viewer (what they may do, which seats they hold) and sends each open page
of the run what changed for it. 500 open pages of a run cost one subscription, one read and a render or two a commit.
"""
from __future__ import annotations

import asyncio
import logging
import threading
from collections import OrderedDict
from typing import Any

from asgiref.sync import sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from channels.layers import get_channel_layer
from django.template.loader import render_to_string

from engine.models import Run
from engine.runtime.notify import run_group, workflow_group

from console.access import can, can_read
from console.runview import run_page

__all__ = ["RunConsumer", "WorkflowConsumer", "RunHub", "run_regions"]

log = logging.getLogger("console.live")

REGIONS: tuple[str, ...] = ("_status", "_lit", "_context", "_gates", "_seats", "_now", "_output", "_turns")
REGIONS += ("_summary", "_steps")  # the history's size and newest steps (console/feeds.py)
Regions = dict[str, str]

_cache: OrderedDict[tuple[Any, ...], Regions] = OrderedDict()
_lock = threading.Lock()
CACHE_SIZE = 256


def permission_flags(user: Any) -> tuple[bool, ...]:
    """What a viewer may do on a run page, which decides what its regions show."""
    return (can(user, "answer"), can(user, "cancel"), can(user, "play"))


def render_regions(run_id: str, user: Any) -> tuple[Regions | None, str, tuple[str, ...]]:
    """Every region of the run page for this viewer, the commit time it shows, and the seats the viewer holds.
    Renders are shared: the same commit, permissions and seats are rendered once."""
    page = run_page(run_id, user)
    if page is None:
        return None, "", ()
    key = (run_id, page.run.updated_at.isoformat(), *permission_flags(user), page.held)
    with _lock:
        found = _cache.get(key)
        if found is not None:
            _cache.move_to_end(key)
            return found, key[1], page.held
    regions = {name: render_to_string(f"console/run/{name}.html", {"page": page, "run": page.run, "oob": True})
               for name in REGIONS}
    with _lock:
        _cache[key] = regions
        while len(_cache) > CACHE_SIZE:
            _cache.popitem(last=False)
    return regions, key[1], page.held


def run_regions(run_id: str, user: Any) -> str | None:
    """Every region of the run page as out-of-band HTML (an htmx form's answer brings the page up to date too)."""
    regions, _, _ = render_regions(run_id, user)
    return None if regions is None else "".join(regions.values())


def _seats_of(run_id: str) -> tuple[str, dict[str, str]] | None:
    row = Run.objects.filter(id=run_id).values_list("updated_at", "view").first()
    if row is None:
        return None
    return row[0].isoformat(), dict((row[1] or {}).get("seats", {}))


class RunHub:
    """The run's one subscription in this process, and the open pages of the run it tells."""

    _hubs: dict[tuple[asyncio.AbstractEventLoop, str], RunHub] = {}

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        self.pages: set[RunConsumer] = set()
        self.shown = ""
        self._channel = ""
        self._task: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()

    @classmethod
    def of(cls, run_id: str) -> RunHub:
        key = (asyncio.get_running_loop(), run_id)
        hub = cls._hubs.get(key)
        if hub is None:
            hub = cls._hubs[key] = cls(run_id)
        return hub

    async def join(self, page: RunConsumer) -> None:
        """Subscribe (once) before the page's first view is read, so no commit falls between the two."""
        self.pages.add(page)
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._listen(), name=f"run hub {self.run_id}")
        await self._ready.wait()

    async def leave(self, page: RunConsumer) -> None:
        self.pages.discard(page)
        if self.pages or self._task is None:
            return
        self._task.cancel()
        self._hubs.pop((asyncio.get_running_loop(), self.run_id), None)
        layer = get_channel_layer()
        if layer is not None and self._channel:
            await layer.group_discard(run_group(self.run_id), self._channel)

    async def _listen(self) -> None:
        layer = get_channel_layer()
        self._channel = await layer.new_channel()
        await layer.group_add(run_group(self.run_id), self._channel)
        self._ready.set()
        while True:
            message = await layer.receive(self._channel)
            try:
                await self._tell(str(message.get("updated") or ""))
            except Exception:  # noqa: BLE001 - one failed render must not stop the run's pages from living on
                log.exception("telling the pages of run %s failed", self.run_id)

    async def _tell(self, updated: str) -> None:
        """Send every page what changed: the run read once, each kind of viewer rendered once."""
        if updated and updated <= self.shown:
            return
        found = await sync_to_async(_seats_of)(self.run_id)
        if found is None:
            return
        self.shown, seats = found
        kinds: dict[tuple[Any, ...], list[RunConsumer]] = {}
        for page in list(self.pages):
            held = tuple(sorted(agent for agent, name in seats.items() if name == page.username))
            kinds.setdefault((page.flags, held), []).append(page)
        for pages in kinds.values():
            regions, at, _ = await sync_to_async(render_regions)(self.run_id, pages[0].user)
            if regions is not None:
                await asyncio.gather(*(page.show(regions, at) for page in pages), return_exceptions=True)


class RunConsumer(AsyncWebsocketConsumer):
    """`/ws/runs/<id>/`: the run page's live regions."""

    async def connect(self) -> None:
        self.run_id = self.scope["url_route"]["kwargs"]["run_id"]
        self.user = self.scope.get("user")
        if not can_read(self.user):
            await self.close(code=4403)
            return
        self.username = self.user.get_username() if getattr(self.user, "is_authenticated", False) else ""
        self.flags = await sync_to_async(permission_flags)(self.user)
        self.sent: Regions = {}
        self.at = ""
        self.hub = RunHub.of(self.run_id)
        await self.hub.join(self)
        await self.accept()
        regions, at, _ = await sync_to_async(render_regions)(self.run_id, self.user)
        if regions is None:
            await self.close(code=4404)
            return
        await self.show(regions, at)

    async def disconnect(self, code: int) -> None:
        if hasattr(self, "hub"):
            await self.hub.leave(self)

    async def show(self, regions: Regions, at: str) -> None:
        """Send the regions that differ from what this page was last sent (all of them the first time); a render
        of an older commit than the page shows (a slow first read overtaken by a notice) is dropped."""
        if at < self.at:
            return
        changed = [html for name, html in regions.items()
                   if self.sent.get(name) is not html and self.sent.get(name) != html]
        self.sent, self.at = dict(regions), at
        if changed:
            await self.send(text_data="".join(changed))


class WorkflowConsumer(AsyncWebsocketConsumer):
    """`/ws/workflows/<name>/`: the workflow page's live counts (runs start and end while it is open)."""

    async def connect(self) -> None:
        self.workflow = self.scope["url_route"]["kwargs"]["name"]
        if not can_read(self.scope.get("user")):
            await self.close(code=4403)
            return
        self.group = workflow_group(self.workflow)
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()
        await self._send_stats()

    async def disconnect(self, code: int) -> None:
        if hasattr(self, "group"):
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def run_updated(self, message: dict[str, Any]) -> None:
        await self._send_stats()

    async def _send_stats(self) -> None:
        html = await sync_to_async(_workflow_stats)(self.workflow)
        await self.send(text_data=html)


def live_counts(workflow: str) -> dict[str, int]:
    """A workflow's live runs and their open Gates, as the workflow page shows them."""
    views = list(Run.objects.filter(workflow=workflow, status__in=Run.LIVE).values_list("view", flat=True))
    return {"live_runs": len(views), "open_gates": sum(len((view or {}).get("gates", [])) for view in views)}


def _workflow_stats(workflow: str) -> str:
    return render_to_string("console/_workflow_stats.html", {**live_counts(workflow), "name": workflow, "oob": True})
