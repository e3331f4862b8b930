"""What the edge checks of a Gate answer at once, against the run's committed view, before the answer is kept:
the Gate is open, it accepts the event, and the input is valid. The run checks again when the answer reaches it
(the Gate may have closed meanwhile); this check is what lets a web process refuse a wrong answer at once while
no worker holds the run, and accept a right one durably.

    refusal = check_gate_answer(machine, run.view, "review.asking", "approve", {"note": "ok"})   # None: fine
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.core.outputs import Delivery, DeliveryOutcome
from engine.core.session.validation import validate_input
from engine.core.workflow import Machine

__all__ = ["check_gate_answer"]


def check_gate_answer(
    machine: Machine, view: Mapping[str, Any], gate: str, event: str, params: Mapping[str, Any] | None
) -> Delivery | None:
    """The run's refusal of this answer as its Session would word it (codes no-gate, not-accepted, invalid), or
    None when the committed view takes it."""
    gates = {str(g.get("id")): g for g in view.get("gates", ()) if isinstance(g, Mapping)}
    found = gates.get(gate)
    if found is None:
        return Delivery(
            DeliveryOutcome.REFUSED, error=f'no open Gate "{gate}" (open Gates: {sorted(gates)})', code="no-gate"
        )
    accepts = tuple(found.get("accepts") or ())
    if event not in accepts:
        return Delivery(
            DeliveryOutcome.REFUSED,
            accepts=accepts,
            code="not-accepted",
            error=f'Gate "{gate}" does not accept "{event}" (it accepts {list(accepts)})',
        )
    owner, _ = machine.child_for(gate)
    if owner is None or event not in owner.events:
        return None  # the run decides: its Machine is not the one loaded here
    _, error = validate_input(owner, event, params)
    if error is not None:
        return Delivery(DeliveryOutcome.REFUSED, accepts=accepts, error=error, code="invalid")
    return None
