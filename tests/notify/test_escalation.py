"""The escalation example (workflows/escalation.py) on the simulated clock: each Gate's due time is the Machine's
own `after`, read from the run's timers; the reviewers' Gate escalates to the leads' when it is due, and that one is
rejected when it is due in turn. An answer in time ends it there."""

from __future__ import annotations

from engine import Session
from engine.core.statechart.clock import SimulatedClock
from workflows import escalation

MINUTE = 60_000
DOOR = {"title": "Ship 2.0", "escalate_after_minutes": 30, "reject_after_minutes": 60}


def started(at: float = 1_000_000) -> Session:
    return Session(escalation.machine, DOOR, clock=SimulatedClock(at))


def test_the_reviewers_gate_is_due_when_its_after_fires_and_then_escalates():
    session = started()
    assert [g.id for g in session.gates] == ["review"]
    assert session.gates[0].assign == ("group:reviewers",)
    assert session.gate_due("review") == 1_000_000 + 30 * MINUTE
    session.advance(30 * MINUTE - 1)
    assert [g.id for g in session.gates] == ["review"]
    session.advance(1)
    assert [g.id for g in session.gates] == ["escalation"]
    assert session.gates[0].assign == ("group:leads",)
    assert session.gate_due("escalation") == 1_000_000 + 90 * MINUTE
    assert session.gate_due("review") is None


def test_the_escalated_gate_is_rejected_when_nobody_answers_in_time():
    session = started()
    session.advance(90 * MINUTE - 1)
    assert session.status == "active" and [g.id for g in session.gates] == ["escalation"]
    session.advance(1)
    assert session.status == "done"
    assert session.output == {"decision": "rejected", "reason": "nobody answered in time"}


def test_an_answer_in_time_stops_the_timers():
    session = started()
    session.advance(10 * MINUTE)
    assert session.send_gate("review", "approve", {"note": "fine"}).outcome == "delivered"
    assert session.status == "done" and session.output == {"decision": "approved", "reason": ""}
    assert session.next_due() is None


def test_the_leads_can_reject_with_their_reason_after_the_escalation():
    session = started()
    session.advance(45 * MINUTE)
    assert session.send_gate("escalation", "reject", {"reason": "too risky"}).outcome == "delivered"
    assert session.output == {"decision": "rejected", "reason": "too risky"}


def test_the_due_time_survives_a_restore():
    session = started()
    session.advance(5 * MINUTE)
    again = Session.restore(escalation.machine, session.to_json())
    assert again.gate_due("review") == 1_000_000 + 30 * MINUTE
