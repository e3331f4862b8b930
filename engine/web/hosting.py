"""This server process's host, as the web edge reaches it: the API and the Console's forms hand inputs to it.

    host = await ready_host()     # once it has taken up its runs; NoHost (engine.runtime.errors) when none runs here

A process started some other way than `jr2 up`, `jr2 web` or `jr2 worker` runs no host; `NoHost`'s words
(`NO_HOST`) say how to start one, wherever they are shown.
"""

from __future__ import annotations

from engine.runtime.errors import NoHost
from engine.runtime.host import Host, current_host

__all__ = ["ready_host"]


async def ready_host() -> Host:
    host = current_host()
    if host is None:
        raise NoHost()
    await host.ready.wait()
    return host
