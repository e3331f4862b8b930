"""The Gate inbox live: a Gate that opens in any run appears on every open inbox, one answered elsewhere is replaced
by who answered it, and every page's header count of open Gates follows.

The runtime tells the group `gates` when a commit opened or closed a Gate (engine/runtime/notify.py). One
`GatesHub` per process is the only subscriber: it hears a notice once, reads the open Gates once, and tells each
listening socket what is open now and what opened since. Notices carry no state and may be dropped: the database
is what is shown, and a socket that connects is sent what differs from the page it came with.
"""

from __future__ import annotations

import datetime as dt
import json
from urllib.parse import parse_qs

from asgiref.sync import sync_to_async
from django.template.loader import render_to_string
from django.utils import timezone

from console.access import can
from console.consumers.base import Hub, LiveConsumer, Notice
from console.pages.assigned import Answerer
from console.pages.gates import closed, inbox_items, inbox_query
from engine.models import GateRecord, Run
from engine.runtime.notify import GATES_GROUP

__all__ = ["GatesHub", "GateCountConsumer", "InboxConsumer"]

#: An open Gate as the hub knows it: record id -> (workflow, Gate id, run id, its assign or None, who claimed it,
#: until when).
Open = dict[int, tuple[str, str, str, tuple[str, ...] | None, str, dt.datetime | None]]


def read_open() -> Open:
    rows = GateRecord.objects.filter(closed_at=None, run__status__in=Run.LIVE, run__imported_from="").values_list(
        "pk", "workflow", "gate", "run_id", "assigned", "assign", "claimed_by", "claimed_until"
    )
    return {
        pk: (workflow, gate, run, tuple(assign or ()) if assigned else None, claimed_by, until)
        for pk, workflow, gate, run, assigned, assign, claimed_by, until in rows
    }


def whose(
    gate: tuple[str, str, str, tuple[str, ...] | None, str, dt.datetime | None], who: Answerer, which: str
) -> bool:
    """The inbox's `who` filter (console/pages/assigned.py `mine`) on a Gate the hub holds."""
    assign = gate[3]
    if which == "me":
        return assign is not None and f"user:{who.username}" in assign
    if which == "groups":
        return assign is not None and any(f"group:{g}" in assign for g in who.groups)
    if which == "unassigned":
        return assign is None
    if which == "claimed":
        return gate[4] == who.username and gate[5] is not None and gate[5] > timezone.now()
    return True


class GatesHub(Hub):
    """This process's one subscription to `gates`: what is open now (`open`) and what the last notice opened
    (`opened`), read once for every listening socket."""

    def __init__(self, key: str = "") -> None:
        super().__init__(key)
        self.open: Open = {}
        self.opened: list[int] = []

    @classmethod
    def group_of(cls, key: str) -> str:
        return GATES_GROUP

    async def started(self) -> None:
        self.open, self.opened = await sync_to_async(read_open)(), []

    async def tell(self, message: Notice) -> None:
        now = await sync_to_async(read_open)()
        self.opened = sorted(set(now) - set(self.open))
        self.open = now
        await super().tell(message)


class GateCountConsumer(LiveConsumer):
    """`/ws/gates/count/`: the header's count of open Gates, and the Gates that opened (for a notification)."""

    hub_class = GatesHub
    hub: GatesHub

    async def opened(self) -> None:
        self.answerer = await sync_to_async(Answerer.of)(self.user)

    async def whole(self) -> str | None:
        return self._count([])

    async def fresh(self, message: Notice) -> str:
        return self._count(self.hub.opened)

    def _count(self, opened: list[int]) -> str:
        """The Gates this person may answer (console/pages/assigned.py), and those of them that opened."""
        open_now = {pk: g for pk, g in self.hub.open.items() if self.answerer.may_answer(g[3])}
        return json.dumps(
            {
                "open": len(open_now),
                "opened": [
                    {"workflow": open_now[pk][0], "gate": open_now[pk][1], "run": open_now[pk][2]}
                    for pk in opened
                    if pk in open_now
                ],
            }
        )


class InboxConsumer(LiveConsumer):
    """`/ws/gates/?workflow=&gate=&order=&shown=<ids>`: the inbox page's items. A Gate that opens and matches the
    page's filters is added (first or last, by the page's order); one that closes is replaced by how it closed.
    `shown` is what the page was rendered with, so connecting sends only what changed since."""

    hub_class = GatesHub
    hub: GatesHub

    async def opened(self) -> None:
        params = parse_qs(self.scope.get("query_string", b"").decode(), keep_blank_values=True)
        self.workflow = (params.get("workflow") or [""])[0]
        self.gate = (params.get("gate") or [""])[0]
        self.who = (params.get("who") or [""])[0]
        self.order = (params.get("order") or ["oldest"])[0]
        self.query = inbox_query({"workflow": self.workflow, "gate": self.gate, "who": self.who, "order": self.order})
        self.answerer = await sync_to_async(Answerer.of)(self.user)
        shown = (params.get("shown") or [""])[0]
        self.shown = {int(i) for i in shown.split(",") if i.isdigit()}
        self.answering = await sync_to_async(can)(self.user, "answer")

    def _matches(self, gate: tuple[str, str, str, tuple[str, ...] | None, str, dt.datetime | None]) -> bool:
        return (
            (not self.workflow or gate[0] == self.workflow)
            and (not self.gate or gate[1] == self.gate)
            and whose(gate, self.answerer, self.who)
        )

    async def whole(self) -> str | None:
        """The count, the matching Gates opened since the page was drawn and those closed since, out of band."""
        mine = {pk for pk, gate in self.hub.open.items() if self._matches(gate)}
        added, gone = sorted(mine - self.shown), sorted(self.shown - mine)
        if self.order == "newest":
            added.reverse()
        self.shown = mine
        return await sync_to_async(self._render)(added, gone, len(mine))

    def _render(self, added: list[int], gone: list[int], count: int) -> str:
        records = GateRecord.objects.in_bulk(added + gone)
        return render_to_string(
            "console/gates/_live.html",
            {
                "count": count,
                "query": self.query,
                "where": "afterbegin" if self.order == "newest" else "beforeend",
                "added": inbox_items([records[pk] for pk in added if pk in records], self.answering, self.answerer),
                "gone": [closed(records[pk]) for pk in gone if pk in records],
            },
        )
