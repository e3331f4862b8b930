"""The channel layer of one process (the embedded default, `jr2 up`): Channels' in-memory layer, whose sends and
receives cost what they touch rather than what the whole process holds.

Channels' `InMemoryChannelLayer` looks through every channel's queue and every group's members for what expired at
every `group_send` and every `receive`. A host tells a few groups after each commit and each open page receives
what it is told, so with 1,000 runs moving and 500 pages open each notice paid for all 500 pages several times
over (a thousand waiting messages and members read per notice). Here what expired is looked for at most once per
`CLEAN_EVERY` seconds (a message still expires after `expiry`, a membership after `group_expiry`, at most that much
later), and a group send puts the message on each member's queue in turn instead of making a task per member.
A host's notices after each commit go out at once, with no task at all (`tell`).
"""

from __future__ import annotations

import asyncio
import copy
import time
from collections.abc import Callable
from typing import Any

from channels.layers import InMemoryChannelLayer

__all__ = ["InMemoryLayer", "CLEAN_EVERY"]

#: At most this often (seconds) the layer looks for expired messages and memberships.
CLEAN_EVERY = 1.0


class InMemoryLayer(InMemoryChannelLayer):  # type: ignore[misc]
    """See the module docstring."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._cleaned = 0.0

    def _clean_when_due(self) -> None:
        now = time.monotonic()
        if now - self._cleaned >= CLEAN_EVERY:
            self._cleaned = now
            self._clean_expired()

    def _queue(self, channel: str) -> asyncio.Queue[Any]:
        return self.channels.setdefault(channel, asyncio.Queue(maxsize=self.get_capacity(channel)))

    async def receive(self, channel: str) -> Any:
        """The next message on `channel` (the parent's, without its clean-up at every call)."""
        self.require_valid_channel_name(channel)
        self._clean_when_due()
        queue = self._queue(channel)
        try:
            _, message = await queue.get()
        finally:
            if queue.empty():
                self.channels.pop(channel, None)
        return message

    async def group_send(self, group: str, message: dict[str, Any]) -> None:
        assert isinstance(message, dict), "message is not a dict"
        self._clean_when_due()
        self._put_to_members(group, message, copy.deepcopy)

    def tell(self, groups: tuple[str, ...], message: dict[str, Any]) -> None:
        """`group_send` of one flat message (its values str, int or bool, so a copy per member is a shallow one)
        to each of `groups`, now, from the event loop: a commit's notices cost no task each (three or four of them
        per commit, a twentieth of the event loop's share of a start through the API)."""
        self._clean_when_due()
        for group in groups:
            self._put_to_members(group, message, dict)

    def _put_to_members(
        self, group: str, message: dict[str, Any], copied: Callable[[dict[str, Any]], dict[str, Any]]
    ) -> None:
        """A copy of the message on each member's queue, in turn; a full channel misses it, as in Channels' own."""
        self.require_valid_group_name(group)
        for channel in list(self.groups.get(group, ())):
            queue = self._queue(channel)
            if not queue.full():
                queue.put_nowait((time.time() + self.expiry, copied(message)))
