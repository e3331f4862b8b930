"""Which MCP servers are mounted under /mcp/, and the ASGI router that sends `/mcp/...` to them and everything
else to Django. A new MCP server adds its `McpRoute` to `ROUTES`."""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from engine.web.mcp import gates, ops, seat
from engine.web.mcp.mount import McpRoute, mount

__all__ = ["ROUTES", "mcp_or"]

ROUTES: list[McpRoute] = [seat.ROUTE, gates.ROUTE, ops.ROUTE]

for _route in ROUTES:
    mount.add(_route)


def mcp_or(django: ASGIApp) -> ASGIApp:
    """HTTP requests under /mcp/ go to the MCP mount, the rest to `django`."""

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if mount.handles(scope.get("path", "")):
            await mount(scope, receive, send)
        else:
            await django(scope, receive, send)

    return app
