"""A run played by hand on a simulated clock: the user plays every party (each Agent's picks, each Gate's answers,
each Effect's result, time passing, a fault). It calls no model and runs no Effect.

What is kept is only a `Plan`: the journal's first entry (a `start` with the door input, or a recorded run's
`fork`) and the inputs accepted so far, as journal entries, plus the inputs undone (for redo). Everything shown is
recomputed from it, since a Session fed the same inputs is the same run: undo drops the last input, redo puts it
back, and loading a recorded run up to step N is its journal's first N entries.

    plan = Plan.new({"changes": "Fixed the login"})
    plan, refusal = send(machine, plan, Pick(agent="writer", event="ask", params={"question": "Who?"}))
    sim = simulate(machine, plan)
    sim.steps[-1].deliveries[0].candidates   # every candidate transition, with its guard's result
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from engine.core.journal.entries import (
    INPUT_KINDS,
    ROOT_KINDS,
    Advance,
    Entry,
    Fork,
    JournalError,
    Start,
)
from engine.core.outputs import Delivery, DeliveryOutcome, PickOutcome, PickResult
from engine.core.session import Session, SessionError
from engine.core.session.replaying import feed
from engine.core.simulation.candidates import Candidate, candidates
from engine.core.simulation.offers import PartyOffers, offers
from engine.core.statechart.clock import SimulatedClock
from engine.core.statechart.events import Event
from engine.core.statechart.snapshot import Snapshot
from engine.core.words import validation_text
from engine.core.workflow import Machine

__all__ = [
    "Plan",
    "PlanError",
    "Step",
    "Delivered",
    "Simulation",
    "simulate",
    "send",
    "undo",
    "redo",
    "reset",
    "advance",
    "advance_to_next_timer",
    "from_journal",
]

MAX_INPUTS = 2000  # a plan kept in a browser's session: far more than anyone plays by hand


class PlanError(ValueError):
    """A plan or an input that cannot be played; the message names what is wrong."""


@dataclass(frozen=True)
class Plan:
    """What the simulator keeps: the first journal entry, the inputs accepted since (journal entries as JSON), the
    inputs undone (the last one undone last), and where it came from (`{"run": id, "step": N}` for a recorded run)."""

    first: dict[str, Any]
    inputs: tuple[dict[str, Any], ...] = ()
    undone: tuple[dict[str, Any], ...] = ()
    source: dict[str, Any] | None = None

    @classmethod
    def new(cls, door: Any) -> Plan:
        return cls(Start(input=door, at=0.0).to_json())

    @property
    def door(self) -> Any:
        return self.first.get("input") if self.first.get("kind") == "start" else None

    def to_json(self) -> dict[str, Any]:
        return {
            "version": 1,
            "first": self.first,
            "inputs": list(self.inputs),
            "undone": list(self.undone),
            "source": self.source,
        }

    @classmethod
    def from_json(cls, data: Any) -> Plan:
        """A plan as `to_json` wrote it; PlanError names what is wrong."""
        if not isinstance(data, Mapping) or data.get("version") != 1:
            raise PlanError("a simulation plan is a JSON object with version 1")
        first = data.get("first")
        if not isinstance(first, Mapping) or first.get("kind") not in ROOT_KINDS:
            raise PlanError("a simulation plan starts with a 'start' or 'fork' entry")
        inputs, undone = data.get("inputs"), data.get("undone", [])
        if not isinstance(inputs, list) or not isinstance(undone, list):
            raise PlanError("a simulation plan's inputs and undone are lists of journal entries")
        if len(inputs) + len(undone) > MAX_INPUTS:
            raise PlanError(f"a simulation plan holds at most {MAX_INPUTS} inputs")
        for index, entry in enumerate([*inputs, *undone], start=1):
            _input_entry(entry, f"input {index}")
        source = data.get("source")
        return cls(
            dict(first),
            tuple(dict(e) for e in inputs),
            tuple(dict(e) for e in undone),
            dict(source) if isinstance(source, Mapping) else None,
        )


def _input_entry(data: Any, where: str) -> Entry:
    try:
        entry = Entry.from_json(data)
    except JournalError as err:
        raise PlanError(f"{where}: {err}") from err
    if entry.kind not in INPUT_KINDS:
        raise PlanError(f"{where}: a {entry.kind!r} entry is no input (inputs: {', '.join(sorted(INPUT_KINDS))})")
    return entry


@dataclass(frozen=True)
class Delivered:
    """One event the Machine took during a step, with every candidate transition for it in document order."""

    event: dict[str, Any]
    candidates: tuple[Candidate, ...]

    @property
    def type(self) -> str:
        return str(self.event.get("type"))

    def to_json(self) -> dict[str, Any]:
        return {"event": self.event, "candidates": [c.to_json() for c in self.candidates]}


@dataclass(frozen=True)
class Step:
    """The run after one input (step 0: after the start): what went in, what came back, what the Machine took,
    and the active states and context then, with the context keys the step changed."""

    index: int
    entry: dict[str, Any]
    words: str
    result: str
    deliveries: tuple[Delivered, ...]
    active: tuple[str, ...]
    context: Any
    changed: tuple[str, ...]
    now: float
    status: str

    def to_json(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["deliveries"] = [d.to_json() for d in self.deliveries]
        return data


class _Watched(Session):
    """A Session that remembers each event it runs to completion, with the snapshot it met, so the simulator can
    say for the step just taken why each candidate transition was or was not taken."""

    seen: list[tuple[Snapshot, Event]]

    def _setup(self, *args: Any, **kwargs: Any) -> None:
        self.seen = []
        super()._setup(*args, **kwargs)

    def _process(self, event: Event) -> None:
        self.seen.append((self.statechart_snapshot, event))
        super()._process(event)


@dataclass
class Simulation:
    """A plan played: the Session as it is now, and each step."""

    machine: Machine
    plan: Plan
    session: Session
    steps: list[Step] = field(default_factory=list)

    @property
    def now(self) -> float:
        """Simulated time since the start, in ms."""
        return self.session.now - float(self.plan.first.get("at") or 0.0)

    def offers(self) -> list[PartyOffers]:
        return offers(self.session)

    def turns(self) -> list[dict[str, Any]]:
        """Each open Turn: its outstanding pick, its Chain, and the answer the Agent would read when the work is
        done now (the last reply, unless an `answer` on the route says otherwise)."""
        out = []
        for turn in self.session.turns:
            outstanding = turn.outstanding
            out.append(
                {
                    "agent": turn.agent,
                    "path": turn.path,
                    "prompt": turn.prompt,
                    "outstanding": None if outstanding is None else {"id": outstanding.id, "event": outstanding.event},
                    "chain": list(turn.chain),
                    "would_read": turn.chain[-1] if outstanding is not None and turn.chain else None,
                    "answer": turn.answer,
                    "allowed": self.session.allowed_picks(turn.agent),
                    "notices": list(turn.notices),
                }
            )
        return out

    def notices(self) -> dict[str, list[Any]]:
        """Answers kept for a later Turn, by Agent."""
        return {k: list(v) for k, v in self.session.parties.notices.items() if v}

    def journal(self) -> list[dict[str, Any]]:
        return [{"kind": e.kind, "words": e.describe(), "entry": e.to_json()} for e in self.session.journal]

    def next_due(self) -> float | None:
        """When the next timer is due, in ms from now; None when none is set."""
        due = self.session.next_due() if self.session.status == "active" else None
        return None if due is None else max(0.0, due - self.session.now)


def _start(machine: Machine, first: Mapping[str, Any]) -> _Watched:
    try:
        root = Entry.from_json(first)
    except JournalError as err:
        raise PlanError(f"the first entry: {err}") from err
    if isinstance(root, Fork):
        try:
            return _Watched.restore(machine, root.session)  # type: ignore[return-value]
        except (SessionError, KeyError, TypeError) as err:
            raise PlanError(f"the fork cannot start on this Machine: {err}") from err
    assert isinstance(root, Start)
    try:
        return _Watched(machine, input=root.input, clock=SimulatedClock(root.at))
    except ValidationError as err:
        raise PlanError(f"the door refuses this input: {validation_text(err)}") from err


def _changed(before: Any, after: Any) -> tuple[str, ...]:
    if not isinstance(before, Mapping) or not isinstance(after, Mapping):
        return () if before == after else ("(the whole context)",)
    keys = dict.fromkeys([*before, *after])
    return tuple(str(k) for k in keys if before.get(k, _MISSING) != after.get(k, _MISSING))


_MISSING = object()


def _result_words(result: Any) -> str:
    if isinstance(result, PickResult):
        words = {
            PickOutcome.ANSWERED: f"answered: {result.answer!r}",
            PickOutcome.OUTSTANDING: f"outstanding ({result.pick}): its work is running",
            PickOutcome.ENDED: f"the Turn ended; the answer {result.answer!r} is kept",
            PickOutcome.UNMOVED: f"unmoved: {result.error}",
            PickOutcome.REFUSED: f"refused: {result.error}",
        }
        return words.get(result.outcome, str(result.outcome))
    if isinstance(result, Delivery):
        return "delivered" if result.outcome == DeliveryOutcome.DELIVERED else f"{result.outcome}: {result.error}"
    return "done"


def _step(index: int, session: _Watched, entry: Entry, result: Any, seen: int, before: Any, now0: float) -> Step:
    deliveries = tuple(
        Delivered(dict(event), tuple(candidates(snapshot, event))) for snapshot, event in session.seen[seen:]
    )
    return Step(
        index,
        entry.to_json(),
        entry.describe(),
        _result_words(result),
        deliveries,
        tuple(session.active_paths),
        session.context,
        _changed(before, session.context),
        session.now - now0,
        str(session.status),
    )


def simulate(machine: Machine, plan: Plan) -> Simulation:
    """The plan played from its first entry. PlanError names an input that no longer goes in (the Machine changed,
    or a recorded run's inputs do not fit it)."""
    session = _start(machine, plan.first)
    session.drain()
    now0 = float(plan.first.get("at") or 0.0)
    first = Entry.from_json(plan.first)
    steps = [
        Step(
            0,
            {"kind": first.kind},
            first.describe(),
            str(session.status),
            tuple(Delivered(dict(e), tuple(candidates(s, e))) for s, e in session.seen),
            tuple(session.active_paths),
            session.context,
            (),
            session.now - now0,
            str(session.status),
        )
    ]
    for index, data in enumerate(plan.inputs, start=1):
        entry = _input_entry(data, f"input {index}")
        seen, before, mark = len(session.seen), session.context, len(session.journal)
        result = feed(session, entry)
        session.drain()
        if len(session.journal) == mark:
            raise PlanError(f"input {index} ({entry.describe()}) does not go in now: {_result_words(result)}")
        steps.append(_step(index, session, entry, result, seen, before, now0))
    return Simulation(machine, plan, session, steps)


def send(machine: Machine, plan: Plan, entry: Entry | Mapping[str, Any]) -> tuple[Plan, Simulation, str | None]:
    """The plan with one more input, and the run after it; or, when the Session refuses it (nothing changes), the
    plan as it was and the refusal in words. A new input forgets what was undone."""
    typed = entry if isinstance(entry, Entry) else _input_entry(entry, "the input")
    if typed.kind not in INPUT_KINDS:
        raise PlanError(f"a {typed.kind!r} entry is no input")
    if len(plan.inputs) >= MAX_INPUTS:
        raise PlanError(f"a simulation holds at most {MAX_INPUTS} inputs; reset it to go on")
    sim = simulate(machine, plan)
    session = sim.session
    assert isinstance(session, _Watched)
    mark, seen, before = len(session.journal), len(session.seen), session.context
    result = feed(session, typed)
    session.drain()
    if len(session.journal) == mark:
        return plan, sim, _result_words(result)
    recorded = [_without_digest(e) for e in session.journal[mark:]]
    new = dataclasses.replace(plan, inputs=(*plan.inputs, *recorded), undone=())
    sim.plan = new
    now0 = float(plan.first.get("at") or 0.0)
    sim.steps.append(_step(len(plan.inputs) + 1, session, typed, result, seen, before, now0))
    if len(recorded) > 1:  # a catch-up `advance` came first: play the plan again so each entry is its own step
        return new, simulate(machine, new), None
    return new, sim, None


def _without_digest(entry: Entry) -> dict[str, Any]:
    data = entry.to_json()
    data.pop("out", None)
    return data


def undo(plan: Plan) -> Plan:
    """The plan without its last input (kept for redo); the same plan when there is none."""
    if not plan.inputs:
        return plan
    return dataclasses.replace(plan, inputs=plan.inputs[:-1], undone=(*plan.undone, plan.inputs[-1]))


def redo(machine: Machine, plan: Plan) -> tuple[Plan, str | None]:
    """The last undone input put back; the refusal in words when it no longer goes in."""
    if not plan.undone:
        return plan, "nothing to redo"
    new, _, refusal = send(machine, dataclasses.replace(plan, undone=()), plan.undone[-1])
    if refusal is not None:
        return plan, refusal
    return dataclasses.replace(new, undone=plan.undone[:-1]), None


def reset(plan: Plan) -> Plan:
    """Back to the first entry: every input gone, nothing to redo."""
    return dataclasses.replace(plan, inputs=(), undone=())


def advance(machine: Machine, plan: Plan, ms: float) -> tuple[Plan, Simulation, str | None]:
    """Let `ms` of simulated time pass: every timer that comes due fires, in order."""
    if not isinstance(ms, (int, float)) or ms != ms or ms <= 0 or ms == float("inf"):
        raise PlanError(f"advance takes a positive number of ms; got {ms!r}")
    return send(machine, plan, Advance(ms=float(ms)))


def advance_to_next_timer(machine: Machine, plan: Plan) -> tuple[Plan, Simulation, str | None]:
    """Let time pass until the next timer is due, and fire it."""
    sim = simulate(machine, plan)
    due = sim.next_due()
    if due is None:
        return plan, sim, "no timer is set"
    return send(machine, plan, Advance(ms=max(due, 0.0)))


def from_journal(
    machine: Machine, journal: Sequence[Mapping[str, Any]], step: int, source: dict[str, Any] | None = None
) -> Plan:
    """A recorded run's journal up to and including step `step` (the journal's seq: 1 is its start), as a plan to
    go on from by hand. Entries a host writes for itself (an Effect having started) are left out. PlanError when
    the steps do not go in on this Machine."""
    rows = [(int(row.get("seq", i)), row.get("entry", row)) for i, row in enumerate(journal, start=1)]
    if not rows:
        raise PlanError("the run has no journal")
    if step < 1:
        raise PlanError(f"step {step} is before the run's start (its steps are 1 to {rows[-1][0]})")
    first = dict(rows[0][1])
    if first.get("kind") not in ROOT_KINDS:
        raise PlanError(f"a run's journal starts with a 'start' or 'fork' entry; this one with {first.get('kind')!r}")
    inputs = tuple(_without_out(entry) for seq, entry in rows[1:] if seq <= step and entry.get("kind") in INPUT_KINDS)
    plan = Plan(first, inputs, (), source)
    simulate(machine, plan)
    return plan


def _without_out(entry: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in entry.items() if k != "out"}
