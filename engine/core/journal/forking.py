"""Plan a fork: a new run that starts from the Session a run had after one of its steps, maybe with its context
edited or a different Gate answer; the parent run is only read.

    plan = plan_fork(machine, journal, step=3, parent="ab12cd34ef", now=wall_ms(),
                     context={...} or None, answer=("writing.asking", "reply", {"text": "Ops"}) or None)
    plan.session      # the fork's Session, ready for its next input
    plan.entry        # the fork's first journal entry: Fork(parent, step, context, session, at)
    plan.visited      # the states the parent passed through up to that step
    plan.pending      # Turn id -> the tool call whose pick was outstanding at that step
    plan.restarted    # Turn id -> the prompt rebuilt from the fork's context, for `restart=True or ["writer"]`

The Session at the step is rebuilt by walking the parent's journal (engine/core/journal/trace.py). Its clock is moved
to `now` with every timer, so a timer keeps the time it had left. An edited context must keep the keys and JSON types
of the context it replaces (the Machine's guards and actions read them; new keys are welcome), and a Gate answer must
be delivered by the Session at that step. An open Turn keeps the prompt it was given unless it is restarted
(engine/core/journal/restarting.py): then its prompt is rebuilt from the fork's context and the Fork entry names
it, so a replay starts from the same Turns. Anything else is a `ForkError` that names what is wrong; nothing is made.
Pure: no Django, no I/O.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from engine.core.journal.entries import Fork, Pick
from engine.core.journal.restarting import RestartError, restarted, which_restarts
from engine.core.journal.trace import numbered, trace
from engine.core.session import Session, SessionError
from engine.core.text import NUL_REFUSED, nul_at
from engine.core.workflow import Machine

__all__ = ["ForkError", "ForkPlan", "plan_fork", "context_problems"]


class ForkError(ValueError):
    """A fork that cannot be made as asked, in words; nothing was made."""


@dataclass
class ForkPlan:
    session: Session
    entry: Fork
    visited: list[str] = field(default_factory=list)
    pending: dict[str, str] = field(default_factory=dict)
    restarted: dict[str, str] = field(default_factory=dict)


def plan_fork(
    machine: Machine,
    journal: Iterable[Mapping[str, Any]],
    step: int,
    *,
    parent: str,
    now: float,
    context: Any = None,
    answer: tuple[str, str, Mapping[str, Any]] | None = None,
    restart: bool | Iterable[str] | None = None,
) -> ForkPlan:
    """The fork of `parent` after its journal entry `step` (see the module docstring). `context` None keeps the
    context; `answer` is (Gate id, event, input) for a Gate open at that step; `restart` names the Agents whose
    open Turn is restarted from the fork's context (True: every open Turn)."""
    entries = numbered(journal)
    last = entries[-1][0] if entries else 0
    if not isinstance(step, int) or isinstance(step, bool) or not 1 <= step <= last:
        raise ForkError(f"step must be a journal entry of run {parent}, from 1 to {last}; got {step!r}")
    visited: set[str] = set()
    calls: dict[str, str] = {}
    session: Session | None = None
    try:
        for found in trace(machine, [{"seq": s, "entry": e} for s, e in entries], until=step):
            session = found.session
            visited.update(session.active_paths)
            if isinstance(found.entry, Pick) and found.entry.outcome == "outstanding":
                calls[found.entry.turn or ""] = found.entry.call or ""
    except SessionError as err:
        raise ForkError(
            f"run {parent} does not replay on the workflow as it is now, so it cannot be forked: {err}"
        ) from err
    assert session is not None
    if session.status != "active":
        raise ForkError(
            f"after step {step} run {parent} had already ended ({session.status}); fork it from an earlier step"
        )
    data = _moved(session.to_json(), now - session.now)
    if context is not None:
        problems = context_problems(session.context, context)
        nul = nul_at(context)
        if nul is not None:
            problems.append(".".join(["context", *map(str, nul)]) + ": " + NUL_REFUSED)
        if problems:
            raise ForkError("the edited context is refused: " + "; ".join(problems))
        data["statechart"]["context"] = json.loads(json.dumps(context))
    try:
        agents = which_restarts(session, restart)
        prompts = restarted(machine, data, agents)
    except RestartError as err:
        raise ForkError(str(err)) from err
    if answer is not None:
        _check_answer(machine, data, answer, step)
    pending = {turn.id: calls[turn.id] for turn in session.turns if turn.outstanding is not None and calls.get(turn.id)}
    entry = Fork(parent=parent, step=step, context=context, session=data, restarted=agents or None, at=data["now"])
    return ForkPlan(Session.restore(machine, data), entry, sorted(visited), pending, prompts)


def _check_answer(
    machine: Machine, data: Mapping[str, Any], answer: tuple[str, str, Mapping[str, Any]], step: int
) -> None:
    """The Gate answer, tried on a copy of the fork's Session: refused now, refused with the same words later."""
    gate, event, params = answer
    probe = Session.restore(machine, data)
    open_gates = [g.id for g in probe.gates]
    if gate not in open_gates:
        raise ForkError(f'no Gate "{gate}" is open after step {step} (open Gates: {", ".join(open_gates) or "none"})')
    delivery = probe.send_gate(gate, event, params)
    if delivery.outcome != "delivered":
        accepts = f' (Gate "{gate}" accepts: {", ".join(delivery.accepts)})' if delivery.accepts else ""
        raise ForkError(
            f"the Gate answer is refused after step {step}: {delivery.error or 'the Machine did not take it'}{accepts}"
        )


def context_problems(old: Any, new: Any, where: str = "context") -> list[str]:
    """Why `new` cannot stand in for `old`, one line each: every key of `old` is kept with the same JSON type
    (null takes anything), recursively through objects. Empty when it can."""
    if old is None:
        return []
    if _kind(new) != _kind(old):
        return [f"{where} must be {_article(_kind(old))} like {_sample(old)}; got {_article(_kind(new))}"]
    if not isinstance(old, dict):
        return []
    problems = []
    for key, value in old.items():
        if key not in new:
            problems.append(f"{where}.{key} is missing (the Machine reads it; it was {_sample(value)})")
        else:
            problems.extend(context_problems(value, new[key], f"{where}.{key}"))
    return problems


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _article(kind: str) -> str:
    return ("an " if kind[0] in "aeiou" else "a ") + kind


def _sample(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 40 else text[:39] + "…"


def _moved(data: dict[str, Any], delta: float) -> dict[str, Any]:
    """A copy of a Session's JSON with its clock and every timer (child Machines' and statechart children's too)
    moved by `delta` ms."""
    out = copy.deepcopy(data)
    _move_session(out, delta)
    return out


def _move_session(data: dict[str, Any], delta: float) -> None:
    data["now"] = data["now"] + delta
    _move_timers(data.get("statechart"), delta)
    for sub in (data.get("subs") or {}).values():
        _move_session(sub, delta)


def _move_timers(snapshot: Any, delta: float) -> None:
    if not isinstance(snapshot, dict):
        return
    for timer in snapshot.get("timers") or ():
        if timer.get("started_at") is not None:
            timer["started_at"] = timer["started_at"] + delta
    for child in (snapshot.get("children") or {}).values():
        if isinstance(child, dict):
            _move_timers(child.get("snapshot"), delta)
