"""Driving a Host from a test: run a body on a started host, and wait for what the database says."""
from __future__ import annotations

import asyncio
from typing import Any, Awaitable, Callable, Mapping

from engine.models import Run
from engine.providers import aclose_all
from engine.runtime.host import Host

__all__ = ["hosted", "until", "status"]


def hosted(workflows: Mapping[str, Any], body: Callable[[Host], Awaitable[None]], owner: str = "test-host",
           **kwargs: Any) -> None:
    """Start a Host on `workflows`, run `body(host)`, then stop the host and close the providers' connections."""
    async def main() -> None:
        host = Host(workflows, owner=owner, **kwargs)
        await host.start()
        try:
            await body(host)
        finally:
            await host.stop()
            await aclose_all()
    asyncio.run(main())


async def until(host: Host, check: Callable[[], Any], timeout: float = 10.0) -> Any:
    """Poll the database (on the host's thread) until `check` gives something truthy."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        value = await host.db(check)
        if value:
            return value
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out waiting for {check}")
        await asyncio.sleep(0.02)


def status(run_id: str, *wanted: str) -> Callable[[], Run | None]:
    return lambda: Run.objects.filter(id=run_id, status__in=wanted).first()
