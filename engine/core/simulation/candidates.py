"""Every transition that could take an event in a configuration, in document order, each with its guard's result
and why it was (or would be) taken or not: what the simulator shows for the step just taken and for each event it
offers.

The Machine's own selection (engine/core/statechart/selection.py) decides what is taken; this module only asks each
candidate's guard again, one by one, to say why the others were not. A guard that reads the pick's input cannot
decide before the pick (probe.py's `ProbeEvent`): its result is "reads the pick's input".
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from engine.core.guard_words import ANONYMOUS, guard_text
from engine.core.routes import SeatGuard, SentBy
from engine.core.session.probe import PickInputRead
from engine.core.statechart.errors import GuardError
from engine.core.statechart.events import Event
from engine.core.statechart.guards import AndGuard, NotGuard, OrGuard, evaluate_guard
from engine.core.statechart.nodes import StateNode, Transition
from engine.core.statechart.selection import remove_conflicting_transitions, select_transitions
from engine.core.statechart.snapshot import Snapshot
from engine.core.words import exception_text

__all__ = [
    "Candidate",
    "GuardResult",
    "candidates",
    "guard_label",
    "guard_phrase",
    "TRUE",
    "FALSE",
    "READS_INPUT",
    "NO_GUARD",
]

TRUE, FALSE, NO_GUARD = "true", "false", "no guard"
READS_INPUT = "reads the pick's input: decided when the pick comes"


@dataclass(frozen=True)
class GuardResult:
    """One guard asked: what it is called and what it said."""

    label: str
    result: str

    def to_json(self) -> dict[str, Any]:
        return {"label": self.label, "result": self.result}


@dataclass(frozen=True)
class Candidate:
    """One transition of an active state for the event: its source, targets, guard result, each `sent_by`'s value,
    whether it was taken, and why not."""

    source: str
    event: str
    targets: tuple[str, ...]
    guard: GuardResult | None
    seat: str | None
    sent_by: tuple[GuardResult, ...]
    taken: bool
    why: str

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "event": self.event,
            "targets": list(self.targets),
            "guard": self.guard.to_json() if self.guard else None,
            "seat": self.seat,
            "sent_by": [s.to_json() for s in self.sent_by],
            "taken": self.taken,
            "why": self.why,
        }


def guard_label(guard: Any) -> str:
    """A guard as the author wrote it, in the graph's own words (engine/core/guard_words.py)."""
    return guard_text(guard) or ANONYMOUS


def guard_phrase(label: str, where: str | None = None) -> str:
    """`the guard ready` / `the guard of writing` (an inline guard has no name to give)."""
    named = "the guard" if label == ANONYMOUS else f"the guard [{label}]"
    return f"{named} of {where}" if where else named


def _ask(guard: Any, snapshot: Snapshot, event: Event) -> str:
    """A guard's result in words: true, false, reads the pick's input, or what it raised."""
    try:
        return TRUE if evaluate_guard(guard, snapshot.context, event, snapshot) else FALSE
    except PickInputRead:
        return READS_INPUT
    except Exception as err:
        if isinstance(err.__cause__, PickInputRead):
            return READS_INPUT
        return f"raised {exception_text(err)}"


def _sent_bys(guard: Any) -> Iterator[SentBy]:
    if isinstance(guard, SentBy):
        yield guard
    elif isinstance(guard, SeatGuard):
        yield from _sent_bys(guard.guard)
    elif isinstance(guard, (AndGuard, OrGuard)):
        for inner in guard.guards:
            yield from _sent_bys(inner)
    elif isinstance(guard, NotGuard):
        yield from _sent_bys(guard.guard)


def _seat(guard: Any, event: Event) -> str | None:
    """Why the seat rule keeps this party from sending through this `on` key, or None when it does not."""
    if not isinstance(guard, SeatGuard):
        return None
    sender = event.get("sender") if hasattr(event, "get") else None
    if sender is None or (sender.get("party"), sender.get("id")) in guard.senders:
        return None
    who = "Agent" if sender.get("party") == "agent" else "Gate"
    return f'the {who} "{sender.get("id")}" may not send through this key (not its seat)'


def _path(node: StateNode) -> str:
    return ".".join(node.path)


def _taken(snapshot: Snapshot, event: Event) -> tuple[list[Transition], str | None]:
    """The transitions the Machine takes for `event` (conflicts removed, as a microstep does), or the reason
    selection could not decide."""
    try:
        enabled = select_transitions(snapshot, event)
    except PickInputRead:
        return [], READS_INPUT
    except GuardError as err:
        if isinstance(err.__cause__, PickInputRead):
            return [], READS_INPUT
        return [], str(err)
    except Exception as err:
        return [], exception_text(err)
    return remove_conflicting_transitions(enabled, dict.fromkeys(snapshot.nodes), snapshot.history_value), None


def candidates(snapshot: Snapshot, event: Event) -> list[Candidate]:
    """Every transition of the active states for `event`, in document order, with why each was taken or not."""
    taken, undecided = _taken(snapshot, event)
    chosen = set(taken)
    enabled_from: dict[StateNode, Transition] = {}
    out: list[Candidate] = []
    rows: list[tuple[StateNode, Transition, GuardResult | None, str | None, tuple[GuardResult, ...]]] = []
    for node in sorted(snapshot.nodes, key=lambda n: n.order):
        for t in node.candidates(event["type"]):
            seat = _seat(t.guard, event)
            author = t.guard.guard if isinstance(t.guard, SeatGuard) else t.guard
            guard = None if author is None else GuardResult(guard_label(author), _ask(author, snapshot, event))
            sent = tuple(GuardResult(repr(s), _ask(s, snapshot, event)) for s in _sent_bys(author))
            rows.append((node, t, guard, seat, sent))
            if seat is None and (guard is None or guard.result == TRUE) and node not in enabled_from:
                enabled_from[node] = t
    for node, t, guard, seat, sent in rows:
        why = _why(t, node, guard, seat, chosen, enabled_from, taken, undecided)
        out.append(
            Candidate(
                _path(node) or "(root)",
                str(t.event_type),
                tuple(_path(target) or "(root)" for target in t.target or ()),
                guard,
                seat,
                sent,
                t in chosen,
                why,
            )
        )
    return out


def _why(
    t: Transition,
    node: StateNode,
    guard: GuardResult | None,
    seat: str | None,
    chosen: set[Transition],
    enabled_from: dict[StateNode, Transition],
    taken: list[Transition],
    undecided: str | None,
) -> str:
    if t in chosen:
        return "taken" if t.target is not None else "taken (no target: the state stays)"
    if seat is not None:
        return seat
    if guard is not None and guard.result == FALSE:
        return f"{guard_phrase(guard.label)} was false"
    if guard is not None and guard.result == READS_INPUT:
        return READS_INPUT
    if guard is not None and guard.result != TRUE:
        return f"{guard_phrase(guard.label)} {guard.result}"
    if undecided is not None:
        return f"not decided yet: {undecided}"
    first = enabled_from.get(node)
    if first is not None and first is not t:
        return f"an earlier transition of {_path(node) or '(root)'} for this event comes first (document order)"
    deeper = next((c for c in taken if node in c.source.ancestor_set), None)
    if deeper is not None:
        return f"{_path(deeper.source)} took the event first (the deepest active states answer first)"
    winner = next((c for c in taken if c.source is not node), None)
    if winner is not None:
        return f"it conflicts with the transition from {_path(winner.source) or '(root)'}, which wins"
    return "not selected"
