"""A load generator that costs little next to the server it measures: HTTP/1.1 keep-alive connections on asyncio
streams, JSON in and out, nothing else.

The runs rounds (bench/fleet_load.py's `runs_round`, bench/peers/jr2_up.py) start 1,000 runs and answer 1,000
Gates through the API, 50 requests in flight, on the machine the server runs on. With httpx, the client spent
4.3 to 5.3 ms of CPU per POST, a whole core while the server needed 3.4 to 4.4 ms per start (2026-12-03): on two
cores the round timed the client as much as the server. This client spends a few hundredths of that per request,
so the round's wall time is the server's.

`LeanClient(url, connections)` has the one method bench.console's `api` calls: `request(method, path, json=...,
headers=...)`, answering with `status_code`, `text` and `json()`. It speaks only what the API answers: a
`Content-Length` body, or a chunked one; a connection the server closes is opened again for the next request.
"""

from __future__ import annotations

import asyncio
import json as jsonlib
from typing import Any
from urllib.parse import urlsplit

__all__ = ["LeanClient", "LeanResponse"]


class LeanResponse:
    """What `api` reads of an answer."""

    __slots__ = ("status_code", "headers", "content")

    def __init__(self, status_code: int, headers: dict[str, str], content: bytes) -> None:
        self.status_code = status_code
        self.headers = headers
        self.content = content

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", errors="replace")

    def json(self) -> Any:
        return jsonlib.loads(self.content)


class _Connection:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    def close(self) -> None:
        self.writer.close()


class LeanClient:
    """Up to `connections` keep-alive connections to `url` (http only), each serving one request at a time."""

    def __init__(self, url: str, connections: int = 50, timeout: float = 180.0) -> None:
        parts = urlsplit(url)
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError(f"LeanClient speaks plain http to a host: {url!r}")
        self.host, self.port = parts.hostname, parts.port or 80
        self.authority = f"{self.host}:{self.port}".encode()
        self.timeout = timeout
        self._idle: list[_Connection] = []
        self._slots = asyncio.Semaphore(connections)

    async def __aenter__(self) -> LeanClient:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        for connection in self._idle:
            connection.close()
        self._idle.clear()

    async def request(
        self, method: str, path: str, json: Any = None, headers: dict[str, str] | None = None
    ) -> LeanResponse:
        body = b"" if json is None else jsonlib.dumps(json).encode()
        head = [b"%s %s HTTP/1.1" % (method.encode(), path.encode()), b"Host: " + self.authority]
        for name, value in (headers or {}).items():
            head.append(f"{name}: {value}".encode("latin-1"))
        if json is not None:
            head.append(b"Content-Type: application/json")
        if json is not None or method in ("POST", "PUT", "PATCH"):
            head.append(b"Content-Length: %d" % len(body))
        data = b"\r\n".join(head) + b"\r\n\r\n" + body
        async with self._slots:
            for attempt in (1, 2):
                connection = self._idle.pop() if self._idle else await self._open()
                try:
                    connection.writer.write(data)
                    response, keep = await asyncio.wait_for(self._read(connection.reader), self.timeout)
                except (ConnectionError, asyncio.IncompleteReadError):
                    connection.close()
                    if attempt == 2:
                        raise
                    continue  # a kept connection the server had closed: once more on a new one
                if keep:
                    self._idle.append(connection)
                else:
                    connection.close()
                return response
        raise AssertionError("unreachable")

    async def _open(self) -> _Connection:
        reader, writer = await asyncio.open_connection(self.host, self.port)
        return _Connection(reader, writer)

    @staticmethod
    async def _read(reader: asyncio.StreamReader) -> tuple[LeanResponse, bool]:
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head[:-4].decode("latin-1").split("\r\n")
        version, _, rest = lines[0].partition(" ")
        status = int(rest.split(" ", 1)[0])
        headers: dict[str, str] = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        if "content-length" in headers:
            content = await reader.readexactly(int(headers["content-length"]))
        elif headers.get("transfer-encoding", "").lower() == "chunked":
            chunks = []
            while size := int((await reader.readuntil(b"\r\n"))[:-2].split(b";")[0], 16):
                chunks.append(await reader.readexactly(size))
                await reader.readexactly(2)
            await reader.readuntil(b"\r\n")
            content = b"".join(chunks)
        elif status in (204, 304) or 100 <= status < 200:
            content = b""
        else:
            return LeanResponse(status, headers, await reader.read()), False
        keep = headers.get("connection", "").lower() != "close" and version == "HTTP/1.1"
        return LeanResponse(status, headers, content), keep
