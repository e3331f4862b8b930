"""The simulator's pure core (engine/core/simulation): a run played by hand, each step's candidate transitions with
their guards' results, why each Menu event is not allowed, undo and redo, time, and a recorded run to go on from."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel

from engine import agent, define_event, jr2_setup
from engine.core.journal.entries import EffectDone, EffectFailed, GateAnswer, Pick
from engine.core.session import Session
from engine.core.simulation import (
    READS_INPUT,
    Plan,
    PlanError,
    Simulation,
    advance,
    advance_to_next_timer,
    from_journal,
    redo,
    reset,
    send,
    simulate,
    undo,
)
from engine.core.workflow import Machine
from tests.simulation.lab import machine

DOOR = {"topic": "tides"}


def offer(sim: Simulation, party: str, event: str):
    return next(o for g in sim.offers() if g.party == party for o in g.offers if o.event == event)


def play(*inputs) -> tuple[Plan, Simulation]:
    plan = Plan.new(DOOR)
    sim = simulate(machine, plan)
    for entry in inputs:
        plan, sim, refusal = send(machine, plan, entry)
        assert refusal is None, refusal
    return plan, sim


def effect_id(sim: Simulation) -> str:
    (effect,) = sim.session.effects
    return effect.id


def test_the_start_is_step_zero_with_the_offers_grouped_by_party() -> None:
    plan, sim = play()
    assert [s.index for s in sim.steps] == [0]
    assert sim.steps[0].active == ("researching", "researching.idle")
    groups = {(g.party, g.id): g for g in sim.offers()}
    assert set(groups) == {("agent", "researcher"), ("engine", "engine")}
    engine = [(o.kind, o.event) for o in groups[("engine", "engine")].offers]
    assert engine == [("fault", "agent.fault"), ("timer", "xstate.after.60000.lab.researching")]
    search = offer(sim, "agent", "search")
    assert search.allowed and search.schema is not None and "query" in search.schema["properties"]


def test_a_guard_shown_false_then_true_after_the_context_changes() -> None:
    plan, sim = play()
    finish = offer(sim, "agent", "finish")
    assert not finish.allowed
    assert finish.why == 'the guard [context["found"] > 0] of researching was false'
    (candidate,) = finish.candidates
    assert candidate.guard is not None and candidate.guard.result == "false" and not candidate.taken

    plan, sim = play(Pick(agent="researcher", event="search", params={"query": "moon"}))
    plan, sim, refusal = send(machine, plan, EffectDone(effect=effect_id(sim), output={"hits": 2}))
    assert refusal is None
    assert sim.steps[-1].changed == ("found",)
    assert sim.session.context["found"] == 1
    finish = offer(sim, "agent", "finish")
    assert finish.allowed and finish.why == ""
    assert finish.candidates[0].guard.result == "true"


def test_a_pick_refused_as_outstanding_changes_nothing() -> None:
    plan, sim = play(Pick(agent="researcher", event="search", params={"query": "moon"}))
    assert "outstanding" in sim.steps[-1].result
    finish = offer(sim, "agent", "finish")
    assert not finish.allowed and finish.why.startswith('the pick "search" is outstanding')
    again, _, refusal = send(machine, plan, Pick(agent="researcher", event="finish", params={"summary": "x"}))
    assert refusal is not None and 'the pick "search" is outstanding' in refusal
    assert again == plan
    (turn,) = sim.turns()
    assert turn["outstanding"]["event"] == "search"


def test_an_effect_resolved_by_hand_answers_the_pick_with_its_output() -> None:
    _, sim = play(Pick(agent="researcher", event="search", params={"query": "moon"}))
    kinds = [(o.kind, o.label) for g in sim.offers() if g.party == "effect" for o in g.offers]
    assert kinds == [("effect_done", "lookup: done"), ("effect_failed", "lookup: error")]
    _, sim = play(
        Pick(agent="researcher", event="search", params={"query": "moon"}),
        EffectDone(effect=effect_id(sim), output={"hits": 2}),
    )
    (turn,) = sim.turns()
    assert turn["outstanding"] is None and turn["answer"] == {"hits": 2}
    assert sim.steps[-1].active == ("researching", "researching.idle")
    (delivered,) = sim.steps[-1].deliveries
    assert delivered.type == "xstate.done.actor.0.lab.researching.searching"
    assert [c.taken for c in delivered.candidates] == [True]


def test_an_effect_failed_by_hand_gives_the_onerror_answer() -> None:
    _, first = play(Pick(agent="researcher", event="search", params={"query": "moon"}))
    _, sim = play(
        Pick(agent="researcher", event="search", params={"query": "moon"}),
        EffectFailed(effect=effect_id(first), error="offline"),
    )
    assert sim.turns()[0]["answer"] == "The search failed: offline"
    assert sim.session.context["found"] == 0


def test_a_timer_fires_when_the_clock_reaches_it() -> None:
    plan, sim = play()
    assert sim.next_due() == 60000
    plan, sim, refusal = advance(machine, plan, 1000)
    assert refusal is None and sim.now == 1000 and sim.session.status == "active"
    assert sim.next_due() == 59000
    plan, sim, refusal = advance_to_next_timer(machine, plan)
    assert refusal is None
    assert sim.session.status == "done" and sim.steps[-1].active == ("expired",)
    (delivered,) = sim.steps[-1].deliveries
    assert delivered.type == "xstate.after.60000.lab.researching"
    assert sim.now == 60000
    _, _, refusal = advance_to_next_timer(machine, plan)
    assert refusal == "no timer is set"


def test_undo_redo_and_reset_replay_the_inputs() -> None:
    plan, sim = play(Pick(agent="researcher", event="search", params={"query": "moon"}))
    back = undo(plan)
    assert back.inputs == () and len(back.undone) == 1
    assert simulate(machine, back).steps[-1].active == ("researching", "researching.idle")
    forward, refusal = redo(machine, back)
    assert refusal is None and forward.inputs == plan.inputs and forward.undone == ()
    assert simulate(machine, forward).steps[-1].active == ("researching", "researching.searching")
    assert redo(machine, forward) == (forward, "nothing to redo")
    assert undo(Plan.new(DOOR)) == Plan.new(DOOR)
    assert reset(plan).inputs == ()
    # a new input forgets what was undone
    fresh, _, _ = advance(machine, back, 5)
    assert fresh.undone == ()


def test_a_guard_that_reads_the_event_is_decided_when_the_answer_comes() -> None:
    _, first = play(Pick(agent="researcher", event="search", params={"query": "moon"}))
    plan, sim = play(
        Pick(agent="researcher", event="search", params={"query": "moon"}),
        EffectDone(effect=effect_id(first), output={}),
        Pick(agent="researcher", event="finish", params={"summary": "the moon"}),
    )
    assert sim.steps[-1].active == ("review",)
    approve = offer(sim, "gate", "approve")
    assert approve.allowed
    reads, sent = approve.candidates
    assert reads.guard is not None and reads.guard.result == READS_INPUT and reads.why == READS_INPUT
    assert [(s.label, s.result) for s in sent.sent_by] == [("sent_by('desk')", "true")]

    plan, sim, refusal = send(machine, plan, GateAnswer(gate="desk", event="approve", params={"ok": False}))
    assert refusal is None
    (delivered,) = sim.steps[-1].deliveries
    first_t, second = delivered.candidates
    assert (first_t.guard.result, first_t.taken, first_t.why) == ("false", False, "the guard [event.ok] was false")
    assert second.taken and second.sent_by[0].result == "true"
    assert sim.steps[-1].active == ("researching", "researching.idle")


def test_earlier_and_deeper_candidates_explain_the_others() -> None:
    _, first = play(Pick(agent="researcher", event="search", params={"query": "moon"}))
    plan, sim = play(
        Pick(agent="researcher", event="search", params={"query": "moon"}),
        EffectDone(effect=effect_id(first), output={}),
        Pick(agent="researcher", event="finish", params={"summary": "the moon"}),
    )
    _, sim, _ = send(machine, plan, GateAnswer(gate="desk", event="approve", params={"ok": True}))
    (delivered,) = sim.steps[-1].deliveries
    taken, later = delivered.candidates
    assert taken.taken and taken.guard.result == "true"
    assert not later.taken and "earlier transition of review" in later.why
    assert sim.session.status == "done"


def _modes() -> Machine:
    """An Agent with two modes: `back` is taken only in `b`, and `b` has a timer that moves it back inside."""

    class Empty(BaseModel):
        pass

    go = define_event(name="go", input=Empty, description="Go to b.")
    back = define_event(name="back", input=Empty, description="Go back to a.")
    return jr2_setup(
        events=[go, back], actors={"pilot": agent(model="script/pilot", instructions="Fly.", workspace="none")}
    ).create_machine(
        {
            "id": "modes",
            "initial": "flying",
            "states": {
                "flying": {
                    "invoke": {"src": "pilot", "input": {"prompt": "fly"}},
                    "initial": "b",
                    "states": {"a": {"on": {"go": "b"}}, "b": {"on": {"back": "a"}, "after": {1000: "a"}}},
                }
            },
        }
    )


def test_not_at_rest_then_not_taken_in_this_mode_then_outstanding() -> None:
    modes = _modes()
    plan = Plan.new(None)
    sim = simulate(modes, plan)
    assert sim.steps[-1].active == ("flying", "flying.b")
    back = offer(sim, "agent", "back")
    assert not back.allowed and sim.turns()[0]["outstanding"] is None
    assert back.why == "the Agent's state is not at Rest: a timer is set that could move it to another state inside it"
    plan, sim, refusal = advance_to_next_timer(modes, plan)
    assert refusal is None and sim.steps[-1].active == ("flying", "flying.a")
    back = offer(sim, "agent", "back")
    assert not back.allowed
    assert back.why == "not taken in this mode: no active state takes it (taken in flying.b)"
    assert offer(sim, "agent", "go").allowed
    plan, sim, refusal = send(modes, plan, Pick(agent="pilot", event="go", params={}))
    assert refusal is None and offer(sim, "agent", "back").why.startswith('the pick "go" is outstanding')


def test_the_plan_goes_to_json_and_back_and_bad_plans_are_refused() -> None:
    plan, _ = play(Pick(agent="researcher", event="search", params={"query": "moon"}))
    assert Plan.from_json(json.loads(json.dumps(plan.to_json()))) == plan
    with pytest.raises(PlanError, match="version 1"):
        Plan.from_json({"first": plan.first})
    with pytest.raises(PlanError, match="unknown kind"):
        Plan.from_json({**plan.to_json(), "inputs": [{"kind": "teleport"}]})
    with pytest.raises(PlanError, match="no input"):
        Plan.from_json({**plan.to_json(), "inputs": [plan.first]})
    with pytest.raises(PlanError, match="door refuses"):
        simulate(machine, Plan.new({"nope": 1}))
    with pytest.raises(PlanError, match="positive number"):
        advance(machine, plan, -5)


def test_a_recorded_run_goes_on_by_hand_from_step_n() -> None:
    session = Session(machine, DOOR)
    session.pick("researcher", "search", {"query": "moon"})
    (effect,) = session.effects
    session.effect_done(effect.id, {"hits": 3})
    journal = [{"seq": i, "entry": e.to_json()} for i, e in enumerate(session.journal, start=1)]
    plan = from_journal(machine, journal, 2, {"run": "abc", "step": 2})
    assert [e["kind"] for e in plan.inputs] == ["pick"] and plan.source == {"run": "abc", "step": 2}
    sim = simulate(machine, plan)
    assert sim.steps[-1].active == ("researching", "researching.searching")
    whole = simulate(machine, from_journal(machine, journal, 99))
    assert whole.session.context == session.context
    with pytest.raises(PlanError, match="before the run's start"):
        from_journal(machine, journal, 0)
