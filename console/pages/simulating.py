"""The simulator page's data: a Workflow's run played by hand (engine/core/simulation), kept as a plan in the user's
Django session, and each thing the page shows built from what the simulation computed.

The session holds one plan per workflow (`{"<workflow>": plan JSON}`); a plan that no longer plays on the current
Machine (the workflow was edited) is shown with its error and can be reset. Each event offered gets a form: a
pick's or a Gate's from its event's JSON schema, an Effect's result and a fault's reason from small fixed ones.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from django.http import HttpRequest

from console.pages.forms import SchemaForm
from engine.core.journal.entries import Advance, EffectDone, EffectFailed, Entry, Fault, GateAnswer, Pick
from engine.core.simulation import Offer, Plan, PlanError, Simulation, simulate
from engine.core.workflow import Machine
from engine.runtime import graph

__all__ = ["SESSION_KEY", "plan_of", "keep_plan", "forget_plan", "offer_form", "entry_for", "sim_page", "KINDS"]

SESSION_KEY = "jr2.simulate"

#: The inputs an offered event becomes, and the form each one's fields come from when its event has no schema.
KINDS = ("pick", "gate", "effect_done", "effect_failed", "fault", "timer")
_FIXED_SCHEMAS: dict[str, dict[str, Any]] = {
    "effect_done": {
        "properties": {"output": {"type": "object", "description": "The Effect's output, as JSON (empty: null)."}}
    },
    "effect_failed": {
        "properties": {"error": {"type": "string", "description": "The Effect's error, in words."}},
        "required": ["error"],
    },
    "fault": {
        "properties": {"reason": {"type": "string", "description": "Why the Agent's Turn cannot go on."}},
        "required": ["reason"],
    },
    "timer": {},
}


def plan_of(request: HttpRequest, name: str) -> tuple[Plan | None, str]:
    """The user's plan for this workflow, or None; and why a kept plan was dropped (it no longer reads)."""
    kept = request.session.get(SESSION_KEY, {}).get(name)
    if kept is None:
        return None, ""
    try:
        return Plan.from_json(kept), ""
    except PlanError as err:
        forget_plan(request, name)
        return None, f"the simulation kept in your session could not be read ({err}); start again"


def keep_plan(request: HttpRequest, name: str, plan: Plan) -> None:
    plans = dict(request.session.get(SESSION_KEY, {}))
    plans[name] = plan.to_json()
    request.session[SESSION_KEY] = plans


def forget_plan(request: HttpRequest, name: str) -> None:
    plans = dict(request.session.get(SESSION_KEY, {}))
    if plans.pop(name, None) is not None:
        request.session[SESSION_KEY] = plans


def _schema(offer: Offer) -> dict[str, Any]:
    return offer.schema if offer.schema is not None else _FIXED_SCHEMAS.get(offer.kind, {})


def offer_form(offer: Offer, index: int, data: Mapping[str, Any] | None = None) -> SchemaForm:
    """The form of one offered event; its fields are prefixed so many forms share one page."""
    prefix = f"o{index}"
    return SchemaForm(_schema(offer), data, prefix=prefix, auto_id=f"id_{prefix}_%s")


def find_offer(sim: Simulation, kind: str, by: str, event: str) -> Offer | None:
    for group in sim.offers():
        for offer in group.offers:
            if (offer.kind, offer.by, offer.event) == (kind, by, event):
                return offer
    return None


def entry_for(offer: Offer, values: Mapping[str, Any], now: float) -> Entry:
    """The input an offered event becomes, with the values of its form."""
    if offer.kind == "pick":
        return Pick(agent=offer.by, event=offer.event, params=dict(values))
    if offer.kind == "gate":
        return GateAnswer(gate=offer.by, event=offer.event, params=dict(values))
    if offer.kind == "effect_done":
        return EffectDone(effect=offer.by, output=values.get("output"))
    if offer.kind == "effect_failed":
        return EffectFailed(effect=offer.by, error=values.get("error", ""))
    if offer.kind == "fault":
        return Fault(agent=offer.by, reason=str(values.get("reason", "")))
    due = offer.due if offer.due is not None else now
    return Advance(ms=max(0.0, due - now))


def _party_title(group: Any) -> str:
    if group.party == "agent":
        return f"Agent {group.id}"
    if group.party == "gate":
        return f"Gate {group.id}"
    if group.party == "effect":
        return f"Effect {group.id}"
    return "The engine"


def _context_rows(context: Any, changed: tuple[str, ...]) -> list[dict[str, Any]]:
    if not isinstance(context, Mapping):
        return [{"key": "(context)", "json": _json(context), "changed": bool(changed)}]
    keys = list(context)
    rows = [{"key": str(k), "json": _json(context[k]), "changed": str(k) in changed} for k in keys]
    rows.extend({"key": k, "json": "(removed)", "changed": True} for k in changed if k not in context)
    return rows


def _json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=str)


def _compact(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def _turn_json(turn: dict[str, Any]) -> dict[str, Any]:
    """A Turn as the page shows it: replies, answers and notices as JSON (a string as itself)."""
    shown = dict(turn)
    shown["chain"] = [_compact(r) for r in turn["chain"]]
    shown["notices"] = [_compact(n) for n in turn["notices"]]
    for key in ("answer", "would_read"):
        shown[key] = None if turn[key] is None else _compact(turn[key])
    return shown


def sim_page(machine: Machine, plan: Plan | None, posted: Mapping[str, SchemaForm] | None = None) -> dict[str, Any]:
    """Everything the simulator shows for a plan: the offers with their forms, the step just taken, the context
    with its changed keys, seats and Allowed picks, Turns, notices, the journal; an `error` when the plan no
    longer plays on this Machine."""
    if plan is None:
        return {"plan": None, "active": [], "svg": graph.machine_svg(machine)}
    try:
        sim = simulate(machine, plan)
    except PlanError as err:
        return {"plan": plan, "error": str(err), "active": [], "svg": graph.machine_svg(machine)}
    session = sim.session
    last = sim.steps[-1]
    active = list(last.active)
    seat_paths = {f"{machine.id}.{p}" for p in active}
    groups, index = [], 0
    for group in sim.offers():
        rows = []
        for offer in group.offers:
            key = f"{offer.kind}|{offer.by}|{offer.event}"
            form = (posted or {}).get(key) or offer_form(offer, index)
            rows.append({"offer": offer, "form": form, "prefix": f"o{index}", "key": key})
            index += 1
        groups.append(
            {"party": group.party, "id": group.id, "state": group.state, "title": _party_title(group), "offers": rows}
        )
    visited = sorted({p for step in sim.steps for p in step.active} - set(active))
    return {
        "plan": plan,
        "sim": sim,
        "status": session.status,
        "reason": session.reason,
        "output": _json(session.output) if session.status == "done" else None,
        "now": sim.now,
        "next_due": sim.next_due(),
        "groups": groups,
        "last": last,
        "steps": sim.steps,
        "context_rows": _context_rows(last.context, last.changed),
        "changed": last.changed,
        "seats": [seat.line() for seat in machine.seats() if seat.path in seat_paths],
        "turns": [_turn_json(t) for t in sim.turns()],
        "notices": {agent: [_compact(n) for n in items] for agent, items in sim.notices().items()},
        "journal": sim.journal(),
        "active": active,
        "visited": visited,
        "svg": graph.lit_svg(graph.machine_svg(machine), active, visited),
        "can_undo": bool(plan.inputs),
        "can_redo": bool(plan.undone),
    }
