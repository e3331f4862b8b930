"""Whose Gates: the inbox's filters by assignment and claim, and the header's count of the Gates a person may answer.

The rule of who may answer is the engine's (engine/core/assignment.py `allows`); this module only reads the
inbox's records with it: `GateRecord.assigned` and its `assignees` (the names of its `assign`), and its claim.

    who = Answerer.of(request.user)
    mine(open_gates(), who, "groups")     # the open Gates assigned to one of the user's groups
    answerable(open_gates(), who)         # the Gates they may answer: the header's count
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.db.models import Q, QuerySet
from django.utils import timezone

from console.access import can
from engine.core.assignment import allows, words
from engine.models import GateRecord

__all__ = ["WHO", "Answerer", "GateWho", "gate_who", "mine", "answerable"]

#: The inbox's `who` filter: its value in the URL, and its words.
WHO = {
    "": "everyone's",
    "me": "assigned to me",
    "groups": "to my groups",
    "unassigned": "unassigned",
    "claimed": "claimed by me",
}


@dataclass(frozen=True)
class Answerer:
    """A person as the inbox asks about them: their name, their groups, whether they are a superuser and whether
    they may answer Gates at all."""

    username: str
    groups: frozenset[str]
    superuser: bool
    answering: bool
    operator: bool = False

    @classmethod
    def of(cls, user: Any) -> Answerer:
        if user is None or getattr(user, "is_anonymous", True):
            return cls("", frozenset(), False, False)
        groups = frozenset(user.groups.values_list("name", flat=True))
        return cls(user.get_username(), groups, bool(user.is_superuser), can(user, "answer"), can(user, "cancel"))

    def may_answer(self, assign: Iterable[str] | None) -> bool:
        return self.answering and allows(
            None if assign is None else tuple(assign), self.username, self.groups, self.superuser
        )


@dataclass(frozen=True)
class GateWho:
    """What a Gate's card says of who may answer it, and which claim buttons this person gets."""

    #: Whom it is assigned to in words, or "" when it is not assigned.
    assigned: str
    claimed_by: str
    claimed_until: dt.datetime | None
    #: This person may answer it now (assigned to them or unassigned, and not claimed by someone else).
    may_answer: bool
    #: Why not, in words, when they may answer Gates at all.
    why_not: str
    can_claim: bool
    can_release: bool
    can_break: bool


def gate_who(
    who: Answerer, assign: Iterable[str] | None, claimed_by: str = "", claimed_until: dt.datetime | None = None
) -> GateWho:
    """The card's words and buttons for one open Gate (`claimed_by` counts only until `claimed_until`)."""
    if claimed_until is None or claimed_until <= timezone.now():
        claimed_by, claimed_until = "", None
    assigned = words(tuple(assign)) if assign is not None else ""
    allowed = who.may_answer(assign)
    others = bool(claimed_by) and claimed_by != who.username
    why = ""
    if who.answering and not allowed:
        why = f"It is assigned to {assigned}; you may read it but not answer it."
    elif others:
        why = f"{claimed_by} has claimed it until {claimed_until:%H:%M} UTC; only they may answer it until then."
    return GateWho(
        assigned,
        claimed_by,
        claimed_until,
        allowed and not others,
        why,
        can_claim=allowed and not others,
        can_release=bool(claimed_by) and claimed_by == who.username,
        can_break=others and who.operator,
    )


def mine(rows: QuerySet[GateRecord], who: Answerer, which: str) -> QuerySet[GateRecord]:
    """`rows` narrowed by the `who` filter (WHO's keys; "" keeps them all)."""
    if which == "me":
        return rows.filter(assignees__kind="user", assignees__name=who.username).distinct()
    if which == "groups":
        return rows.filter(assignees__kind="group", assignees__name__in=who.groups).distinct()
    if which == "unassigned":
        return rows.filter(assigned=False)
    if which == "claimed":
        return rows.filter(claimed_by=who.username, claimed_until__gt=timezone.now())
    return rows


def answerable(rows: QuerySet[GateRecord], who: Answerer) -> QuerySet[GateRecord]:
    """The rows `who` may answer: none unless they may answer Gates; all for a superuser; else the unassigned ones
    and those assigned to them or to one of their groups."""
    if not who.answering:
        return rows.none()
    if who.superuser:
        return rows
    named = Q(assignees__kind="user", assignees__name=who.username) | Q(
        assignees__kind="group", assignees__name__in=who.groups
    )
    return rows.filter(Q(assigned=False) | named).distinct()
