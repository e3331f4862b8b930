"""What every live page's socket shares; the consumers beside this module fill small hooks.

A `Hub` is this process's one subscription to a channel layer group (one per event loop): the first page that
joins starts it, the last one that leaves ends it. It hears each notice once and tells its listeners. The runtime
sends `run.updated` to the groups `run-<id>`, `workflow-<name>` and `gates` after each commit, on the notices'
channel layer (engine/runtime/notify.py: Redis pub/sub on a fleet); such notices carry no state and may be
dropped, so a listener always reads what it shows from the database.

A `LiveConsumer` is one open page (Channels' `AsyncWebsocketConsumer` underneath): on connect it checks that its
user may read (else it closes with 4403), joins its hub before its first read (so no commit falls between the
two), then sends the whole fragment (a page that reconnects is whole again at once; nothing to show closes it
with 4404), and a fresh fragment on each notice.

    class WorkflowConsumer(LiveConsumer):
        async def opened(self) -> None: self.workflow = self.scope["url_route"]["kwargs"]["name"]
        def hub_key(self) -> str: return workflow_group(self.workflow)
        async def whole(self) -> str | None: return await sync_to_async(workflow_stats)(self.workflow)
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, ClassVar, Protocol, Self

from channels.generic.websocket import AsyncWebsocketConsumer
from opentelemetry import trace

from console.access import can_read
from engine.runtime.notify import PROBE, heard_on, notice_layer

__all__ = ["Notice", "Listener", "Hub", "LiveConsumer"]

log = logging.getLogger("console.live")
#: Spans of our own for the live pages (no instrumentation covers Channels' consumers); a no-op unless tracing is on.
_tracer = trace.get_tracer("jr2.console")

#: A group message as the channel layer delivers it (`{"type": "run.updated", "updated": ..., ...}`).
Notice = dict[str, Any]


class Listener(Protocol):
    """What a hub tells (a hub may tell its own listeners in its own words, as RunHub does)."""

    async def notice(self, message: Notice) -> None: ...


class Hub:
    """The one subscription of this process (and event loop) to the group `group_of(key)`, and its listeners.

    Hooks: `group_of(key)` (the group; by default the key is its name), `started()` (a first read, once
    subscribed and before any listener reads) and `tell(message)` (by default, each listener's `notice`)."""

    _hubs: ClassVar[dict[tuple[asyncio.AbstractEventLoop, type[Hub], str], Hub]] = {}

    def __init__(self, key: str) -> None:
        self.key = key
        self.group = self.group_of(key)
        self.listeners: set[Any] = set()
        self._channel = ""
        self._task: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()

    @classmethod
    def group_of(cls, key: str) -> str:
        return key

    @classmethod
    def of(cls, key: str = "") -> Self:
        """This process's hub of `key`, made on first use."""
        at = (asyncio.get_running_loop(), cls, key)
        hub = cls._hubs.get(at)
        if hub is None:
            hub = cls._hubs[at] = cls(key)
        assert isinstance(hub, cls)
        return hub

    async def join(self, listener: Listener) -> None:
        """Subscribe (once) before the listener's first read, so no commit falls between the two."""
        self.listeners.add(listener)
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._listen(), name=f"hub {self.group}")
        await self._ready.wait()

    async def leave(self, listener: Listener) -> None:
        """The last listener to leave ends the subscription."""
        self.listeners.discard(listener)
        if self.listeners or self._task is None:
            return
        self._task.cancel()
        self._task = None
        self._ready = asyncio.Event()
        self._hubs.pop((asyncio.get_running_loop(), type(self), self.key), None)
        layer = notice_layer()
        if layer is not None and self._channel:
            await layer.group_discard(self.group, self._channel)

    async def _listen(self) -> None:
        layer = notice_layer()
        self._channel = await layer.new_channel()
        await layer.group_add(self.group, self._channel)
        await heard_on(layer, self.group, self._channel)
        await self.started()
        self._ready.set()
        while True:
            message = await layer.receive(self._channel)
            if message.get("type") == PROBE:  # another process's hub making sure of its subscription
                continue
            try:
                await self.tell(message)
            except Exception:
                log.exception("telling the pages of %s failed", self.group)

    async def started(self) -> None:
        """Nothing to read first, by default."""

    async def tell(self, message: Notice) -> None:
        listeners = list(self.listeners)
        told = await asyncio.gather(*(listener.notice(message) for listener in listeners), return_exceptions=True)
        for result in told:
            if isinstance(result, Exception):
                log.error("a page of %s could not be told", self.group, exc_info=result)


class LiveConsumer(AsyncWebsocketConsumer):
    """One open live page. Hooks: `opened()` (read the page's address), `hub_key()`, `whole()` (the fragment
    as it is now; None: nothing to show) and `fresh(message)` (what a notice changes; by default the whole)."""

    hub_class: ClassVar[type[Hub]] = Hub
    hub: Hub

    async def connect(self) -> None:
        with _tracer.start_as_current_span(f"jr2.consumer {type(self).__name__} connect") as span:
            span.set_attribute("url.path", str(self.scope.get("path", "")))
            await self._connect()

    async def _connect(self) -> None:
        self.user = self.scope.get("user")
        if not can_read(self.user):
            await self.close(code=4403)
            return
        await self.opened()
        self.hub = self.hub_class.of(self.hub_key())
        await self.hub.join(self)
        await self.accept()
        whole = await self.whole()
        if whole is None:
            await self.close(code=4404)
        elif whole:
            await self.send(text_data=whole)

    async def disconnect(self, code: int) -> None:
        if hasattr(self, "hub"):
            await self.hub.leave(self)

    async def notice(self, message: Notice) -> None:
        with _tracer.start_as_current_span(f"jr2.consumer {type(self).__name__} notice") as span:
            span.set_attribute("jr2.run.id", str(message.get("run", "")))
            fresh = await self.fresh(message)
            if fresh:
                await self.send(text_data=fresh)

    async def opened(self) -> None:
        """Nothing to read from the address, by default."""

    def hub_key(self) -> str:
        return ""

    async def whole(self) -> str | None:
        raise NotImplementedError(f"{type(self).__name__} must say what its page shows: define whole()")

    async def fresh(self, message: Notice) -> str:
        return await self.whole() or ""
