"""Restarting a fork's open Turns from its edited context: a Turn open at the fork's step was given a prompt built
from the context as it was then, so an edit of the context would silently miss it. A restarted Turn gets the prompt
(and dials) its state's invoke input gives on the fork's context, as entering the state would; the runtime then
starts its conversation afresh from that prompt (engine/runtime/forks.py).

    restarts = which_restarts(session, True or ["writer"])         # the Agents asked for, checked
    prompts = restarted(machine, data, restarts)                    # Turn id -> its new prompt; `data` is rewritten

The rebuilt prompts are written into the Session JSON the `Fork` entry carries, so a replay of the fork starts from
exactly the Turns the fork had. Pure: no Django, no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from engine.core.session import Session
from engine.core.slots import AgentSlot
from engine.core.statechart.callables import call_with
from engine.core.statechart.events import Event
from engine.core.workflow import Machine

__all__ = ["RestartError", "which_restarts", "restarted", "FORK_EVENT"]

#: The event a restarted Turn's invoke input reads as `event`: the fork, not the event that entered the state.
FORK_EVENT = "jr2.fork"


class RestartError(ValueError):
    """A restart that cannot be made as asked, in words."""


def which_restarts(session: Session, restart: bool | Iterable[str] | None) -> list[str]:
    """The Agents whose open Turn restarts: all of them for True, none for False/None, else the ones named, each
    checked to be an Agent with an open Turn and no outstanding pick (its answer belongs to the old conversation)."""
    open_turns = {turn.agent: turn for turn in session.turns}
    if restart is None or restart is False:
        return []
    if restart is True:
        names = sorted(open_turns)
    elif isinstance(restart, (str, bytes)) or not isinstance(restart, Iterable):
        raise RestartError(f"restart_turns must be true, false or a list of Agent names; got {restart!r}")
    else:
        names = []
        for name in restart:
            if not isinstance(name, str):
                raise RestartError(f"restart_turns names Agents by their name (text); got {name!r}")
            if name not in open_turns:
                agents = ", ".join(sorted(open_turns)) or "none"
                raise RestartError(f'the Agent "{name}" has no open Turn at that step (open Turns: {agents})')
            if name not in names:
                names.append(name)
    for name in names:
        pick = open_turns[name].outstanding
        if pick is not None:
            raise RestartError(
                f'the Turn of "{name}" cannot be restarted: its pick "{pick.event}" is outstanding at that step '
                "and its answer belongs to the conversation it was made in; fork from a step before that pick"
            )
    return names


def restarted(machine: Machine, data: dict[str, Any], agents: Iterable[str]) -> dict[str, str]:
    """Rebuild the prompt and dials of each named Agent's open Turn in the Session JSON `data` from its state's
    invoke input on `data`'s context. Returns Turn id -> its new prompt."""
    wanted = set(agents)
    context = data["statechart"].get("context")
    prompts: dict[str, str] = {}
    for turn in data.get("turns", ()):
        if turn.get("agent") not in wanted:
            continue
        value = _invoke_input(machine, turn, context)
        slot = machine.slots.get(turn["agent"])
        base = dict(slot.dials) if isinstance(slot, AgentSlot) else {}
        turn["prompt"] = str(value.get("prompt", ""))
        turn["dials"] = {**base, **dict(value.get("dials") or {})}
        prompts[turn["id"]] = turn["prompt"]
    return prompts


def _invoke_input(machine: Machine, turn: Mapping[str, Any], context: Any) -> Mapping[str, Any]:
    node = machine.statechart.id_map.get(turn.get("state", ""))
    invoke = next((inv for inv in node.invoke if inv.id == turn.get("invoke_id")), None) if node else None
    if invoke is None:
        raise RestartError(f'the Turn of "{turn.get("agent")}" has no invoke on its state to rebuild its prompt from')
    value = invoke.input
    if callable(value):
        try:
            value = call_with(value, context=context, event=Event(type=FORK_EVENT), self=None)
        except Exception as err:  # the workflow's own code, on a context the user edited
            raise RestartError(
                f'the prompt of "{turn.get("agent")}" cannot be rebuilt on the edited context: the input of its '
                f"state {node.id if node else ''} raised {type(err).__name__}: {err}"
            ) from err
    return value if isinstance(value, Mapping) else {}
