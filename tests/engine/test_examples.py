"""Whole runs of the example Workflows (notes, code_review, triage) through `engine.Session`.

Each run is driven only by scripted inputs: picks, Gate events, Effect results and faults. The tests read what the
Session tells the world (`drain()`), the Allowed picks, the seats and Menus, and check that the journal replays to
the same snapshot.
"""

from __future__ import annotations

import json
import sys

import pytest

from engine import Session
from engine.core.outputs import (
    EffectCancelled,
    EffectRequested,
    GateClosed,
    GateOpened,
    NoticeKept,
    PickAnswered,
    PickStopped,
    RunEnded,
    TurnEnded,
    TurnStarted,
)
from tests.engine.helpers import of
from workflows import code_review, notes, triage

EXAMPLES = {"notes": notes, "code_review": code_review, "triage": triage}


def one(outputs, cls):
    found = of(outputs, cls)
    assert len(found) == 1, f"expected one {cls.__name__} in {outputs}"
    return found[0]


def assert_replays(session):
    """The journal alone rebuilds the run: same snapshot, same journal."""
    replayed = Session.replay(session.machine, session.journal)
    assert replayed.snapshot == session.snapshot
    assert replayed.journal == session.journal
    return replayed


# -- every example -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_example_is_a_workflow_named_after_its_file_with_no_warnings(name):
    module = EXAMPLES[name]
    assert module.__doc__ and module.__doc__.strip(), f"{name} must start with a docstring that says what it shows"
    assert module.machine.id == name
    assert module.machine.warnings() == []


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_example_menu_is_sorted_and_each_tool_is_its_event(name):
    machine = EXAMPLES[name].machine
    assert machine.menus(), f"{name} has no Agent"
    for slot, names in machine.menus().items():
        assert names == sorted(names)
        tools = machine.menu(slot)
        assert [tool["name"] for tool in tools] == names
        for tool in tools:
            event = machine.events[tool["name"]]
            assert tool["description"] == event.description
            assert tool["input_schema"] == event.input.model_json_schema()
        assert json.loads(machine.menu_json(slot)) == tools


# -- notes ---------------------------------------------------------------------------------------------------

CHANGES = "Faster start-up\nA --quiet flag"


def start_notes():
    session = Session(notes.machine, {"changes": CHANGES})
    return session, session.drain()


def test_notes_seats_give_ask_and_done_to_the_writer_and_reply_to_the_gate():
    assert notes.machine.seats_text() == (
        'seats: workflow "notes" — who may send what, per state\n'
        "  notes.writing agent:writer: [ask, done]\n"
        "  notes.writing.asking gate: [reply]"
    )
    assert notes.machine.menus() == {"writer": ["ask", "done"]}


def test_notes_allowed_picks_follow_the_seed_table():
    session, _ = start_notes()
    # drafting, before a reply: the guard on `done` is false
    assert session.value == {"writing": "drafting"}
    assert session.allowed_picks("writer") == ["ask"]

    assert session.pick("writer", "ask", {"question": "Who is the audience?"}).outcome == "outstanding"
    # asking: the `ask` pick is outstanding while the Gate is open
    assert session.value == {"writing": "asking"}
    assert session.allowed_picks("writer") == []
    before = session.snapshot
    refused = session.pick("writer", "done", {"notes": "too early"})
    assert refused.outcome == "refused"
    assert "outstanding" in refused.error
    assert session.snapshot == before
    # a run in progress replays too: the open Gate and the outstanding pick come back
    assert [g.id for g in assert_replays(session).gates] == [g.id for g in session.gates]

    gate = session.gates[0].id
    assert session.send_gate(gate, "reply", {"text": "Operators."}).outcome == "delivered"
    # drafting, after one reply: the guard on `done` is now true
    assert session.value == {"writing": "drafting"}
    assert session.allowed_picks("writer") == ["ask", "done"]


def test_notes_whole_run_asks_twice_then_publishes():
    session, started = start_notes()
    turn = one(started, TurnStarted)
    assert (turn.agent, turn.state, turn.continues, turn.notices, turn.allowed) == (
        "writer",
        "notes.writing",
        False,
        (),
        ("ask",),
    )
    assert turn.prompt == "Write the release notes for these changes:\n" + CHANGES
    assert session.menu("writer") == notes.machine.menu("writer")

    # `done` is on the Menu but not allowed yet: nothing moves, the answer gives the Allowed picks
    unmoved = session.pick("writer", "done", {"notes": "early"})
    assert (unmoved.outcome, unmoved.allowed) == ("unmoved", ("ask",))
    assert session.value == {"writing": "drafting"}
    # not on the Menu: refused
    assert session.pick("writer", "reply", {"text": "hi"}).outcome == "refused"
    assert session.drain() == []

    for round_, (question, text) in enumerate(
        [("Who reads these?", "Operators."), ("Mention the flag's default?", "Yes, it is off.")], start=1
    ):
        picked = session.pick("writer", "ask", {"question": question})
        assert picked.outcome == "outstanding"
        opened = one(session.drain(), GateOpened)
        assert opened.accepts == ("reply",)
        assert opened.meta == {"question": question}
        assert [g.id for g in session.gates] == [opened.gate]
        # the Gate does not take the writer's `done`
        assert session.send_gate(opened.gate, "done", {"notes": "x"}).outcome == "refused"

        assert session.send_gate(opened.gate, "reply", {"text": text}).outcome == "delivered"
        outputs = session.drain()
        assert one(outputs, GateClosed).gate == opened.gate
        answered = one(outputs, PickAnswered)
        assert (answered.turn, answered.pick, answered.event) == (turn.turn, picked.pick, "ask")
        assert answered.answer == "The editor replied: " + text
        assert answered.allowed == ("ask", "done")
        assert session.context["replies"] == round_
        assert session.gates == []

    ended = session.pick("writer", "done", {"notes": "## 1.1\n- Faster start-up"})
    assert ended.outcome == "ended"
    outputs = session.drain()
    assert [(t.turn, t.state) for t in of(outputs, TurnEnded)] == [(turn.turn, "notes.writing")]
    run_end = one(outputs, RunEnded)
    assert (run_end.status, run_end.output) == ("done", {"notes": "## 1.1\n- Faster start-up"})
    assert (session.status, session.output, session.value) == (
        "done",
        {"notes": "## 1.1\n- Faster start-up"},
        "published",
    )
    assert session.turns == []
    assert session.pick("writer", "ask", {"question": "more?"}).outcome == "refused"
    assert_replays(session)


def test_notes_pick_with_bad_input_is_refused_with_the_error_and_allowed_picks():
    session, _ = start_notes()
    before = session.snapshot
    bad = session.pick("writer", "ask", {"topic": "no question field"})
    assert bad.outcome == "refused"
    assert "question" in bad.error
    assert bad.allowed == ("ask",)
    assert session.pick("writer", "ask", {"question": "q", "sender": {"party": "gate", "id": "x"}}).outcome == "refused"
    assert session.snapshot == before
    assert [entry.kind for entry in session.journal] == ["start"]


def test_notes_fault_while_asking_fails_the_run_and_stops_the_pick():
    session, started = start_notes()
    turn = one(started, TurnStarted)
    picked = session.pick("writer", "ask", {"question": "Who reads these?"})
    gate = one(session.drain(), GateOpened).gate

    session.fault("writer", "the model stopped answering")
    outputs = session.drain()
    stopped = one(outputs, PickStopped)
    assert (stopped.turn, stopped.pick, stopped.event) == (turn.turn, picked.pick, "ask")
    assert "did not finish" in stopped.answer
    assert one(outputs, GateClosed).gate == gate
    assert one(outputs, TurnEnded).state == "notes.writing"
    run_end = one(outputs, RunEnded)
    assert (run_end.status, run_end.reason) == (
        "failed",
        "the Agent's Turn could not go on: the model stopped answering",
    )
    assert (session.status, session.value) == ("failed", "failed")
    assert session.send_gate(gate, "reply", {"text": "late"}).outcome == "refused"
    assert_replays(session)


# -- code_review -----------------------------------------------------------------------------------------------

TASK = "Add a --verbose flag to the CLI."


def start_review():
    """A code_review run past its checkout: the Effect that copies the project into the coder's workspace."""
    session = Session(code_review.machine, {"task": TASK})
    checkout = one(session.drain(), EffectRequested)
    assert (checkout.slot, checkout.spec["workspace"], checkout.idempotent) == ("checkout", "coder", True)
    assert checkout.spec["argv"][-1] == code_review.REPO
    assert session.effect_done(checkout.effect, {"exit_code": 0}).outcome == "delivered"
    return session, session.drain()


def test_code_review_seats_and_menus():
    assert code_review.machine.seats_text() == (
        'seats: workflow "code_review" — who may send what, per state\n'
        "  code_review.coding agent:coder: [submit]\n"
        "  code_review.reviewing agent:reviewer: [approve, note, request_changes, run_tests]\n"
        "  code_review.fixing agent:coder: [submit]"
    )
    assert code_review.machine.menus() == {
        "coder": ["submit"],
        "reviewer": ["approve", "note", "request_changes", "run_tests"],
    }


def test_code_review_whole_run_with_one_round_of_changes():
    session, started = start_review()
    coding = one(started, TurnStarted)
    assert (coding.agent, coding.state, coding.continues, coding.notices, coding.allowed) == (
        "coder",
        "code_review.coding",
        True,
        (),
        ("submit",),
    )
    assert TASK in coding.prompt
    assert session.allowed_picks("reviewer") == []
    assert session.pick("reviewer", "approve", {"comment": "x"}).outcome == "refused"

    # submit leaves `coding`: the Turn ends and its answer is kept as a notice for the coder
    submitted = session.pick("coder", "submit", {"summary": "Adds --verbose to cli.py."})
    assert (submitted.outcome, submitted.answer) == ("ended", "Your change went to the reviewer (round 1).")
    outputs = session.drain()
    assert one(outputs, TurnEnded).state == "code_review.coding"
    assert one(outputs, NoticeKept).notice == "Your change went to the reviewer (round 1)."
    review = one(outputs, TurnStarted)
    assert (review.agent, review.state, review.continues, review.notices) == (
        "reviewer",
        "code_review.reviewing",
        True,
        (),
    )
    assert "Adds --verbose to cli.py." in review.prompt
    # approve waits for the tests
    assert review.allowed == ("note", "request_changes", "run_tests")
    unmoved = session.pick("reviewer", "approve", {"comment": "Looks fine."})
    assert (unmoved.outcome, unmoved.allowed) == ("unmoved", ("note", "request_changes", "run_tests"))

    # a targetless pick is answered at once and keeps the Turn
    noted = session.pick("reviewer", "note", {"finding": "cli.py:40 the flag has no help text"})
    assert (noted.outcome, noted.answer) == ("answered", "Noted. Findings so far: 1.")
    assert noted.allowed == ("note", "request_changes", "run_tests")

    # run_tests runs the Effect; its input is built from the pick
    ran = session.pick("reviewer", "run_tests", {"focus": "tests/test_cli.py"})
    assert ran.outcome == "outstanding"
    requested = one(session.drain(), EffectRequested)
    assert (requested.slot, requested.effect_kind, requested.state) == (
        "tests",
        "command",
        "code_review.reviewing.testing",
    )
    assert requested.spec["argv"] == [sys.executable, "-m", "pytest", "-q"]
    assert (requested.spec["workspace"], requested.spec["cwd"]) == ("coder", None)
    assert requested.input == {"args": ["tests/test_cli.py"]}
    assert session.allowed_picks("reviewer") == []
    # every other pick is refused while it is outstanding, one that would end the Turn included
    for event, params in [("request_changes", {"notes": "x"}), ("note", {"finding": "y"})]:
        refused = session.pick("reviewer", event, params)
        assert refused.outcome == "refused" and "outstanding" in refused.error
    assert session.drain() == []

    report = {"exit_code": 1, "stdout": "1 failed: test_verbose_help"}
    assert session.effect_done(requested.effect, report).outcome == "delivered"
    answered = one(session.drain(), PickAnswered)
    assert (answered.turn, answered.pick, answered.event) == (review.turn, ran.pick, "run_tests")
    assert answered.answer == report
    assert answered.allowed == ("approve", "note", "request_changes", "run_tests")
    assert session.effect_done(requested.effect, report).outcome == "refused"

    # request_changes leaves `reviewing`; `fixing` prompts the coder from the context
    sent_back = session.pick("reviewer", "request_changes", {"notes": "Add help text; fix the failing test."})
    assert sent_back.outcome == "ended"
    assert sent_back.answer == (
        "The change went back to the coder with your notes:\nAdd help text; fix the failing test."
    )
    outputs = session.drain()
    assert one(outputs, TurnEnded).state == "code_review.reviewing"
    fixing = one(outputs, TurnStarted)
    assert (fixing.agent, fixing.state, fixing.continues) == ("coder", "code_review.fixing", True)
    assert fixing.notices == ("Your change went to the reviewer (round 1).",)
    assert "Add help text; fix the failing test." in fixing.prompt
    assert "cli.py:40 the flag has no help text" in fixing.prompt
    assert fixing.allowed == ("submit",)
    assert session.context["rounds"] == 1

    resubmitted = session.pick("coder", "submit", {"summary": "Help text added; test fixed."})
    assert (resubmitted.outcome, resubmitted.answer) == ("ended", "Your change went to the reviewer (round 2).")
    outputs = session.drain()
    assert one(outputs, TurnEnded).state == "code_review.fixing"
    second = one(outputs, TurnStarted)
    assert second.agent == "reviewer"
    assert second.notices == (
        "The change went back to the coder with your notes:\nAdd help text; fix the failing test.",
    )
    # a new change: the earlier test run no longer counts
    assert second.allowed == ("note", "request_changes", "run_tests")

    # a failed test run is not a reply: `answer` on onError tells the reviewer, approve stays out
    ran = session.pick("reviewer", "run_tests", {})
    effect = one(session.drain(), EffectRequested)
    assert effect.input == {"args": []}
    assert session.effect_failed(effect.effect, "pytest: command not found").outcome == "delivered"
    answered = one(session.drain(), PickAnswered)
    assert answered.pick == ran.pick
    assert answered.answer == "The tests could not be run: pytest: command not found"
    assert answered.allowed == ("note", "request_changes", "run_tests")

    ran = session.pick("reviewer", "run_tests", {"focus": "-k verbose"})
    effect = one(session.drain(), EffectRequested)
    assert effect.input == {"args": ["-k", "verbose"]}
    session.effect_done(effect.effect, {"exit_code": 0, "stdout": "12 passed"})
    answered = one(session.drain(), PickAnswered)
    assert answered.answer == {"exit_code": 0, "stdout": "12 passed"}
    assert "approve" in answered.allowed

    approved = session.pick("reviewer", "approve", {"comment": "Tests pass; help text is clear."})
    assert approved.outcome == "ended"
    outputs = session.drain()
    assert [t.state for t in of(outputs, TurnEnded)] == ["code_review.reviewing"]
    run_end = one(outputs, RunEnded)
    expected = {"summary": "Help text added; test fixed.", "verdict": "Tests pass; help text is clear.", "rounds": 1}
    assert (run_end.status, run_end.output) == ("done", expected)
    assert (session.status, session.output, session.value) == ("done", expected, "approved")
    assert session.turns == []
    assert_replays(session)


def test_code_review_coder_cannot_pick_while_the_reviewer_has_the_turn():
    session, _ = start_review()
    session.pick("coder", "submit", {"summary": "S"})
    session.drain()
    result = session.pick("coder", "submit", {"summary": "again"})
    assert result.outcome == "refused"
    assert session.value == {"reviewing": "reading"}
    assert session.pick("reviewer", "submit", {"summary": "not mine"}).outcome == "refused"


def test_code_review_fault_while_tests_run_cancels_the_effect_and_fails_the_run():
    session, _ = start_review()
    session.pick("coder", "submit", {"summary": "S"})
    review = one(session.drain(), TurnStarted)
    ran = session.pick("reviewer", "run_tests", {})
    effect = one(session.drain(), EffectRequested)
    assert_replays(session)

    session.fault("reviewer", "too many tool calls")
    outputs = session.drain()
    assert one(outputs, EffectCancelled).effect == effect.effect
    stopped = one(outputs, PickStopped)
    assert (stopped.turn, stopped.pick) == (review.turn, ran.pick)
    assert one(outputs, TurnEnded).state == "code_review.reviewing"
    run_end = one(outputs, RunEnded)
    assert (run_end.status, run_end.reason) == ("failed", "an Agent's Turn could not go on: too many tool calls")
    assert (session.status, session.value) == ("failed", "failed")
    assert session.effect_done(effect.effect, {"exit_code": 0}).outcome == "refused"
    assert_replays(session)


# -- triage --------------------------------------------------------------------------------------------------

ISSUE = {"title": "Crash on save", "body": "Saving a file with a long name crashes the app."}


def start_triage():
    session = Session(triage.machine, ISSUE)
    return session, session.drain()


def test_triage_seats_give_label_to_both_parties_and_withdraw_only_to_the_desk():
    assert triage.machine.seats_text() == (
        'seats: workflow "triage" — who may send what, per state\n'
        "  triage.triaging gate:desk: [confirm, label, withdraw]\n"
        "  triage.triaging.sorting agent:triager: [find_duplicates, label]"
    )
    assert triage.machine.menus() == {"triager": ["find_duplicates", "label"]}


def test_triage_start_opens_the_desk_and_the_agent_turn_below_it():
    session, started = start_triage()
    opened = one(started, GateOpened)
    assert (opened.gate, opened.state, opened.accepts) == ("desk", "triage.triaging", ("confirm", "label", "withdraw"))
    assert opened.meta == {"title": ISSUE["title"], "body": ISSUE["body"]}
    turn = one(started, TurnStarted)
    assert (turn.agent, turn.state, turn.continues, turn.allowed) == (
        "triager",
        "triage.triaging.sorting",
        False,
        ("find_duplicates", "label"),
    )
    assert ISSUE["body"] in turn.prompt
    # the root `withdraw` is kept from the Agent by its audience
    refused = session.pick("triager", "withdraw", {"reason": "dup"})
    assert refused.outcome == "refused" and "not on the Menu" in refused.error
    # the desk accepts `confirm`, but nothing is proposed yet
    assert session.send_gate("desk", "confirm", {}).outcome == "unmoved"
    assert session.value == {"triaging": {"sorting": "reading"}}


def test_triage_agent_label_is_a_proposal_the_desk_confirms():
    session, started = start_triage()
    turn = one(started, TurnStarted)

    searched = session.pick("triager", "find_duplicates", {"query": "crash save"})
    assert searched.outcome == "outstanding"
    requested = one(session.drain(), EffectRequested)
    assert (requested.slot, requested.effect_kind, requested.input, requested.idempotent) == (
        "duplicates",
        "call",
        {"query": "crash save"},
        True,
    )
    assert session.allowed_picks("triager") == []
    assert session.pick("triager", "label", {"label": "bug", "reason": "r"}).outcome == "refused"

    matches = [{"id": 7, "title": "Crash on save with long names"}]
    session.effect_done(requested.effect, matches)
    answered = one(session.drain(), PickAnswered)
    assert (answered.pick, answered.answer, answered.allowed) == (searched.pick, matches, ("find_duplicates", "label"))

    # the Agent's label goes past sent_by("desk") to the proposal; it leaves `sorting`, so the Turn ends
    proposed = session.pick("triager", "label", {"label": "bug", "reason": "Same as #7."})
    assert proposed.outcome == "ended"
    outputs = session.drain()
    assert [(t.turn, t.state) for t in of(outputs, TurnEnded)] == [(turn.turn, "triage.triaging.sorting")]
    # `triaging` is re-entered, so the desk's Gate opens again, and its meta shows what the desk confirms
    assert [g.gate for g in of(outputs, GateClosed)] == ["desk"]
    assert one(outputs, GateOpened).meta == {
        "title": session.context["title"],
        "body": session.context["body"],
        "proposed label": "bug",
        "because": "Same as #7.",
    }
    assert session.value == {"triaging": "proposed"}
    assert session.context["proposal"] == {"label": "bug", "reason": "Same as #7."}
    assert [g.id for g in session.gates] == ["desk"]

    assert session.send_gate("desk", "confirm", {}).outcome == "delivered"
    outputs = session.drain()
    assert one(outputs, GateClosed).gate == "desk"
    expected = {"label": "bug", "labelled_by": "triager", "withdrawn": None}
    assert (one(outputs, RunEnded).status, one(outputs, RunEnded).output) == ("done", expected)
    assert (session.status, session.output, session.value) == ("done", expected, "labelled")
    assert_replays(session)


def test_triage_desk_label_is_final_and_stops_the_agents_search():
    session, started = start_triage()
    turn = one(started, TurnStarted)
    searched = session.pick("triager", "find_duplicates", {"query": "crash"})
    effect = one(session.drain(), EffectRequested)

    # the same `label` from the desk passes sent_by("desk"): it leaves `triaging` while the search runs
    assert (
        session.send_gate("desk", "label", {"label": "question", "reason": "Works as designed."}).outcome == "delivered"
    )
    outputs = session.drain()
    assert one(outputs, EffectCancelled).effect == effect.effect
    stopped = one(outputs, PickStopped)
    assert (stopped.turn, stopped.pick, stopped.event) == (turn.turn, searched.pick, "find_duplicates")
    assert "did not finish" in stopped.answer
    assert one(outputs, TurnEnded).state == "triage.triaging.sorting"
    assert one(outputs, GateClosed).gate == "desk"
    expected = {"label": "question", "labelled_by": "desk", "withdrawn": None}
    assert one(outputs, RunEnded).output == expected
    assert (session.status, session.output) == ("done", expected)
    assert session.context["proposal"] is None
    assert session.effect_done(effect.effect, []).outcome == "refused"
    assert_replays(session)


def test_triage_desk_overrides_a_proposal():
    session, _ = start_triage()
    session.pick("triager", "label", {"label": "feature", "reason": "Wants long names."})
    session.drain()
    assert session.value == {"triaging": "proposed"}
    assert session.send_gate("desk", "label", {"label": "bug", "reason": "It crashes."}).outcome == "delivered"
    assert (session.status, session.output) == ("done", {"label": "bug", "labelled_by": "desk", "withdrawn": None})
    assert_replays(session)


def test_triage_failed_search_is_answered_from_on_error():
    session, _ = start_triage()
    searched = session.pick("triager", "find_duplicates", {"query": "crash"})
    effect = one(session.drain(), EffectRequested)
    session.effect_failed(effect.effect, "tracker unreachable")
    answered = one(session.drain(), PickAnswered)
    assert (answered.pick, answered.answer) == (searched.pick, "The search failed: tracker unreachable")
    assert answered.allowed == ("find_duplicates", "label")
    assert session.value == {"triaging": {"sorting": "reading"}}
    assert_replays(session)


def test_triage_only_the_desk_withdraws():
    session, _ = start_triage()
    assert session.send_gate("desk", "withdraw", {"reason": "Reported twice."}).outcome == "delivered"
    outputs = session.drain()
    assert one(outputs, TurnEnded).state == "triage.triaging.sorting"
    assert one(outputs, GateClosed).gate == "desk"
    expected = {"label": None, "labelled_by": None, "withdrawn": "Reported twice."}
    assert (session.status, session.output, session.value) == ("done", expected, "withdrawn")
    assert_replays(session)


def test_triage_fault_fails_the_run():
    session, _ = start_triage()
    session.fault("triager", "no pick after two re-prompts")
    outputs = session.drain()
    assert one(outputs, TurnEnded).state == "triage.triaging.sorting"
    assert one(outputs, GateClosed).gate == "desk"
    run_end = one(outputs, RunEnded)
    assert (run_end.status, run_end.reason) == (
        "failed",
        "the triage Agent's Turn could not go on: no pick after two re-prompts",
    )
    assert (session.status, session.value) == ("failed", "failed")
    assert session.send_gate("desk", "confirm", {}).outcome == "refused"
    assert_replays(session)
