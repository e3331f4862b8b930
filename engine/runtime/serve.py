"""The server processes: `jr2 up` and `jr2 web` (daphne serving the Console and the API) and `jr2 worker` (no
pages, only runs).

`jr2 up` puts daphne and a driving host on one event loop, so an input goes from a view to its run's task without
leaving the process. `jr2 web` serves the same pages with a web host, which drives no run: it writes new runs for
the workers and relays inputs to them through the database. `jr2 worker` drives runs until SIGTERM, then drains.
"""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import Callable
from typing import Any

from django.conf import settings

from engine.runtime import telemetry
from engine.runtime.telemetry.instrument import instrument_process

__all__ = ["serve", "work", "lean_requests"]

log = logging.getLogger("engine.runtime")


def lean_requests(factory: Any) -> None:
    """Daphne's HTTP factory, its requests made so that a JSON body is not parsed as a form first: Twisted's
    `Request.requestReceived` reads every POST's Content-Type through the `email` package, to fill `request.args`
    from a form, which daphne never reads (it hands the raw body to the application). A JSON call skips that (a
    tenth of the event loop's time at 50 API calls in flight); a form or an upload is read as before."""
    from daphne.http_protocol import WebRequest

    class JsonRequest(WebRequest):  # type: ignore[misc]  # Twisted's classes are untyped
        def requestReceived(self, command: bytes, path: bytes, version: bytes) -> None:
            ctype = self.requestHeaders.getRawHeaders(b"content-type")
            if ctype and ctype[0].partition(b";")[0].strip().lower() == b"application/json":
                self._parsePOSTFormSubmission = False
            super().requestReceived(command, path, version)

    build = factory.buildProtocol

    def buildProtocol(addr: Any) -> Any:
        protocol = build(addr)
        if protocol is not None and protocol.requestFactory is WebRequest:
            protocol.requestFactory = JsonRequest
        return protocol

    factory.buildProtocol = buildProtocol


def serve(address: str, port: int, say: Callable[[str], None] = print, role: str = "up") -> None:
    """Serve until SIGINT/SIGTERM; on the way out the host stops driving its runs (they stay live in the database
    and are taken up again at the next start, or by another host)."""
    import daphne.server  # noqa: F401 - installs the asyncio Twisted reactor before anything imports a reactor
    from daphne.server import Server
    from django.utils.module_loading import import_string
    from twisted.internet import defer, reactor

    application = import_string(settings.ASGI_APPLICATION)  # the project's, by name: the runtime sits below it
    from engine.runtime.host import Host

    host = Host(role=role)
    name = f"jr2 {role}"

    async def start() -> None:
        await host.start()
        if host.drives:
            live = len(host.drivers)
            say(f"{name}: host {host.owner} is driving {live} live run{'s' if live != 1 else ''}")
        else:
            say(
                f"{name}: host {host.owner} drives no runs here; `jr2 worker` processes on the same database drive them"
            )

    def ready() -> None:
        lean_requests(server.http_factory)
        asyncio.get_event_loop().create_task(start())
        say(f"{name}: serving http://{address}:{port}/ — the Console at /, the API at /api/ (docs at /api/docs)")

    async def stop() -> None:
        await host.stop()
        telemetry.flush()

    def shutdown() -> defer.Deferred[None]:
        return defer.Deferred.fromFuture(asyncio.ensure_future(stop()))

    reactor.addSystemEventTrigger("before", "shutdown", shutdown)  # type: ignore[arg-type]  # zope interface
    server = Server(
        application,
        endpoints=[f"tcp:port={port}:interface={address}"],
        ready_callable=ready,
        signal_handlers=True,
        verbosity=0,
    )
    server.run()


def work(say: Callable[[str], None] = print) -> None:
    """Drive runs until SIGINT/SIGTERM, then drain: claim nothing more, let running Effects finish (up to
    JR2_DRAIN_SECONDS), hand every run back and exit."""
    from engine.runtime.host import Host

    async def main() -> None:
        instrument_process()
        host = Host(role="worker")
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await host.start()
        live = len(host.drivers)
        say(
            f"jr2 worker: host {host.owner} is driving {live} live run{'s' if live != 1 else ''}; it claims new and "
            f"orphaned runs as they appear (leases of {host.lease_seconds:g} s)"
        )
        await stop.wait()
        grace = float(getattr(settings, "JR2_DRAIN_SECONDS", 10))
        say(
            f"jr2 worker: draining {len(host.drivers)} run(s): running Effects get up to {grace:g} s, then every run "
            "is handed back"
        )
        await host.drain(grace)
        telemetry.flush()
        say("jr2 worker: stopped")

    asyncio.run(main())
