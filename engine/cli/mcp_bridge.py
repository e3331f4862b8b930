"""A stdio MCP server that relays every request to one of a jr2 server's HTTP MCP endpoints, for MCP clients that
start their servers as processes (Claude Desktop, Claude Code's `command` servers).

The remote session is opened once the stdio client has initialized, with the stdio client's own `clientInfo`, so a
seat held through the bridge is shown as `mcp/<username> via <that client>`. Tools, their calls and the server's
instructions are the remote server's, passed through unchanged (a remote refusal is an `isError` result here too).
An HTTP refusal (401, 403, 404) ends the bridge at start with the server's words on stderr.
"""

from __future__ import annotations

import sys
from typing import Any

import anyio
import httpx2
import mcp_types as types
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

__all__ = ["serve", "probe", "run", "Remote", "Refused"]


class Remote:
    """The HTTP MCP session the bridge relays to. It is opened, and lives, in a task of its own (the SDK's sessions
    must be entered and left in one task), once the first request says who the stdio client is."""

    def __init__(self, url: str, token: str) -> None:
        self.url = url
        self.token = token
        self.session: ClientSession | None = None
        self.error: BaseException | None = None
        self._client: types.Implementation | None = None
        self._wanted = anyio.Event()
        self._ready = anyio.Event()
        self._done = anyio.Event()

    async def open(self, client: types.Implementation | None) -> ClientSession:
        if not self._wanted.is_set():
            self._client = client
            self._wanted.set()
        await self._ready.wait()
        if self.session is None:
            raise RuntimeError(f"the MCP session at {self.url} could not be opened: {self.error}")
        return self.session

    async def keep(self) -> None:
        """Open the session when asked, hold it until `close()`."""
        await self._wanted.wait()
        if self._done.is_set():  # the stdio client left without a request
            return
        try:
            async with (
                httpx2.AsyncClient(
                    headers={"Authorization": f"Bearer {self.token}"}, timeout=httpx2.Timeout(60, read=400)
                ) as http,
                streamable_http_client(self.url, http_client=http) as (read, write),
                ClientSession(read, write, client_info=self._client) as session,
            ):
                await session.initialize()
                self.session = session
                self._ready.set()
                await self._done.wait()
        except Exception as err:  # reported to the waiting request, which fails with it
            self.error = err
        finally:
            self.session = None
            self._ready.set()

    def close(self) -> None:
        self._done.set()
        self._wanted.set()


class Refused(Exception):
    """The server refused the endpoint before any MCP was spoken: its status and words."""


#: What the mount answers before a request reaches an MCP server: no token, no permission, no such endpoint.
REFUSALS = (401, 403, 404, 429)


async def probe(url: str, token: str) -> types.InitializeResult:
    """Check the token and the endpoint (an empty POST, which the mount refuses first and an MCP server answers
    with a 400, opening no session), then initialize a session and end it: the remote's name and instructions."""
    headers = {"Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream"}
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30)) as http:
        checked = await http.post(url, json={})
        if checked.status_code in REFUSALS:
            try:
                detail = checked.json().get("detail")
            except ValueError:
                detail = None
            raise Refused(f"{checked.status_code}: {detail or checked.reason_phrase}")
        async with (
            streamable_http_client(url, http_client=http) as (read, write),
            ClientSession(read, write, client_info=types.Implementation(name="jr2 mcp", version="1")) as session,
        ):
            return await session.initialize()


def _client_of(ctx: Any) -> types.Implementation | None:
    params = ctx.session.client_params
    return getattr(params, "client_info", None) if params is not None else None


def _server(remote: Remote, init: types.InitializeResult) -> Server[Any]:
    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        session = await remote.open(_client_of(ctx))
        return await session.list_tools()

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        session = await remote.open(_client_of(ctx))
        return await session.call_tool(params.name, dict(params.arguments or {}))

    return Server(
        init.server_info.name,
        version=init.server_info.version or "",
        instructions=init.instructions,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


async def serve(url: str, token: str) -> None:
    """Relay stdin/stdout's MCP session to `url` until the stdio client leaves."""
    init = await probe(url, token)
    remote = Remote(url, token)
    server = _server(remote, init)
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(remote.keep)
        try:
            async with stdio_server() as (read, write):
                await server.run(read, write, server.create_initialization_options())
        finally:
            remote.close()


def run(url: str, token: str) -> int:
    """`serve` in its own event loop; the exit code (2 with the reason on stderr when the server refuses)."""
    try:
        anyio.run(serve, url, token)
    except Refused as err:
        print(f"jr2 mcp: the server at {url} refused: {err}", file=sys.stderr)
        return 2
    except (httpx2.ConnectError, httpx2.TimeoutException) as err:
        print(
            f"jr2 mcp: the server is not reachable at {url} ({err}); start it with `jr2 up`, or point --url / "
            "JR2_URL at it",
            file=sys.stderr,
        )
        return 2
    except KeyboardInterrupt:
        return 130
    return 0
