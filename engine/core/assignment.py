"""Whom a Gate is assigned to: the `assign` of its invoke input, checked and resolved to data.

    {"src": "gate", "input": {"meta": {...}, "assign": ["user:ann", "group:editors"]}}
    {"src": "gate", "input": {"assign": lambda context: [f"user:{context['owner']}"]}}

An `assign` is a list of `"user:<username>"` and `"group:<group>"` strings, or a callable of the context that
returns one. A Gate with no `assign` may be answered by anyone who may answer Gates; an assigned Gate only by
those users, members of those groups, and superusers (the web edge resolves names to people:
`engine/runtime/assignment.py`). `create_machine` refuses an `assign` that is neither (`refuse_assign`); a callable
whose result is not such a list assigns the Gate to nobody but superusers, and says why (`resolve`). Pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from engine.core.errors import MachineError
from engine.core.seats import state_path
from engine.core.statechart.nodes import StateNode

__all__ = ["ASSIGN", "PREFIXES", "AssignError", "check", "resolve", "refuse_assign", "words"]

#: The key of a Gate's invoke input that assigns it.
ASSIGN = "assign"
#: The kinds of names an `assign` lists.
PREFIXES = ("user", "group")


class AssignError(ValueError):
    """An `assign` that is not a list of "user:<username>" and "group:<group>" strings, in words."""


def check(value: Any) -> tuple[str, ...]:
    """The `assign` list as a tuple, or AssignError naming what is wrong with it."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable) or isinstance(value, Mapping):
        raise AssignError(
            f'assign must be a list of "user:<username>" and "group:<group>" strings, or a callable of the '
            f"context that returns one; got {type(value).__name__} {value!r}"
        )
    out: list[str] = []
    for item in value:
        kind, sep, name = item.partition(":") if isinstance(item, str) else ("", "", "")
        if not sep or kind not in PREFIXES or not name.strip() or name != name.strip():
            raise AssignError(
                f'assign lists {item!r}, which is not "user:<username>" or "group:<group>" '
                "(a name after the colon, no spaces around it)"
            )
        if item not in out:
            out.append(item)
    return tuple(out)


def resolve(data: Mapping[str, Any], context: Any) -> tuple[tuple[str, ...] | None, str]:
    """A Gate's `assign` when it opens, from its evaluated invoke input: (the list, or None when it has none; the
    error in words when its callable returned something that is not a list of names, and then the list is empty,
    so only superusers may answer)."""
    if ASSIGN not in data or data[ASSIGN] is None:
        return None, ""
    value = data[ASSIGN]
    try:
        if callable(value):
            value = value(context)
        return check(value), ""
    except AssignError as err:
        return (), str(err)
    except Exception as err:  # the workflow's own callable raised: the Gate stays closed to all but superusers
        return (), f"assign raised {type(err).__name__}: {err}"


def refuse_assign(machine_id: str, nodes: Iterable[StateNode], slots: Mapping[str, Any]) -> None:
    """MachineError for a Gate whose invoke input (a dict) has an `assign` that is neither a list of names nor a
    callable. An input that is itself a callable is checked when the Gate opens."""
    for node in nodes:
        for inv in node.invoke:
            slot = slots.get(inv.src) if isinstance(inv.src, str) else None
            if getattr(slot, "kind", None) != "gate" or not isinstance(inv.input, Mapping):
                continue
            value = inv.input.get(ASSIGN)
            if value is None or callable(value):
                continue
            try:
                check(value)
            except AssignError as err:
                where = state_path(machine_id, node)
                raise MachineError(
                    f'machine "{machine_id}": the Gate in state "{where}" has a bad assign: {err}',
                    machine_id,
                    where,
                    None,
                ) from err


def words(assign: Iterable[str]) -> str:
    """Whom a Gate is assigned to, as a person reads it: 'the user ann and the group editors'."""
    names = [f"the {kind} {name}" for kind, _, name in (item.partition(":") for item in assign)]
    if not names:
        return "nobody (only superusers may answer it)"
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
