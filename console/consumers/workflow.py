"""The workflow page's live counts and "Recent runs": `/ws/workflows/<name>/` sends them on connect and after each
commit of any of the workflow's runs (runs start and end while the page is open)."""

from __future__ import annotations

from asgiref.sync import sync_to_async

from console.consumers.base import LiveConsumer
from console.pages.regions import workflow_stats
from engine.runtime.notify import workflow_group

__all__ = ["WorkflowConsumer"]


class WorkflowConsumer(LiveConsumer):
    """`/ws/workflows/<name>/`: one hub per workflow (its group `workflow-<name>`), the counts and recent runs read
    at each notice."""

    async def opened(self) -> None:
        self.workflow = self.scope["url_route"]["kwargs"]["name"]

    def hub_key(self) -> str:
        return workflow_group(self.workflow)

    async def whole(self) -> str | None:
        return await sync_to_async(workflow_stats)(self.workflow)
