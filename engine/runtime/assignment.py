"""Whom an open Gate is assigned to, as people: the names of its `assign` (engine/core/assignment.py) resolved to
Django users and groups.

    assignees(gate.assign)          # [<User ann>, <User bo>]: the users named, and the members of the groups named
    may_answer(user, gate)          # True for superusers, for any answerer when the Gate has no `assign`, else
                                    # for the users named and the members of the groups named
    refusal(user, gate)             # None, or the words of the 403: 'Gate "review" is assigned to the group leads'

The Gate's own view (`GateView.assign`) is the list as the Machine gave it; names that match nobody are kept, so a
Gate assigned to a user not yet created waits for them. Who may answer Gates at all is the permission
`engine.answer_gate`, checked before this.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.contrib.auth import get_user_model
from django.db.models import Q

from engine.core.assignment import words
from engine.runtime.view import GateView

__all__ = ["assignees", "names_of", "may_answer", "refusal", "assigned_to", "mine"]


def names_of(assign: Iterable[str] | None) -> tuple[set[str], set[str]]:
    """The usernames and the group names an `assign` lists."""
    users: set[str] = set()
    groups: set[str] = set()
    for item in assign or ():
        kind, _, name = item.partition(":")
        (users if kind == "user" else groups if kind == "group" else set()).add(name)
    return users, groups


def assignees(assign: Iterable[str] | None) -> list[Any]:
    """The active users a Gate is assigned to: those named, and the members of the groups named, each once, by
    username. A Gate with no `assign` (None) is assigned to nobody in particular: []."""
    users, groups = names_of(assign)
    if not users and not groups:
        return []
    model = get_user_model()
    name_field = model.USERNAME_FIELD
    return list(
        model.objects.filter(Q(**{f"{name_field}__in": users}) | Q(groups__name__in=groups), is_active=True)
        .distinct()
        .order_by(name_field)
    )


def assigned_to(user: Any, assign: Iterable[str] | None) -> bool:
    """Whether `user` is named by `assign`, or is a member of a group it names (superusers are not special here)."""
    users, groups = names_of(assign)
    if getattr(user, "is_anonymous", True):
        return False
    if user.get_username() in users:
        return True
    return bool(groups) and user.groups.filter(name__in=groups).exists()


def may_answer(user: Any, gate: GateView) -> bool:
    """Whether `user` (who may answer Gates) may answer this one."""
    if gate.assign is None or getattr(user, "is_superuser", False):
        return True
    return assigned_to(user, gate.assign)


def refusal(user: Any, gate: GateView) -> str | None:
    """None when `user` may answer the Gate; else why not, naming whom it is assigned to."""
    if may_answer(user, gate):
        return None
    why = f" ({gate.assign_error})" if gate.assign_error else ""
    return (
        f'user "{user.get_username()}" may not answer Gate "{gate.id}": it is assigned to '
        f"{words(gate.assign or ())}{why}"
    )


def mine(user: Any) -> tuple[str, set[str]]:
    """The user's username and the names of their groups, for the inbox's filters."""
    return user.get_username(), set(user.groups.values_list("name", flat=True))
