"""Live run pages: `/ws/runs/<id>/?<the page's own parameters>` keeps an open run page whole.

On connect the page is sent every region it shows (level-triggered: nothing is assumed about what the client had).
After each commit the page is sent again the regions that changed, as HTML elements htmx's websocket extension
swaps out of band (a region the user is typing into is left alone unless it changed).

One `RunHub` per run and process is the only subscriber to the run's group; it hears a notice once and, in one call
on the sync thread (`commit_views`), reads the run once, renders the regions once per kind of viewer (what they may
do, which seats they hold: console/pages/regions.py) and the section "Cost and time per state" once per sort (the
pages' own parameters), then sends each open page of the run what changed for it: the regions and the cost section
that differ from what it was sent. 500 open pages of a run cost one subscription, one read and a render or two a
commit; ten runs moved at once cost ten calls on the sync thread, not thirty and more.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from asgiref.sync import sync_to_async
from django.http import QueryDict

from console.consumers.base import Hub, LiveConsumer, Notice
from console.pages.regions import Regions, permission_flags, render_regions, run_costs
from engine.models import Run
from engine.runtime.notify import run_group

__all__ = ["RunConsumer", "RunHub", "Update", "commit_views"]


#: A kind of viewer as the hub groups its pages before the run is read: (permission flags, username).
Viewer = tuple[tuple[bool, ...], str]


@dataclass
class Update:
    """What one commit shows every page of a run: the commit's time, the regions per kind of viewer, and the cost
    section per page parameters (their urlencoded form)."""

    at: str
    regions: dict[Viewer, Regions]
    costs: dict[str, str]


def commit_views(run_id: str, viewers: dict[Viewer, Any], params: dict[str, QueryDict]) -> Update | None:
    """Everything a commit changes on the run's open pages, in one call on the sync thread: the run read once, the
    regions rendered once per kind of viewer (what they may do, which seats they hold: `viewers` maps each to one
    user of that kind) and the cost section once per sort. One call, not one a region or a page: the hubs of ten
    runs moved at once queue behind each other on the one sync thread, and each hop back to the event loop between
    them waited for it too."""
    run = Run.objects.filter(id=run_id).first()
    if run is None:
        return None
    seats = dict((run.view or {}).get("seats", {}))
    rendered: dict[tuple[tuple[bool, ...], tuple[str, ...]], Regions] = {}
    regions: dict[Viewer, Regions] = {}
    for (flags, username), user in viewers.items():
        held = tuple(sorted(agent for agent, name in seats.items() if name == username))
        kind = rendered.get((flags, held))
        if kind is None:
            found, _, _ = render_regions(run, user)
            if found is None:
                return None
            kind = rendered[(flags, held)] = found
        regions[(flags, username)] = kind
    return Update(run.updated_at.isoformat(), regions, {key: run_costs(run, asked) for key, asked in params.items()})


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
            self._keep_costs(at)
            render = self.costs[key] = asyncio.ensure_future(sync_to_async(run_costs)(self.key, params))
        return await asyncio.shield(render)

    def _keep_costs(self, at: str) -> None:
        """Forget the cost sections of older commits than `at`."""
        self.costs = {k: v for k, v in self.costs.items() if k[0] == at}

    @classmethod
    def group_of(cls, key: str) -> str:
        return run_group(key)

    async def tell(self, message: Notice) -> None:
        """Send every page what changed: the run read once, each kind of viewer rendered once, each sort of the
        cost section rendered once, all in one call on the sync thread."""
        updated = str(message.get("updated") or "")
        if updated and updated <= self.shown:
            return
        pages = list(self.listeners)
        viewers: dict[Viewer, Any] = {}
        params: dict[str, QueryDict] = {}
        for page in pages:
            viewers.setdefault((page.flags, page.username), page.user)
            params.setdefault(page.params.urlencode(), page.params)
        update = await sync_to_async(commit_views)(self.key, viewers, params)
        if update is None:
            return
        self.shown = update.at
        self._keep_costs(update.at)
        for key, html in update.costs.items():
            done: asyncio.Future[str] = asyncio.get_running_loop().create_future()
            done.set_result(html)
            self.costs.setdefault((update.at, key), done)
        await asyncio.gather(
            *(
                page.show(update.regions[(page.flags, page.username)], update.at, update.costs[page.params.urlencode()])
                for page in pages
            ),
            return_exceptions=True,
        )


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
        if at < self.at:  # a slow first read overtaken by a notice: the page shows a newer commit already
            return ""
        assert isinstance(self.hub, RunHub)
        return self._changed(regions, at, await self.hub.costs_of(at, self.params))

    async def show(self, regions: Regions, at: str, costs: str) -> None:
        """What the hub rendered for this kind of viewer and this page's sort of the cost section: what differs
        from what this page was sent."""
        changed = self._changed(regions, at, costs)
        if changed:
            await self.send(text_data=changed)

    def _changed(self, regions: Regions, at: str, costs: str) -> str:
        """The regions and the cost section that differ from what this page was last sent (all of them the first
        time); a render of an older commit than the page shows (a slow first read overtaken by a notice) is
        dropped."""
        if at < self.at:
            return ""
        shown = {**regions, "_costs": costs}
        changed = [
            html for name, html in shown.items() if self.sent.get(name) is not html and self.sent.get(name) != html
        ]
        self.sent, self.at = shown, at
        return "".join(changed)
