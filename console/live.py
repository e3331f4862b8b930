"""Live pages: Channels consumers that keep an open run page (or workflow page) whole.

On connect a consumer sends every region the page shows (level-triggered: nothing is assumed about what the client
had, so a client that reconnects is whole again at once). The runtime sends `run.updated` to the groups `run-<id>`
and `workflow-<name>` after each journal commit; the consumer then reads the committed run and sends the regions
again, as HTML elements htmx's websocket extension swaps out of band. Group messages carry no state (they may be
dropped): the database is always what is shown.

The regions of one run after one commit are the same for every viewer with the same permissions (and the same
seats held), so they are rendered once per (run, commit, permissions, seats held) and shared by every consumer
(500 open pages cost one render a commit). A notice of a commit that a newer shared render already shows is
answered with that render: the run moved on before the first page read it, and reading the database again would
only show the same newer commit once more.
"""
from __future__ import annotations

import asyncio
import threading
from collections import OrderedDict
from datetime import datetime
from typing import Any

from asgiref.sync import sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.template.loader import render_to_string

from engine.models import Run
from engine.runtime.notify import run_group, workflow_group

from .access import can, can_read
from .runview import run_page

__all__ = ["RunConsumer", "WorkflowConsumer", "run_regions"]

REGIONS = ("_status", "_lit", "_context", "_gates", "_seats", "_now", "_output", "_turns")
_cache: OrderedDict[tuple[Any, ...], str] = OrderedDict()
#: (run, permissions, seats held) -> the commit time of the newest render in `_cache`, as its key and as a time.
_newest: dict[tuple[Any, ...], tuple[str, datetime]] = {}
_lock = threading.Lock()
CACHE_SIZE = 256
#: (event loop, run, permissions, seats held) -> done when the render a page is making for them is stored.
_rendering: dict[tuple[Any, ...], asyncio.Future[None]] = {}


def run_regions(run_id: str, user: Any, updated: str | None = None) -> str | None:
    return run_regions_and_seats(run_id, user, updated, ())[0]


def permission_flags(user: Any) -> tuple[bool, ...]:
    """What a viewer may do on a run page, which decides what its regions show."""
    return (can(user, "answer"), can(user, "cancel"), can(user, "play"))


def cached_regions(run_id: str, flags: tuple[bool, ...], updated: str, held: tuple[str, ...]) -> str | None:
    """The shared render of the commit at `updated` (or of a newer one) for these permissions and seats, if there is
    one. Memory only: no database, so the event loop may call it."""
    with _lock:
        key = (run_id, updated, *flags, held)
        if key not in _cache:
            newest = _newest.get((run_id, *flags, held))
            if newest is not None and newest[1] >= datetime.fromisoformat(updated):
                key = (run_id, newest[0], *flags, held)
        if key in _cache:
            _cache.move_to_end(key)
            return _cache[key]
    return None


def run_regions_and_seats(run_id: str, user: Any, updated: str | None,
                          held: tuple[str, ...]) -> tuple[str | None, tuple[str, ...]]:
    """Every region of the run page as out-of-band HTML, for this user's permissions; None for no such run.
    `updated` is the commit time a `run.updated` message names: the regions of that commit are shared by every
    viewer with the same permissions, and so is a newer commit's that is already rendered. What is rendered is stored
    under the time the Run row itself says, so a view is never filed under a commit it does not show."""
    flags = permission_flags(user)
    if updated:
        shared = cached_regions(run_id, flags, updated, held)
        if shared is not None:
            return shared, held
    page = run_page(run_id, user)
    if page is None:
        return None, ()
    held = page.held
    html = "".join(render_to_string(f"console/run/{name}.html", {"page": page, "run": page.run, "oob": True})
                   for name in REGIONS)
    at = page.run.updated_at
    with _lock:
        _cache[(run_id, at.isoformat(), *flags, held)] = html
        newest = _newest.get((run_id, *flags, held))
        if newest is None or at > newest[1]:
            _newest[(run_id, *flags, held)] = (at.isoformat(), at)
        while len(_cache) > CACHE_SIZE:
            (old_run, old_at, *old_rest), _ = _cache.popitem(last=False)
            if _newest.get((old_run, *old_rest), ("", None))[0] == old_at:
                del _newest[(old_run, *old_rest)]
    return html, held


def _view(run_id: str, user: Any, updated: str | None,
          held: tuple[str, ...]) -> tuple[str | None, tuple[str, ...], tuple[bool, ...]]:
    """The consumer's render, and the viewer's permission flags for its later cache lookups (Django's permission
    checks cache on the user object, which the consumer keeps, so they stay the same)."""
    return (*run_regions_and_seats(run_id, user, updated, held), permission_flags(user))


class RunConsumer(AsyncWebsocketConsumer):
    """`/ws/runs/<id>/`: the run page's live regions."""

    async def connect(self) -> None:
        self.run_id = self.scope["url_route"]["kwargs"]["run_id"]
        self.user = self.scope.get("user")
        if not can_read(self.user):
            await self.close(code=4403)
            return
        self.group = run_group(self.run_id)
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()
        await self._send_view(None)

    async def disconnect(self, code: int) -> None:
        if hasattr(self, "group"):
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def dispatch(self, message: dict[str, Any]) -> None:
        """A notice of a commit whose regions are already rendered is answered here, on the event loop, from the
        shared render: no database and no thread. When another page with the same permissions and seats is reading
        and rendering the run right now, this one waits for that render and takes it if it shows this commit (or a
        newer one). Everything else goes the usual way (Channels closes stale database connections on the sync
        thread, then the handler reads and renders there): that is one thread for every page, so without this the
        500 pages told of one commit would queue there one after another."""
        if message.get("type") != "run.updated" or not message.get("updated") or not hasattr(self, "flags"):
            await super().dispatch(message)
            return
        held = getattr(self, "held", ())
        shared = cached_regions(self.run_id, self.flags, message["updated"], held)
        key = (asyncio.get_running_loop(), self.run_id, *self.flags, held)
        if shared is None and key in _rendering:
            await asyncio.shield(_rendering[key])
            shared = cached_regions(self.run_id, self.flags, message["updated"], held)
        if shared is not None:
            await self.send(text_data=shared)
            return
        mine = None
        if key not in _rendering:
            mine = _rendering[key] = asyncio.get_running_loop().create_future()
        try:
            await super().dispatch(message)
        finally:
            if mine is not None:
                del _rendering[key]
                mine.set_result(None)

    async def run_updated(self, message: dict[str, Any]) -> None:
        await self._send_view(message.get("updated") or None)

    async def _send_view(self, updated: str | None) -> None:
        html, self.held, self.flags = await sync_to_async(_view)(self.run_id, self.user, updated,
                                                                 getattr(self, "held", ()))
        if html is None:
            await self.close(code=4404)
            return
        await self.send(text_data=html)


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


def _workflow_stats(workflow: str) -> str:
    live = Run.objects.filter(workflow=workflow, status__in=Run.LIVE)
    gates = sum(len((view or {}).get("gates", [])) for view in live.values_list("view", flat=True))
    return render_to_string("console/_workflow_stats.html", {
        "live_runs": live.count(), "open_gates": gates, "name": workflow, "oob": True})
