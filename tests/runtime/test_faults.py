"""The crash point of the crash tests (engine/runtime/faults.py) fires only for the journal kind the environment
names, and never when it names none (tests/e2e/test_crash.py kills real servers with it)."""

from __future__ import annotations

import pytest

from engine.core.journal.entries import Advance, Cancel, GateAnswer, Pick
from engine.runtime import faults


@pytest.fixture
def crashes(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    died: list[str] = []
    monkeypatch.setattr(faults, "crash_now", lambda: died.append("killed"))
    return died


def test_it_fires_after_a_commit_that_journaled_the_named_kind(
    crashes: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(faults.CRASH_AFTER_COMMIT, "gate")
    faults.after_commit([Advance(ms=1), Pick(agent="writer", event="ask")])
    assert crashes == []
    faults.after_commit([Advance(ms=1), GateAnswer(gate="writing.asking", event="reply")])
    assert crashes == ["killed"]


def test_it_never_fires_unless_a_kind_is_named(crashes: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(faults.CRASH_AFTER_COMMIT, raising=False)
    faults.after_commit([GateAnswer(gate="writing.asking", event="reply"), Cancel()])
    monkeypatch.setenv(faults.CRASH_AFTER_COMMIT, "")
    faults.after_commit([GateAnswer(gate="writing.asking", event="reply"), Cancel()])
    assert crashes == []
