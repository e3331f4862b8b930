"""The names an Agent's workspace adds beside its Menu. Pure: the folder and its sandbox are the runtime's
(engine/runtime/workspace/); the Machine needs only the names, so that no event of a Menu can take one."""

from __future__ import annotations

__all__ = ["TOOL_NAMES", "AWAIT_TURN"]

#: The workspace tools an Agent with a workspace has beside its Menu, in the order they follow the Menu's events.
TOOL_NAMES = ("workspace_list", "workspace_read", "workspace_search", "workspace_write")

#: The one tool an MCP seat (engine/web/mcp/seat.py) adds after the Menu and the workspace tools: no event takes it.
AWAIT_TURN = "await_turn"
