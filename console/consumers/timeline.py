"""The timeline page's live chart: `/ws/runs/<id>/timeline/` sends the chart on connect and again after each
commit of the run (the runtime's `run.updated` to the group `run-<id>`), as one out-of-band swap. A notice about a
commit the page already shows is dropped, so a burst of commits costs one render each at most."""

from __future__ import annotations

from asgiref.sync import sync_to_async
from django.template.loader import render_to_string

from console.consumers.base import LiveConsumer, Notice
from console.pages.runview import machine_of
from console.pages.timeline import timeline_of
from engine.models import Run
from engine.runtime.notify import run_group

__all__ = ["TimelineConsumer", "chart"]


def chart(run_id: str, shown: str) -> tuple[str, str] | None:
    """The chart as out-of-band HTML and the commit time it shows; None when there is no such run, and ("", shown)
    when the run has not moved since `shown`."""
    run = Run.objects.filter(id=run_id).first()
    if run is None:
        return None
    at = run.updated_at.isoformat()
    if shown and at <= shown:
        return "", shown
    timeline = timeline_of(run, machine_of(run.workflow))
    return render_to_string("console/timeline/_chart.html", {"run": run, "timeline": timeline, "oob": True}), at


class TimelineConsumer(LiveConsumer):
    """`/ws/runs/<id>/timeline/`: one hub per run on its group, the chart drawn anew for each commit it has not
    shown."""

    async def opened(self) -> None:
        self.run_id = self.scope["url_route"]["kwargs"]["run_id"]
        self.shown = ""

    def hub_key(self) -> str:
        return run_group(self.run_id)

    async def whole(self) -> str | None:
        found = await sync_to_async(chart)(self.run_id, self.shown)
        if found is None:
            return None
        html, self.shown = found
        return html

    async def fresh(self, message: Notice) -> str:
        updated = str(message.get("updated") or "")
        if updated and updated <= self.shown:
            return ""
        return await self.whole() or ""
