"""Restarting a fork's open Turns from its edited context (engine/core/journal/restarting.py): the prompt is rebuilt
from the edited context as entering the state would build it, the Fork entry names the restart, and the fork's
journal replays exactly; without the option the Turn keeps its old prompt; a bad restart is refused in words."""

from __future__ import annotations

from typing import Any

import pytest

from engine import Session
from engine.core.journal.entries import Entry, Fork
from engine.core.journal.forking import ForkError, plan_fork
from engine.core.journal.replay import replay
from engine.core.journal.trace import trace
from workflows import notes

DOOR = {"changes": "Faster start-up."}
EDITED = {"changes": "A new export button.", "replies": 1, "question": "Who reads these?"}


def recorded() -> list[dict[str, Any]]:
    """The parent: the writer asks, the editor replies (the writer's Turn is still open, nothing outstanding)."""
    session = Session(notes.machine, DOOR)
    assert session.pick("writer", "ask", {"question": "Who reads these?"}).outcome == "outstanding"
    assert session.send_gate("writing.asking", "reply", {"text": "Operators"}).outcome == "delivered"
    return [{"seq": i, "entry": e.to_json()} for i, e in enumerate(session.journal, 1)]


def prompt_of(session: Session, agent: str = "writer") -> str:
    return next(turn.prompt for turn in session.turns if turn.agent == agent)


def fork(journal: list[dict[str, Any]], **options: Any) -> Any:
    return plan_fork(notes.machine, journal, len(journal), parent="parent1", now=5_000.0, **options)


def test_without_the_option_the_open_turn_keeps_the_prompt_built_from_the_old_context() -> None:
    plan = fork(recorded(), context=EDITED)
    assert "Faster start-up." in prompt_of(plan.session) and "export" not in prompt_of(plan.session)
    assert plan.restarted == {} and plan.entry.restarted is None
    assert "restarted" not in plan.entry.to_json(), "an old-style Fork entry is written as before"


@pytest.mark.parametrize("restart", [True, ["writer"]])
def test_a_restarted_turn_gets_its_prompt_rebuilt_from_the_edited_context(restart: Any) -> None:
    plan = fork(recorded(), context=EDITED, restart=restart)
    prompt = prompt_of(plan.session)
    assert prompt == "Write the release notes for these changes:\nA new export button."
    [turn] = plan.session.turns
    assert plan.restarted == {turn.id: prompt}
    assert plan.entry.restarted == ["writer"]
    assert "restarting the Turn of writer" in plan.entry.describe()
    again = Entry.from_json(plan.entry.to_json())
    assert isinstance(again, Fork) and again == plan.entry


def test_the_restarted_forks_journal_replays_exactly() -> None:
    plan = fork(recorded(), context=EDITED, restart=True)
    session = plan.session
    prompt = prompt_of(session)
    assert session.pick("writer", "done", {"notes": "## New\n\n- An export button."}).outcome == "ended"
    journal = [{"seq": 1, "entry": plan.entry.to_json()}] + [
        {"seq": i, "entry": e.to_json()} for i, e in enumerate(session.journal, 2)
    ]
    report = replay(notes.machine, journal)
    assert report.same, report.message
    [first] = trace(notes.machine, journal, until=1)
    assert prompt_of(first.session) == prompt and "export button" in prompt


@pytest.mark.parametrize(
    ("restart", "words"),
    [
        (["editor"], 'the Agent "editor" has no open Turn at that step (open Turns: writer)'),
        ("writer", "restart_turns must be true, false or a list of Agent names"),
        ([3], "restart_turns names Agents by their name"),
    ],
)
def test_a_bad_restart_is_refused_in_words(restart: Any, words: str) -> None:
    with pytest.raises(ForkError) as err:
        fork(recorded(), restart=restart)
    assert words in str(err.value)


def test_a_turn_with_an_outstanding_pick_is_not_restarted() -> None:
    journal = recorded()[:-1]  # after the ask: the pick waits for the editor's reply
    with pytest.raises(ForkError) as err:
        fork(journal, restart=True)
    assert 'its pick "ask" is outstanding' in str(err.value)
