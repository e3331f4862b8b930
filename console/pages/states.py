"""A Machine's states and Menus as its page lists them (the workflow page, a child Machine's page): per state, its
seats, its transitions and what it invokes, shown when the state is clicked on the graph; per Agent, its Menu's
events and, with a workspace, the workspace tools beside them, each input schema as JSON one can copy."""

from __future__ import annotations

import json
from typing import Any

from engine.core.guard_words import guard_text
from engine.core.slots import AgentSlot, EffectSlot, FailSlot, GateSlot
from engine.core.statechart.nodes import InvokeDef
from engine.core.workflow import Machine
from engine.runtime.workspace.tools import tool_defs

__all__ = ["state_details", "invoke_words", "menus", "schema_json"]


def invoke_words(machine: Machine, inv: InvokeDef) -> str:
    """What a state invokes in the glossary's words, as the graph's rows say it: `Agent reviewer`, `Gate desk`,
    `Effect tests (command)`, `Machine review`, `fail`; any other actor by its src."""
    src = inv.src if isinstance(inv.src, str) else None
    slot = machine.slots.get(src) if src is not None else None
    if isinstance(slot, AgentSlot):
        return f"Agent {src}"
    if isinstance(slot, GateSlot):
        return f"Gate {inv.id}"
    if isinstance(slot, EffectSlot):
        return f"Effect {src} ({slot.effect})"
    if isinstance(slot, Machine):
        return f"Machine {slot.id}"
    if isinstance(slot, FailSlot):
        return "fail"
    return f"invoke {src or getattr(inv.src, 'id', None) or '(inline)'}"


def state_details(machine: Machine) -> list[dict[str, Any]]:
    """Per state below the root, in document order: its path, type, invokes, seat line and transitions."""
    seats = {seat.state: seat for seat in machine.seats()}
    out = []
    for node in machine.nodes:
        if not node.path:
            continue
        transitions = []
        for t in node.all_transitions():
            target = ", ".join(".".join(x.path) or machine.id for x in t.target) if t.target else "(stays)"
            transitions.append({"event": t.event_type or "(always)", "target": target, "guard": guard_text(t.guard)})
        seat = seats.get(node.id)
        out.append(
            {
                "path": ".".join(node.path),
                "type": node.type,
                "invokes": [invoke_words(machine, inv) for inv in node.invoke],
                "seat": seat.line() if seat else "",
                "transitions": transitions,
            }
        )
    return out


def schema_json(schema: Any) -> str:
    """An input schema as formatted JSON, to read and to copy as JSON Schema."""
    return json.dumps(schema, indent=2, ensure_ascii=False, sort_keys=False)


def menus(machine: Machine) -> list[dict[str, Any]]:
    """Per Agent: its model, its Menu's events and, when its slot gives it a workspace, the workspace tools it has
    beside them (what the model is sent, as `engine/runtime/workspace/tools.py` builds it)."""
    out = []
    for agent in machine.menus():
        slot = machine.agents.get(agent)
        workspace = slot is not None and slot.workspace != "none"
        out.append(
            {
                "agent": agent,
                "model": slot.model if slot else "",
                "workspace": slot.workspace if workspace and slot else "",
                "events": [_tool(tool) for tool in machine.menu(agent)],
                "tools": [_tool(tool) for tool in tool_defs()] if workspace else [],
            }
        )
    return out


def _tool(tool: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": tool["name"],
        "description": tool.get("description", ""),
        "schema": schema_json(tool.get("input_schema", {})),
    }
