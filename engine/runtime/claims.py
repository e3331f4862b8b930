"""Claims on open Gates: a person holds a Gate for `JR2_CLAIM_MINUTES`, and meanwhile only they may answer it.

A claim is an input of the run like any other: it goes through the run's inbox (the driver applies its inputs one
at a time, so of two claims at once exactly one holds), it is journaled (`Claim`, a host's mark the Session skips),
and the claims in force are in the view the step commits (`view["claims"]`), which is where a resumed driver finds
them again. Three actions:

    claim     hold the Gate until now + minutes (the holder may claim again to extend it)
    release   the holder lets it go
    break     an operator ends someone's claim

Each gives a `Delivery`: delivered, or refused with a `code` ("claimed": someone else holds it, naming them and
when their claim ends; "not-claimed": there is no claim to release or break; "no-gate": the Gate is not open).
A Gate's answer is refused the same way ("claimed") while someone else holds it (`refusal`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from engine.core.journal.entries import Claim
from engine.core.outputs import Delivery, DeliveryOutcome
from engine.core.words import clock_text

__all__ = ["ACTIONS", "Held", "apply_claim", "refusal", "held_words", "claims_json", "claims_of"]

ACTIONS = ("claim", "release", "break")


@dataclass(frozen=True)
class Held:
    """A claim in force: who holds the Gate and until when (seconds since the epoch)."""

    by: str
    until: float

    def to_json(self) -> dict[str, Any]:
        return {"by": self.by, "until": self.until}


def held_words(gate: str, held: Held) -> str:
    return f'Gate "{gate}" is claimed by {held.by} until {clock_text(held.until)}'


def _refused(code: str, error: str) -> Delivery:
    return Delivery(DeliveryOutcome.REFUSED, error=error, code=code)


def in_force(claims: Mapping[str, Held], gate: str, now: float) -> Held | None:
    """The claim on `gate` that has not ended by `now` (seconds), or None."""
    held = claims.get(gate)
    return held if held is not None and held.until > now else None


def refusal(claims: Mapping[str, Held], gate: str, by: str | None, now: float) -> Delivery | None:
    """A Gate answer from `by` while someone else holds the Gate: refused, naming the holder and when it ends."""
    held = in_force(claims, gate, now)
    if held is None or held.by == by:
        return None
    return _refused("claimed", f"{held_words(gate, held)}; only they may answer it until then")


def apply_claim(
    claims: dict[str, Held],
    open_gates: Iterable[str],
    args: Mapping[str, Any],
    now: float,
    minutes: float,
) -> tuple[Delivery, Claim | None]:
    """Apply one claim input (`gate`, `action`, `by`, maybe `door`) at `now` (seconds): changes `claims` and gives
    the sender's answer and the journal entry, or a refusal and no entry."""
    gate, action, by = str(args["gate"]), str(args.get("action") or "claim"), str(args.get("by") or "")
    door = args.get("door")
    if action not in ACTIONS:
        return _refused("invalid", f"unknown claim action {action!r} (actions: {', '.join(ACTIONS)})"), None
    if gate not in set(open_gates):
        claims.pop(gate, None)
        return _refused("no-gate", f'no open Gate "{gate}"'), None
    held = in_force(claims, gate, now)
    if action == "claim":
        if held is not None and held.by != by:
            return _refused("claimed", held_words(gate, held)), None
        claims[gate] = Held(by, now + minutes * 60)
        entry = Claim(gate=gate, action="claim", by=by, until=claims[gate].until, door=door)
        return Delivery(DeliveryOutcome.DELIVERED), entry
    if held is None:
        claims.pop(gate, None)
        return _refused("not-claimed", f'Gate "{gate}" is not claimed; there is nothing to {action}'), None
    if action == "release" and held.by != by:
        return _refused(
            "claimed", f"{held_words(gate, held)}; only they may release it (an operator may break it)"
        ), None
    del claims[gate]
    entry = Claim(gate=gate, action=action, by=by, holder=held.by if action == "break" else None, door=door)
    return Delivery(DeliveryOutcome.DELIVERED), entry


def claims_json(claims: Mapping[str, Held], open_gates: Iterable[str], now: float) -> dict[str, dict[str, Any]]:
    """The claims in force on open Gates, for the committed view."""
    return {gate: held.to_json() for gate in open_gates if (held := in_force(claims, gate, now)) is not None}


def claims_of(view: Mapping[str, Any] | None) -> dict[str, Held]:
    """The claims a committed view holds (what a resumed driver starts from)."""
    found = (view or {}).get("claims") or {}
    return {str(gate): Held(str(c.get("by", "")), float(c.get("until", 0))) for gate, c in found.items()}


def refusal_on_view(view: Mapping[str, Any] | None, gate: str, action: str, by: str, now: float) -> Delivery | None:
    """What `apply_claim` would refuse, read off a run's committed view: the web edges refuse it before anything is
    relayed, so a refused claim writes nothing (the host still decides one that races a change)."""
    open_gates = [str(g.get("id")) for g in (view or {}).get("gates", ()) if isinstance(g, Mapping)]
    delivery, _ = apply_claim(dict(claims_of(view)), open_gates, {"gate": gate, "action": action, "by": by}, now, 0.0)
    return delivery if delivery.outcome == DeliveryOutcome.REFUSED else None
