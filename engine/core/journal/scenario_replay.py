"""Replay a scenario (engine/core/scenarios.py) against the current Machine: does each input still apply, and does
the run still come to what the scenario expects?

    result = check(machine, scenario)
    result.ok, result.message       # "ok (5 steps)", or the first divergence in the words `jr2 replay` uses:
                                    # "step 3: writer picked done {}: now unmoved: not allowed in notes.writing
                                    # (allowed now: ask)", "the end (step 5): status now active, expected done"
    observe(machine, scenario)      # what the run comes to now, as expectations (`jr2 test --update`)
    from_journal(machine, "notes", journal)     # a recorded run saved as a scenario (`jr2 scenario save`)

A fresh Session is fed the door input and each input in order, as a replay feeds a journal: nothing is called, no
model, no Effect. A pick that says no outcome must move the Machine (unmoved or refused is a divergence); one that
says its outcome must have it. Allowed picks are read after the steps the scenario names, then the status, the
active states and the output at the end. Pure: no Django, no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from engine.core.journal.entries import Start
from engine.core.journal.replay import apply_said, describe, replay, state_paths, where_now
from engine.core.journal.trace import numbered, start_session, typed
from engine.core.outputs import RunState
from engine.core.scenarios import AllowedAt, Expectations, Scenario, input_of
from engine.core.session import Session, SessionError
from engine.core.words import brief
from engine.core.workflow import Machine

__all__ = ["ScenarioResult", "check", "observe", "from_journal", "ScenarioDiverged"]


class ScenarioDiverged(ValueError):
    """An input no longer applies, so there is no end to observe (`--update` cannot rewrite the expectations)."""


@dataclass(frozen=True)
class ScenarioResult:
    """ok: every input applied and every expectation held; message: "ok (N steps)" or the first divergence;
    step: the step it is at (None when ok); problems: every expectation that failed at the end, in words."""

    ok: bool
    steps: int
    message: str
    step: int | None = None
    problems: tuple[str, ...] = field(default=())

    def __str__(self) -> str:
        return self.message


@dataclass
class _Walk:
    """A scenario fed to a Session: where it stopped, and the Allowed picks read on the way."""

    session: Session | None
    steps: int
    diverged: str | None = None
    step: int | None = None
    allowed: dict[tuple[int, str], list[str]] = field(default_factory=dict)


def check(machine: Machine, scenario: Scenario) -> ScenarioResult:
    """Replay `scenario` against `machine` and compare it with its expectations (see the module docstring)."""
    walk = _walk(machine, scenario)
    if walk.diverged is not None:
        return ScenarioResult(False, walk.steps, walk.diverged, walk.step)
    assert walk.session is not None
    for point in sorted(scenario.expect.allowed, key=lambda p: p.step):
        now = walk.allowed.get((point.step, point.agent))
        if now is None:
            text = f"step {point.step}: the scenario has only {walk.steps} steps, so no Allowed picks to check there"
            return ScenarioResult(False, walk.steps, text, point.step)
        if now != list(point.picks):
            text = f"step {point.step}: {point.agent}'s Allowed picks now {_names(now)}, expected {_names(point.picks)}"
            return ScenarioResult(False, walk.steps, text, point.step)
    problems = tuple(_end_problems(walk.session, scenario.expect))
    if problems:
        text = f"the end (step {walk.steps}): " + "; ".join(problems)
        return ScenarioResult(False, walk.steps, text, walk.steps, problems)
    return ScenarioResult(True, walk.steps, f"ok ({walk.steps} step{'s' if walk.steps != 1 else ''})")


def observe(machine: Machine, scenario: Scenario) -> Expectations:
    """What the run comes to now: its status, states and output, and the Allowed picks at the steps and for the
    Agents the scenario checks. ScenarioDiverged when an input no longer applies."""
    walk = _walk(machine, scenario)
    if walk.diverged is not None or walk.session is None:
        raise ScenarioDiverged(walk.diverged or "the scenario did not start")
    session = walk.session
    allowed = [
        AllowedAt(step=p.step, agent=p.agent, picks=walk.allowed[(p.step, p.agent)])
        for p in scenario.expect.allowed
        if (p.step, p.agent) in walk.allowed
    ]
    return Expectations(
        status=str(session.status),  # type: ignore[arg-type]
        state=state_paths(machine.id, session.value),
        output=_plain(session.output),
        allowed=allowed,
    )


def _walk(machine: Machine, scenario: Scenario) -> _Walk:
    journal = scenario.journal()
    wanted: dict[int, set[str]] = {}
    for point in scenario.expect.allowed:
        wanted.setdefault(point.step, set()).add(point.agent)
    try:
        session = start_session(machine, journal[0])
    except SessionError:
        report = replay(machine, [journal[0].to_json()])  # the words `jr2 replay` says about a start that fails
        return _Walk(None, 1, report.message, 1)
    session.drain()
    walk = _Walk(session, 1)
    _read_allowed(walk, wanted)
    for step, entry in enumerate(journal[1:], start=2):
        walk.steps = step
        where = where_now(session)
        if session.status != RunState.ACTIVE:
            now: str | None = f"now the run has already ended ({session.status}) before this step"
        else:
            try:
                now = apply_said(session, entry, where, moved=True)
            except Exception as err:
                now = f"now raises {type(err).__name__}: {err}"
            session.drain()
        if now is not None:
            walk.diverged, walk.step = f"step {step}: {describe(entry)}: {now}", step
            return walk
        _read_allowed(walk, wanted)
    return walk


def _read_allowed(walk: _Walk, wanted: Mapping[int, set[str]]) -> None:
    assert walk.session is not None
    for agent in wanted.get(walk.steps, ()):
        walk.allowed[(walk.steps, agent)] = list(walk.session.allowed_picks(agent))


def _end_problems(session: Session, expect: Expectations) -> list[str]:
    problems = []
    if str(session.status) != expect.status:
        problems.append(f"status now {session.status}, expected {expect.status}")
    state = state_paths(session.machine.id, session.value)
    if state != list(expect.state):
        problems.append(f"state now {_names(state)}, expected {_names(expect.state)}")
    output = _plain(session.output)
    if output != expect.output:
        problems.append(f"output now {brief(output)}, expected {brief(expect.output)}")
    if session.reason and str(session.status) != expect.status:
        problems.append(f"the run says: {session.reason}")
    return problems


def _names(items: Any) -> str:
    return ", ".join(items) if items else "nothing"


def _plain(value: Any) -> Any:
    """The value as its JSON reads back, so a tuple and a list, or 1 and 1.0 in a file, compare alike."""
    return json.loads(json.dumps(value, default=str))


def from_journal(machine: Machine, workflow: str, journal: Any, description: str = "", allowed: Any = ()) -> Scenario:
    """A finished (or any) run saved as a scenario: its door input, and its recorded picks (with their outcomes),
    Gate answers, Effect results, time passing, faults and cancel as the inputs; the expectations are what the
    current Machine comes to with them. `allowed`: (step, agent) pairs whose Allowed picks to keep. ValueError
    for a forked run (it starts from another run's Session, not a door input) and ScenarioDiverged for a journal
    that no longer applies."""
    entries = [typed(entry, seq) for seq, entry in numbered(journal)]
    if not entries or not isinstance(entries[0], Start):
        kind = entries[0].kind if entries else "nothing"
        raise ValueError(f"only a run that began at its door can be saved as a scenario; this one starts with {kind}")
    inputs = [item for item in (input_of(entry) for entry in entries[1:]) if item is not None]
    draft = Scenario(
        version=1,
        workflow=workflow,
        description=description,
        input=_plain(entries[0].input),
        inputs=inputs,
        expect=Expectations(
            status="active", state=[], allowed=[AllowedAt(step=s, agent=a, picks=[]) for s, a in allowed]
        ),
    )
    return draft.model_copy(update={"expect": observe(machine, draft)})
