"""One SDK client per provider, kept while its settings and event loop stay the same.

A client holds a connection pool, so it is reused; but its connections belong to the event loop that opened them,
and its key and base URL are read at each call, so a new loop or a changed setting gets a new client.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Hashable
from typing import Generic, Protocol, TypeVar

__all__ = ["ClientCache"]


class _Closeable(Protocol):
    async def close(self) -> None: ...


C = TypeVar("C", bound=_Closeable)


class ClientCache(Generic[C]):
    def __init__(self) -> None:
        self._client: C | None = None
        self._config: Hashable = None
        self._loop: asyncio.AbstractEventLoop | None = None

    async def get(self, config: Hashable, make: Callable[[], C]) -> C:
        loop = _running_loop()
        if self._client is not None and self._config == config and self._loop is loop:
            return self._client
        old, old_loop = self._client, self._loop
        client = self._client = make()
        self._config, self._loop = config, loop
        if old is not None and old_loop is loop:
            await old.close()
        return client

    async def aclose(self) -> None:
        """Close the client from its own loop; from another one it is only dropped (its loop has gone)."""
        client, self._client = self._client, None
        if client is not None and self._loop is _running_loop():
            await client.close()


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None
