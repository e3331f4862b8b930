"""The Model Context Protocol side of jr2: MCP servers mounted beside Django and Channels under `/mcp/`.

`mount.py` routes a path to its server and checks the caller's token first (`auth.py`); `seat.py` serves an
Agent's seat in a run.
"""
