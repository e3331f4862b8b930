"""The timeline page's live chart: `/ws/runs/<id>/timeline/` sends the chart on connect and again after each
commit of the run (the runtime's `run.updated` to the group `run-<id>`), as one out-of-band swap. A notice about a
commit the page already shows is dropped, so a burst of commits costs one render each at most."""
from __future__ import annotations

from typing import Any

from asgiref.sync import sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.template.loader import render_to_string

from engine.models import Run
from engine.runtime.notify import run_group

from console.access import can_read
from console.runview import machine_of
from console.timeline import timeline_of

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


class TimelineConsumer(AsyncWebsocketConsumer):
    async def connect(self) -> None:
        self.run_id = self.scope["url_route"]["kwargs"]["run_id"]
        if not can_read(self.scope.get("user")):
            await self.close(code=4403)
            return
        self.shown = ""
        self.group = run_group(self.run_id)
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()
        if not await self._send():
            await self.close(code=4404)

    async def disconnect(self, code: int) -> None:
        if hasattr(self, "group"):
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def run_updated(self, message: dict[str, Any]) -> None:
        updated = str(message.get("updated") or "")
        if updated and updated <= self.shown:
            return
        await self._send()

    async def _send(self) -> bool:
        found = await sync_to_async(chart)(self.run_id, self.shown)
        if found is None:
            return False
        html, self.shown = found
        if html:
            await self.send(text_data=html)
        return True
