"""`WakeUps`: what a driving host hears through the channel layer, and the replies it owes inputs' senders.

Web processes wake the hosts when they post a run or an input (engine/runtime/relay.py): a new run, or an input for
a run nobody holds, asks every host to claim; an input for a run a host holds reaches that host alone, which then
reads that run's inputs only. The wake-up of an input names its sender's reply channel, kept here (bounded) until
the input's row is settled and committed (`replied`). All of it is a hint: the host's rounds also scan on their own.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Callable, Container, Mapping
from typing import Any

from channels.layers import get_channel_layer

from engine.runtime import relay

__all__ = ["WakeUps"]

log = logging.getLogger("engine.runtime")

#: Reply channels kept at most (of inputs whose wake-up came here but which another host settled, say).
REPLIES_KEPT = 10_000


class WakeUps:
    """One driving host's wake-ups since its last round (`take`), and its inputs' senders' reply channels."""

    def __init__(self, owner: str, held: Container[str]) -> None:
        self.owner = owner
        #: The runs this host drives (its table of drivers).
        self.held = held
        self.event = asyncio.Event()
        self.claims_wanted = False
        self.inputs_for: set[str] = set()
        self._reply_to: OrderedDict[int, str] = OrderedDict()
        self._replying: set[asyncio.Task[None]] = set()

    def claim(self) -> None:
        """Ask for a claim round now."""
        self.claims_wanted = True
        self.event.set()

    def take(self) -> tuple[bool, set[str]]:
        """Whether a claim was asked for, and the held runs with new inputs; both cleared."""
        self.event.clear()
        claims, runs = self.claims_wanted, self.inputs_for
        self.claims_wanted, self.inputs_for = False, set()
        return claims, runs

    def heard(self, message: Mapping[str, Any]) -> None:
        """A wake-up: an input for a run held here is read alone; anything else asks for a claim."""
        run_id = str(message.get("run") or "")
        inputs = message.get("type") == "inputs.posted"
        if inputs and message.get("input") and message.get("reply"):
            self._reply_to[int(message["input"])] = str(message["reply"])
            while len(self._reply_to) > REPLIES_KEPT:
                self._reply_to.popitem(last=False)
        if inputs and run_id and (run_id in self.held or message.get("holder") == self.owner):
            self.inputs_for.add(run_id)  # one being taken up reads its own inputs: the next round skips it
            self.event.set()
        else:
            self.claim()

    def replied(self, input_id: int, outcome: dict[str, Any]) -> None:
        """A relayed input's row is settled and committed with `outcome`: tell its sender, if it said where."""
        channel = self._reply_to.pop(input_id, None)
        if channel is None:
            return
        task = asyncio.get_running_loop().create_task(relay.reply(channel, input_id, outcome))
        self._replying.add(task)
        task.add_done_callback(self._replying.discard)

    async def listen(self, stopped: Callable[[], bool], retry_seconds: float) -> None:
        """Hear the wake-ups sent to every host and to this one, until `stopped()`."""
        layer = get_channel_layer()
        if layer is None:
            return
        channel = await layer.new_channel()
        groups = (relay.HOSTS_GROUP, relay.host_group(self.owner))
        for group in groups:
            await layer.group_add(group, channel)
        try:
            while not stopped():
                try:
                    message = await layer.receive(channel)
                except asyncio.CancelledError:
                    raise
                except Exception as err:
                    if stopped():  # channels_redis may turn the cancel of a stopping host into its own error
                        return
                    log.warning("listening for new runs and inputs failed: %r", err)
                    await asyncio.sleep(retry_seconds)
                    continue
                self.heard(message)
        finally:
            for group in groups:
                try:
                    await layer.group_discard(group, channel)
                except Exception:
                    pass
