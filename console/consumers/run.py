"""Live run pages: `/ws/runs/<id>/?<the page's own parameters>` keeps an open run page whole.

On connect the page is sent every region it shows (level-triggered: nothing is assumed about what the client had).
After each commit the page is sent again the regions that changed, as HTML elements htmx's websocket extension
swaps out of band (a region the user is typing into is left alone unless it changed).

One `RunHub` per run and process is the only subscriber to the run's group; it hears a notice once, reads the run
once, renders the regions once per kind of viewer (what they may do, which seats they hold: console/pages/regions.py)
and sends each open page of the run what changed for it. 500 open pages of a run cost one subscription, one read and
a render or two a commit. The section "Cost and time per state" follows too, sorted as each page asked (its
parameters), rendered once per commit and sort.
"""

from __future__ import annotations

import asyncio
from typing import Any

from asgiref.sync import sync_to_async
from django.http import QueryDict

from console.consumers.base import Hub, LiveConsumer, Notice
from console.pages.regions import Regions, permission_flags, render_regions, run_costs
from engine.models import Run
from engine.runtime.notify import run_group

__all__ = ["RunConsumer", "RunHub"]


def _seats_of(run_id: str) -> tuple[str, dict[str, str]] | None:
    row = Run.objects.filter(id=run_id).values_list("updated_at", "view").first()
    if row is None:
        return None
    return row[0].isoformat(), dict((row[1] or {}).get("seats", {}))


class RunHub(Hub):
    """The run's one subscription in this process (its key is the run's id), and the open pages of the run."""

    listeners: set[RunConsumer]

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.shown = ""
        #: (commit time, the page's parameters) -> the cost section's render, done or under way
        self.costs: dict[tuple[str, str], asyncio.Future[str]] = {}

    async def costs_of(self, at: str, params: QueryDict) -> str:
        """The cost section of the commit `at` for pages with these parameters, rendered once: the pages of a
        commit ask at once, so the first one's render is shared while it runs (else each page would render it,
        one after another on the sync thread). A page that goes away leaves the render to the others."""
        key = (at, params.urlencode())
        render = self.costs.get(key)
        if render is None or (render.done() and (render.cancelled() or render.exception() is not None)):
            self.costs = {k: v for k, v in self.costs.items() if k[0] == at}
            render = self.costs[key] = asyncio.ensure_future(sync_to_async(run_costs)(self.key, params))
        return await asyncio.shield(render)

    @classmethod
    def group_of(cls, key: str) -> str:
        return run_group(key)

    async def tell(self, message: Notice) -> None:
        """Send every page what changed: the run read once, each kind of viewer rendered once."""
        updated = str(message.get("updated") or "")
        if updated and updated <= self.shown:
            return
        found = await sync_to_async(_seats_of)(self.key)
        if found is None:
            return
        self.shown, seats = found
        kinds: dict[tuple[Any, ...], list[RunConsumer]] = {}
        for page in list(self.listeners):
            held = tuple(sorted(agent for agent, name in seats.items() if name == page.username))
            kinds.setdefault((page.flags, held), []).append(page)
        for pages in kinds.values():
            regions, at, _ = await sync_to_async(render_regions)(self.key, pages[0].user)
            if regions is not None:
                await asyncio.gather(*(page.show(regions, at) for page in pages), return_exceptions=True)


class RunConsumer(LiveConsumer):
    """`/ws/runs/<id>/`: the run page's live regions."""

    hub_class = RunHub

    async def opened(self) -> None:
        self.run_id = self.scope["url_route"]["kwargs"]["run_id"]
        self.username = self.user.get_username() if getattr(self.user, "is_authenticated", False) else ""
        self.flags = await sync_to_async(permission_flags)(self.user)
        self.params = QueryDict(self.scope.get("query_string", b"").decode(errors="replace"))
        self.sent: Regions = {}
        self.at = ""

    def hub_key(self) -> str:
        return str(self.run_id)

    async def whole(self) -> str | None:
        regions, at, _ = await sync_to_async(render_regions)(self.run_id, self.user)
        if regions is None:
            return None
        changed = self._changed(regions, at)
        return changed + await self._costs(at) if changed else ""

    async def show(self, regions: Regions, at: str) -> None:
        """What the hub rendered for this kind of viewer: the regions that differ from what this page was sent,
        and the cost section after a commit."""
        changed = self._changed(regions, at)
        if changed:
            await self.send(text_data=changed + await self._costs(at))

    async def _costs(self, at: str) -> str:
        assert isinstance(self.hub, RunHub)
        return await self.hub.costs_of(at, self.params)

    def _changed(self, regions: Regions, at: str) -> str:
        """The regions that differ from what this page was last sent (all of them the first time); a render of an
        older commit than the page shows (a slow first read overtaken by a notice) is dropped."""
        if at < self.at:
            return ""
        changed = [
            html for name, html in regions.items() if self.sent.get(name) is not html and self.sent.get(name) != html
        ]
        self.sent, self.at = dict(regions), at
        return "".join(changed)
