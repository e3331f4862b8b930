"""`jr2 up`'s server: daphne serving the Console and the API, and the process's Host driving runs, on one event
loop (so the API hands an input to a run's task without leaving the process)."""
from __future__ import annotations

import asyncio
import logging
from typing import Callable

__all__ = ["serve"]

log = logging.getLogger("engine.runtime")


def serve(address: str, port: int, say: Callable[[str], None] = print) -> None:
    """Serve until SIGINT/SIGTERM; on the way out the host stops driving its runs (they stay live in the database
    and are taken up again at the next start)."""
    import daphne.server  # noqa: F401 - installs the asyncio Twisted reactor before anything imports a reactor
    from daphne.server import Server
    from twisted.internet import defer, reactor

    from jr2.asgi import application

    from .host import Host

    host = Host()

    async def start() -> None:
        await host.start()
        live = len(host.drivers)
        say(f"jr2 up: host {host.owner} is driving {live} live run{'s' if live != 1 else ''}")

    def ready() -> None:
        asyncio.get_event_loop().create_task(start())
        say(f"jr2 up: serving http://{address}:{port}/ — the Console at /, the API at /api/ (docs at /api/docs)")

    def shutdown() -> defer.Deferred[None]:
        return defer.Deferred.fromFuture(asyncio.ensure_future(host.stop()))

    reactor.addSystemEventTrigger("before", "shutdown", shutdown)  # type: ignore[arg-type]  # zope interface
    Server(application, endpoints=[f"tcp:port={port}:interface={address}"], ready_callable=ready,
           signal_handlers=True, verbosity=0).run()
