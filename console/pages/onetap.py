"""The page a one-tap link opens (engine/runtime/links.py): one Gate, for one person, on a phone as well as on a
desk. It shows what the Machine chose to show (the Gate's `meta`), its due time, a form per event it accepts (built
from the event's schema, as everywhere in the Console) and, below them, the run's graph small, lit where the run is.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from console.pages.gates import EventForm, event_forms
from console.pages.runview import machine_of
from engine.models import GateRecord, Run
from engine.runtime.graph import lit_svg, machine_svg
from engine.runtime.view import RunView

__all__ = ["LinkPage", "link_page"]


@dataclass
class LinkPage:
    record: GateRecord
    run: Run
    forms: list[EventForm] = field(default_factory=list)
    svg: str = ""
    due_ms: float | None = None


def link_page(record: GateRecord, data: Any = None, only: str = "") -> LinkPage:
    """The page's data; `data` and `only` bind the form of one event (refused input shown with its errors)."""
    run = Run.objects.get(pk=record.run_id)
    view = RunView.of(run.view)
    gate = view.gate(record.gate)
    forms = event_forms(record)
    if only:
        bound = {f.event: f for f in event_forms(record, data, only)}
        forms = [bound.get(f.event, f) for f in forms]
    machine = machine_of(record.workflow)
    svg = lit_svg(machine_svg(machine), view.active, view.visited) if machine is not None else ""
    return LinkPage(record, run, forms, svg, gate.due if gate is not None else None)
