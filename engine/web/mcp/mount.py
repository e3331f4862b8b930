"""The ASGI application under `/mcp/`: each MCP server has a path pattern; a request is matched, its caller's token
checked (`auth.py`), and it is handed to that server's streamable HTTP session manager.

Servers are added with `mount.add(McpRoute(...))`. A route's `resolve` turns the matched path and the caller into
the ASGI application that serves it (or a refusal such as 404 naming what exists), so one route can serve many
endpoints (a seat per run and Agent). The caller is put into the request's scope as `scope["jr2.caller"]` for the
server's handlers, and as the scope's `user` in the SDK's form, so the SDK binds each MCP session to the token's
user: a session id sent with another user's token is not found.

Session managers need a running task group; daphne speaks no ASGI lifespan, so `Managed` starts each manager in a
task of its own on first use and keeps it for the life of the process.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import ASGIApp, Receive, Scope, Send

from engine.web.mcp.auth import Caller, Refused, authenticate

__all__ = ["McpRoute", "McpMount", "Managed", "mount", "respond", "CALLER"]

log = logging.getLogger("engine.web.mcp")

#: Where a request's scope carries its `Caller`.
CALLER = "jr2.caller"


@dataclass(frozen=True)
class McpRoute:
    """A path pattern under /mcp/ (matched whole), the permission its callers need ("engine.play_seat"; "" for
    none), what that allows in words, and how to find the server for a match."""

    pattern: re.Pattern[str]
    permission: str
    doing: str
    resolve: Callable[[re.Match[str], Caller], Awaitable[ASGIApp | Refused]]
    name: str = ""


class Managed:
    """A lowlevel `Server` served by its own streamable HTTP session manager, started on the first request."""

    def __init__(self, server: Server[Any], **options: Any) -> None:
        self.server = server
        self.manager = StreamableHTTPSessionManager(server, **options)
        self._ready: asyncio.Future[None] | None = None
        self._task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        assert self._ready is not None
        try:
            async with self.manager.run():
                self._ready.set_result(None)
                await asyncio.Event().wait()
        except BaseException as err:
            if not self._ready.done():
                self._ready.set_exception(err if isinstance(err, Exception) else RuntimeError(str(err)))
            raise

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self._ready is None:
            self._ready = asyncio.get_running_loop().create_future()
            self._task = asyncio.get_running_loop().create_task(self._run(), name=f"mcp {self.server.name}")
        await self._ready
        await self.manager.handle_request(scope, receive, send)

    async def close(self) -> None:
        """Stop the manager: its sessions end."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)


def security(allowed_hosts: list[str]) -> TransportSecuritySettings:
    """DNS-rebinding protection with Django's ALLOWED_HOSTS (any port)."""
    if "*" in allowed_hosts:
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    hosts = [h.lstrip(".") for h in allowed_hosts]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[*hosts, *(f"{h}:*" for h in hosts)],
        allowed_origins=[f"{scheme}://{h}{port}" for scheme in ("http", "https") for h in hosts for port in ("", ":*")],
    )


def one_server(build: Callable[[], Server[Any]]) -> Callable[[re.Match[str], Caller], Awaitable[ASGIApp]]:
    """A route's `resolve` for a server that every caller shares (the Gates and the operations servers): built and
    managed on the first request, with the idle timeout and the DNS-rebinding protection every MCP server has."""
    managed: Managed | None = None

    async def resolve(found: re.Match[str], caller: Caller) -> ASGIApp:
        nonlocal managed
        if managed is None:
            managed = Managed(
                build(),
                session_idle_timeout=float(getattr(settings, "JR2_MCP_IDLE_SECONDS", 600)),
                security_settings=security(list(settings.ALLOWED_HOSTS)),
            )
        return managed

    return resolve


async def respond(send: Send, status: int, detail: str, headers: dict[str, str] | None = None) -> None:
    """A JSON error `{"detail": ...}` with `status`, as the API answers."""
    body = json.dumps({"detail": detail}).encode()
    head = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    head += [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": head})
    await send({"type": "http.response.body", "body": body})


class McpMount:
    """Routes `/mcp/...` to the MCP server whose pattern matches, after checking the caller."""

    def __init__(self) -> None:
        self.routes: list[McpRoute] = []

    def add(self, route: McpRoute) -> None:
        self.routes.append(route)

    def handles(self, path: str) -> bool:
        return path == "/mcp" or path.startswith("/mcp/")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        path = scope["path"]
        for route in self.routes:
            found = route.pattern.fullmatch(path)
            if found is not None:
                break
        else:
            names = ", ".join(r.name for r in self.routes if r.name) or "none"
            await respond(send, 404, f"no MCP server at {path} (the MCP servers: {names})")
            return
        caller = await authenticate(scope, route.permission, route.doing)
        if isinstance(caller, Refused):
            headers = {"WWW-Authenticate": "Bearer"} if caller.status == 401 else {}
            if caller.retry_after is not None:
                headers["Retry-After"] = str(caller.retry_after)
            await respond(send, caller.status, caller.detail, headers)
            return
        target = await route.resolve(found, caller)
        if isinstance(target, Refused):
            await respond(send, target.status, target.detail)
            return
        token = AccessToken(token="", client_id=f"user:{caller.user.pk}", scopes=[], subject=caller.username)
        await target({**scope, CALLER: caller, "user": AuthenticatedUser(token)}, receive, send)


#: The one mount jr2/asgi.py serves; servers add their routes to it (engine/web/mcp/routes.py).
mount = McpMount()
