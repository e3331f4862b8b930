"""`engine.core.journal.replay`: a recorded journal re-run against a Machine, and the first divergence in words.

Runs are recorded by driving a `Session` of a notes-like Machine (an Agent, a Gate below it, a guard, an Effect, a
timer); the journal is then replayed against the same Machine and against edited ones (a guard, a target, the
door, an Effect taken away), as an engineer checks an edited workflow against real history.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, Field

from engine import Session, agent, answer, assign, define_event, effect, jr2_setup
from engine.core.journal.entries import EffectStarted
from engine.core.journal.replay import ReplayReport, brief, describe, numbered, replay, state_paths
from tests.engine.test_child_machines import build as build_study


class AskInput(BaseModel):
    question: str = Field(description="One question for the editor.")


class DoneInput(BaseModel):
    notes: str = Field(description="The release notes.")


class ReplyInput(BaseModel):
    text: str = Field(description="The answer.")


class Door(BaseModel):
    changes: str = Field(description="The changes.")


class StrictDoor(BaseModel):
    changes: str = Field(description="The changes.")
    audience: str = Field(description="Who reads the notes.")


ask = define_event(name="ask", input=AskInput, description="Ask the editor one question.")
done = define_event(name="done", input=DoneInput, description="Finish with the notes.")
reply = define_event(name="reply", input=ReplyInput, description="Answer the writer.")


def spell_check(text: str) -> dict[str, Any]:
    return {"ok": True}


def build(
    *,
    replies_needed: int = 1,
    guard: Any = None,
    ask_target: str = "asking",
    reply_target: str = "drafting",
    check: bool = True,
    prompt: str = "Write the notes.",
    door: type[BaseModel] = Door,
) -> Any:
    """The Machine under test; each keyword is one edit an engineer might make."""
    actors: dict[str, Any] = {"writer": agent(model="script/writer", instructions="Write release notes.")}
    if check:
        actors["check"] = effect.call(spell_check)
    checking: dict[str, Any] = (
        {"invoke": {"src": "check", "input": lambda context: {"text": context["notes"]}, "onDone": "cooling"}}
        if check
        else {"always": "cooling"}
    )
    return jr2_setup(events=[ask, done, reply], actors=actors).create_machine(
        {
            "id": "notes",
            "input": door,
            "context": lambda input: {"changes": input.changes, "replies": 0},
            "initial": "writing",
            "states": {
                "writing": {
                    "invoke": {"src": "writer", "input": {"prompt": prompt}},
                    "on": {
                        "done": {
                            "guard": guard or (lambda context: context["replies"] >= replies_needed),
                            "target": "checking",
                            "actions": assign(notes=lambda event: event.notes),
                        }
                    },
                    "initial": "drafting",
                    "states": {
                        "drafting": {"on": {"ask": ask_target}},
                        "asking": {
                            "invoke": {"src": "gate"},
                            "on": {
                                "reply": {
                                    "target": reply_target,
                                    "actions": [
                                        assign(replies=lambda context: context["replies"] + 1),
                                        answer(lambda event: "The editor replied: " + event.text),
                                    ],
                                }
                            },
                        },
                    },
                },
                "checking": checking,
                "cooling": {"after": {300: "published"}},
                "published": {"type": "final"},
            },
            "output": lambda context: {"notes": context.get("notes", "")},
        }
    )


def record(machine: Any = None) -> list[dict[str, Any]]:
    """A whole run as the database holds it: rows with `seq`, an Effect's start mark (host-only) included."""
    session = Session(machine or build(), {"changes": "One fix."})
    assert session.pick("writer", "ask", {"question": "Who reads these?"}).outcome == "outstanding"
    assert session.send_gate("writing.asking", "reply", {"text": "Operators"}).outcome == "delivered"
    assert session.pick("writer", "done", {"notes": "## Fixed\n\n- One fix, for operators."}).outcome == "ended"
    session.advance(40)
    [pending] = session.effects
    journal = list(session.journal)
    journal.append(EffectStarted(effect=pending.id, at=session.now, attempt=1))
    assert session.effect_done(pending.id, {"ok": True}).outcome == "delivered"
    session.advance(300)
    assert session.status == "done"
    journal.extend(session.journal[len(journal) - 1 :])
    return [
        {"seq": i, "kind": e.kind, "entry": e.to_json(), "out": getattr(e, "out", None) or ""}
        for i, e in enumerate(journal, 1)
    ]


def seq_of(journal: list[dict[str, Any]], kind: str, event: str | None = None) -> int:
    return next(row["seq"] for row in journal if row["kind"] == kind and row["entry"].get("event", event) == event)


# -- same ---------------------------------------------------------------------------------------------------------


def test_the_same_machine_replays_the_same_and_counts_steps_without_host_marks() -> None:
    journal = record()
    report = replay(build(), journal)
    assert report == ReplayReport(True, len(journal) - 1, message=f"same ({len(journal) - 1} steps)")
    assert str(report) == report.message


def test_bare_session_entries_replay_too_numbered_from_one() -> None:
    journal = [row["entry"] for row in record()]
    assert [seq for seq, _ in numbered(journal)] == list(range(1, len(journal) + 1))
    assert replay(build(), journal).same


def test_a_guard_rewritten_to_the_same_effect_still_replays_the_same() -> None:
    assert replay(build(guard=lambda context: context["replies"] > 0), record()).same


def test_a_child_machines_picks_replay() -> None:
    machine = build_study()
    session = Session(machine)
    assert session.pick("lead", "research", {"topic": "tides"}).outcome == "outstanding"
    assert session.pick("scouting/scout", "found", {"finding": "twice a day"}).outcome == "ended"
    assert session.pick("lead", "finish", {"report": "Tides come twice a day."}).outcome == "ended"
    assert replay(machine, session.journal).message == "same (4 steps)"


# -- divergences --------------------------------------------------------------------------------------------------


def test_a_stricter_guard_diverges_where_the_answer_changes_then_where_the_pick_no_longer_moves() -> None:
    journal = record()
    report = replay(build(replies_needed=2), journal)
    gate, finish = seq_of(journal, "gate", "reply"), seq_of(journal, "pick", "done")
    assert not report.same and report.step == gate
    assert report.state == "notes.writing.asking"
    assert report.message.startswith(
        f'step {gate}: the Gate writing.asking got reply {{text: "Operators"}}: now produces different outputs '
        '(now: the Gate writing.asking closes; the pick ask is answered "The editor replied: Operators" (allowed '
        "then: ask); then in notes.writing.drafting)"
    )
    assert report.later == (
        f'step {finish}: writer picked done {{notes: "## Fixed\\n\\n- One fix, for operators."}}: '
        "now unmoved: not allowed in notes.writing.drafting (allowed now: ask)"
    )
    assert report.message.endswith("; later, " + report.later)


def test_a_changed_target_makes_an_outstanding_pick_answered_at_once() -> None:
    journal = record()
    report = replay(build(ask_target="drafting"), journal)
    ask_seq = seq_of(journal, "pick", "ask")
    assert report.step == ask_seq and report.steps == 2
    assert report.message == (
        f'step {ask_seq}: writer picked ask {{question: "Who reads these?"}}: now answered where it was outstanding'
    )


def test_a_target_that_ends_the_run_early_says_the_run_had_ended() -> None:
    journal = record()
    report = replay(build(reply_target="#notes.published"), journal)
    assert report.step == seq_of(journal, "gate", "reply")
    assert "the run ends done" in report.message
    assert report.later.startswith(f"step {seq_of(journal, 'pick', 'done')}: writer picked done")
    assert report.later.endswith("now the run has already ended (done) before this step")


def test_a_gate_answer_that_finds_no_gate_is_refused_naming_the_state() -> None:
    journal = record()
    # without the ask pick the Gate never opens: drop it, the reply is the first entry that does not apply
    trimmed = [row for row in journal if not (row["kind"] == "pick" and row["entry"]["event"] == "ask")]
    report = replay(build(), trimmed)
    assert report.step == seq_of(journal, "gate", "reply")
    assert report.message.endswith(
        'now refused in notes.writing.drafting: no open Gate "writing.asking" (open Gates: [])'
    )


def test_an_effect_taken_away_refuses_its_result() -> None:
    journal = record()
    report = replay(build(check=False), journal)
    done_seq = seq_of(journal, "pick", "done")
    assert report.step == done_seq  # the pick's outputs differ first: no Effect is asked for
    effect_seq = seq_of(journal, "effect_done")
    assert report.later.startswith(f"step {effect_seq}: effect-1 finished: now")


def test_a_changed_prompt_changes_the_outputs_of_the_start() -> None:
    report = replay(build(prompt="Write short notes."), record())
    assert report.step == 1
    assert report.message.startswith(
        'step 1: the run started with {changes: "One fix."}: now produces different '
        "outputs (now: writer's Turn starts in notes.writing (allowed: ask)"
    )
    assert report.message.endswith("; every later entry still applies")


def test_a_door_that_refuses_the_recorded_input() -> None:
    report = replay(build(door=StrictDoor), record())
    assert report.message == (
        'step 1: the run started with {changes: "One fix."}: now refused: the door says audience: Field required'
    )


def test_a_journal_that_is_not_a_run_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="starts with its 'start' entry; this one is empty"):
        replay(build(), [])
    with pytest.raises(ValueError, match="starts with 'pick'"):
        replay(build(), [{"kind": "pick", "agent": "writer", "event": "ask"}])
    journal = record()
    with pytest.raises(ValueError, match="unknown kind 'teleport'"):
        replay(build(), [*journal[:2], {"seq": 99, "entry": {"kind": "teleport"}}])
    with pytest.raises(ValueError, match=r"journal entry 99 \(pick\) has no event"):
        replay(build(), [*journal[:2], {"seq": 99, "entry": {"kind": "pick", "agent": "writer"}}])


# -- words ----------------------------------------------------------------------------------------------------------


def test_entries_in_words() -> None:
    assert describe({"kind": "start", "input": {"changes": "x"}}) == 'the run started with {changes: "x"}'
    assert (
        describe({"kind": "pick", "agent": "writer", "event": "done", "params": {"notes": "n" * 60}})
        == f'writer picked done {{notes: "{"n" * 40}…"}}'
    )
    assert (
        describe({"kind": "gate", "gate": "writing.asking", "event": "reply", "params": {"text": "Ops"}})
        == 'the Gate writing.asking got reply {text: "Ops"}'
    )
    assert (
        describe({"kind": "effect_started", "effect": "effect-2", "attempt": 2}, {"effect-2": "tests"})
        == "effect-2 (tests) started (attempt 2)"
    )
    assert describe({"kind": "effect_done", "effect": "effect-2", "output": {}}) == "effect-2 finished"
    assert (
        describe({"kind": "effect_failed", "effect": "effect-2", "error": {"message": "exit 1"}})
        == "effect-2 failed: exit 1"
    )
    assert describe({"kind": "advance", "ms": 300.0}) == "300 ms passed"
    assert describe({"kind": "advance", "ms": 12_500.0}) == "12.5 s passed"
    assert (
        describe({"kind": "fault", "agent": "writer", "reason": "the model is down"})
        == "writer's Turn faulted: the model is down"
    )
    assert describe({"kind": "cancel"}) == "the run was cancelled"


def test_brief_keeps_a_value_on_one_short_line() -> None:
    assert brief({"a": 1, "b": [1, 2], "c": None}) == "{a: 1, b: [1, 2], c: null}"
    assert brief("two\nlines") == '"two\\nlines"'
    assert len(brief({f"k{i}": "v" * 40 for i in range(10)})) == 160


def test_state_paths() -> None:
    assert state_paths("notes", "published") == ["notes.published"]
    assert state_paths("notes", {"writing": "asking"}) == ["notes.writing.asking"]
    assert state_paths("p", {"a": {"x": "y"}, "b": "z"}) == ["p.a.x.y", "p.b.z"]
    assert state_paths("p", {"a": {}}) == ["p.a"]
