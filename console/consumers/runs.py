"""The runs list live: `/ws/runs/?<the page's filters>&page=<n>` sends the list and its match count on connect and
again after each commit of any run (the runtime's `run.updated` to the group `runs`), read anew with the page's
own filters and page (console/pages/runlist.py), so a run that starts, moves or ends shows where the page would
show it on a reload. A render that equals the last one sent is not sent again."""

from __future__ import annotations

from asgiref.sync import sync_to_async
from django.http import QueryDict

from console.consumers.base import LiveConsumer
from console.pages.runlist import runs_fragment
from engine.runtime.notify import RUNS_GROUP

__all__ = ["RunsConsumer"]


class RunsConsumer(LiveConsumer):
    """`/ws/runs/`: one hub per process on the group `runs`, the page's list read at each notice."""

    async def opened(self) -> None:
        self.params = QueryDict(self.scope.get("query_string", b"").decode(errors="replace"))
        self.sent = ""

    def hub_key(self) -> str:
        return RUNS_GROUP

    async def whole(self) -> str | None:
        html = await sync_to_async(runs_fragment)(self.params)
        if html == self.sent:
            return ""
        self.sent = html
        return html
