"""The Redis channel layer's blocking receive outlasts redis-py's own read timeout (5 s by default since redis-py 8),
so a page or a run hub that hears nothing for a while keeps listening instead of crashing."""

from __future__ import annotations

import asyncio
import os

import pytest
from channels.layers import get_channel_layer

pytestmark = pytest.mark.skipif(
    not os.environ.get("REDIS_URL"), reason="Redis only: the suite's second pass (scripts/services run) sets REDIS_URL"
)


def test_a_receive_that_waits_longer_than_five_seconds_gets_its_message() -> None:
    async def scenario() -> dict[str, str]:
        layer = get_channel_layer()
        assert layer is not None
        layer.brpop_timeout = 6  # Redis blocks each pop 6 s: past a 5 s client read timeout, as under load
        channel = await layer.new_channel()
        waiting = asyncio.ensure_future(layer.receive(channel))
        await asyncio.sleep(5.5)
        await layer.send(channel, {"type": "run.updated", "run": "r1"})
        try:
            return dict(await asyncio.wait_for(waiting, 10))
        finally:
            await layer.flush()
            await layer.close_pools()

    assert asyncio.run(scenario()) == {"type": "run.updated", "run": "r1"}
