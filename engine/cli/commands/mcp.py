"""`jr2 mcp seat <run> <agent> | gates | ops`: stdio MCP servers that relay to a running server's MCP endpoints
(`/mcp/runs/<run>/seats/<agent>/`, `/mcp/gates/`, `/mcp/`) with `--url`/$JR2_URL and `--token`/$JR2_TOKEN, for
MCP clients that start their servers as processes. Nothing but MCP goes to stdout; errors go to stderr."""

from __future__ import annotations

import os
from argparse import ArgumentParser
from typing import Any
from urllib.parse import quote

from engine.cli.client import DEFAULT_URL, Client, CliError

__all__ = ["mcp_arguments", "mcp", "endpoint"]


def mcp_arguments(parser: ArgumentParser) -> None:
    servers = parser.add_subparsers(dest="server", metavar="<server>", required=True)
    seat = servers.add_parser("seat", help="play an Agent's seat in a run (/mcp/runs/<run>/seats/<agent>/)")
    seat.add_argument("run", help="the run's id, or 4 or more of its first characters")
    seat.add_argument("agent", help="the Agent whose seat to play")
    gates = servers.add_parser("gates", help="list and answer open Gates (/mcp/gates/)")
    ops = servers.add_parser("ops", help="list workflows, start, search, read and cancel runs (/mcp/)")
    for each in (seat, gates, ops):
        each.add_argument("--url", help=f"the server (default $JR2_URL, else {DEFAULT_URL})")
        each.add_argument("--token", help="an API token (default $JR2_TOKEN)")


def endpoint(server: str, url: str, run: str = "", agent: str = "") -> str:
    base = url.rstrip("/")
    if server == "seat":
        return f"{base}/mcp/runs/{quote(run, safe='')}/seats/{quote(agent, safe='')}/"
    return f"{base}/mcp/gates/" if server == "gates" else f"{base}/mcp/"


def mcp(
    server: str, run: str = "", agent: str = "", url: str | None = None, token: str | None = None, **options: Any
) -> int:
    from engine.cli import mcp_bridge

    url = url or os.environ.get("JR2_URL") or DEFAULT_URL
    token = token or os.environ.get("JR2_TOKEN") or ""
    if not token:
        raise CliError("jr2 mcp: an API token is needed: pass --token or set JR2_TOKEN (see `jr2 token create`)")
    if server == "seat":
        with Client.connect("mcp seat", url, token) as api:
            run = api.resolve(run)
    return mcp_bridge.run(endpoint(server, url, run, agent), token)
