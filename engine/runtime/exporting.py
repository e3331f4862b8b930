"""A Machine's graph in each format it exports to, for the workflow page's links and `jr2 graph --format`.

graph_export(machine, "svg")       # str: the Console's drawing, a standalone SVG file
graph_export(machine, "png")       # bytes
graph_export(machine, "mermaid")   # str: stateDiagram-v2
graph_export(machine, "dot")       # str: the DOT source graphviz draws the others from
"""

from __future__ import annotations

from engine.core.workflow import Machine
from engine.runtime.graph import machine_dot, machine_png, machine_svg
from engine.runtime.mermaid import machine_mermaid

__all__ = ["FORMATS", "graph_export"]

FORMATS = ("svg", "png", "mermaid", "dot")
_PROLOG = '<?xml version="1.0" encoding="UTF-8" standalone="no"?>\n'


def graph_export(machine: Machine, fmt: str) -> str | bytes:
    """The graph in `fmt` (one of FORMATS): bytes for PNG, text for the others. An unknown format is a ValueError
    naming the ones there are."""
    if fmt == "svg":
        return _PROLOG + machine_svg(machine)
    if fmt == "png":
        return machine_png(machine)
    if fmt == "mermaid":
        return machine_mermaid(machine)
    if fmt == "dot":
        return machine_dot(machine)
    raise ValueError(f"no graph format {fmt!r}: one of {', '.join(FORMATS)}")
