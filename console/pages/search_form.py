"""The runs page's search form: each filter of engine/web/search.py with its "any of" and "none of" values as the URL
has them, and suggestions (states, events, Agents, Gates) from the workflows that load now."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.runtime.registry import workflows
from engine.web.search import FILTERS, Search

__all__ = ["search_context"]


def suggestions() -> dict[str, list[str]]:
    """Names a search can use, from every loaded Machine (a run of an older version may have others; typing them
    works too)."""
    states: set[str] = set()
    events: set[str] = set()
    agents: set[str] = set()
    gates: set[str] = set()
    for machine in workflows().machines.values():
        for node in machine.nodes:
            if node.path:
                states.add(".".join(node.path))
            for invoke in node.invoke:
                slot = machine.slots.get(invoke.src) if isinstance(invoke.src, str) else None
                if getattr(slot, "kind", "") == "gate":
                    gates.add(invoke.id)
        events.update(machine.events)
        agents.update(machine.agents)
    return {
        "in": sorted(states),
        "passed": sorted(states),
        "event": sorted(events),
        "agent": sorted(agents),
        "gate": sorted(gates),
    }


def search_context(params: Mapping[str, Any], search: Search) -> dict[str, Any]:
    suggest = suggestions()
    rows = [
        {
            "name": name,
            "label": label,
            "any": str(params.get(name) or ""),
            "none": str(params.get(f"not_{name}") or ""),
            "list": f"suggest-{name}" if name in suggest else "",
        }
        for name, label in FILTERS.items()
        if name not in ("workflow", "status")
    ]
    return {
        "search_rows": rows,
        "suggest": sorted(suggest.items()),
        "search_active": search.active,
        "not_workflow": str(params.get("not_workflow") or ""),
        "not_status": str(params.get("not_status") or ""),
        "after": str(params.get("after") or ""),
        "before": str(params.get("before") or ""),
    }
