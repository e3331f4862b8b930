"""A Machine's states as its page lists them (the workflow page, a child Machine's page): per state, its seats,
its transitions and what it invokes, shown when the state is clicked on the graph."""

from __future__ import annotations

from typing import Any

from console.pages.graph import guard_text
from engine.core.workflow import Machine

__all__ = ["state_details"]


def state_details(machine: Machine) -> list[dict[str, Any]]:
    """Per state below the root, in document order: its path, type, invokes, seat line and transitions."""
    seats = {seat.state: seat for seat in machine.seats()}
    out = []
    for node in machine.nodes:
        if not node.path:
            continue
        transitions = []
        for t in node.all_transitions():
            target = ", ".join(".".join(x.path) or machine.id for x in t.target) if t.target else "(no target)"
            transitions.append({"event": t.event_type or "(always)", "target": target, "guard": guard_text(t.guard)})
        seat = seats.get(node.id)
        out.append(
            {
                "path": ".".join(node.path),
                "type": node.type,
                "invokes": [f"{inv.src if isinstance(inv.src, str) else '(inline)'} ({inv.id})" for inv in node.invoke],
                "seat": seat.line() if seat else "",
                "transitions": transitions,
            }
        )
    return out
