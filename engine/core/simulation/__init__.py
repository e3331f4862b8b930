"""Simulate a Machine by hand: the user plays every party on a simulated clock, and each step says which transitions
were candidates, what each guard said, and why the others were not taken (the Console's simulator page)."""

from engine.core.simulation.candidates import READS_INPUT, Candidate, GuardResult, candidates, guard_label
from engine.core.simulation.offers import Offer, PartyOffers, offers
from engine.core.simulation.simulator import (
    Delivered,
    Plan,
    PlanError,
    Simulation,
    Step,
    advance,
    advance_to_next_timer,
    from_journal,
    redo,
    reset,
    send,
    simulate,
    undo,
)

__all__ = [
    "READS_INPUT",
    "Candidate",
    "GuardResult",
    "candidates",
    "guard_label",
    "Offer",
    "PartyOffers",
    "offers",
    "Delivered",
    "Plan",
    "PlanError",
    "Simulation",
    "Step",
    "advance",
    "advance_to_next_timer",
    "from_journal",
    "redo",
    "reset",
    "send",
    "simulate",
    "undo",
]
