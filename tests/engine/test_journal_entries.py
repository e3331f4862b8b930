"""One type per journal entry (engine/core/journal/entries.py): each kind's JSON goes in and out unchanged, key
for key and in order, for the journals today's databases and exports hold (tests/fixtures/export-*.json, written
by the code before the entries had types); the kind tables follow from the types; bad JSON is refused in words."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from engine.core.journal.entries import (
    HOST_KINDS,
    INPUT_KINDS,
    KINDS,
    ROOT_KINDS,
    Advance,
    Cancel,
    Claim,
    EffectStarted,
    Entry,
    Fork,
    GateAnswer,
    JournalError,
    Pick,
    Start,
)

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def _journals() -> list[tuple[str, list[dict[str, Any]]]]:
    return [
        (path.name, [row["entry"] for row in json.loads(path.read_text())["journal"]])
        for path in sorted(FIXTURES.glob("export-*.json"))
    ]


@pytest.mark.parametrize(("name", "journal"), _journals())
def test_every_recorded_entry_goes_in_and_out_byte_for_byte(name: str, journal: list[dict[str, Any]]) -> None:
    for entry in journal:
        typed = Entry.from_json(entry)
        assert type(typed) is KINDS[entry["kind"]]
        assert json.dumps(typed.to_json()) == json.dumps(entry), (name, entry["kind"])
        assert Entry.from_json(typed.to_json()) == typed


def test_the_recorded_journals_hold_every_kind_but_a_fault() -> None:
    kinds = {entry["kind"] for _, journal in _journals() for entry in journal}
    assert kinds == set(KINDS) - {"fault", "effect_failed", "claim"}  # claims came after the fixtures


def test_the_kind_tables_are_the_types() -> None:
    assert ROOT_KINDS == {"start", "fork"}
    assert HOST_KINDS == {"effect_started", "claim"}
    assert INPUT_KINDS == {"pick", "gate", "effect_done", "effect_failed", "advance", "fault", "cancel"}
    assert all(cls.kind == kind for kind, cls in KINDS.items())


def test_a_claim_and_its_words() -> None:
    claim = Claim(gate="review", action="claim", by="ann", until=1796000000.0, door="api", at=5.0)
    assert Entry.from_json(claim.to_json()) == claim
    assert claim.describe() == "ann claimed the Gate review until 2026-11-30 00:53 UTC (through the API)"
    broken = Claim(gate="review", action="break", by="ops", holder="ann", door="console")
    assert broken.describe() == "ops broke ann's claim on the Gate review (in the Console)"
    assert Claim(gate="review", action="release", by="ann").describe() == "ann released the Gate review"
    cancel = Cancel(by="ann", door="cli", reason="wrong input")
    assert cancel.describe() == "the run was cancelled by ann (from the CLI): wrong input"
    answer = GateAnswer(gate="g", event="reply", params={"text": "ok"}, by="bo", door="link")
    assert answer.describe() == 'the Gate g got reply {text: "ok"} from bo (by a one-tap link)'


def test_fields_the_entry_does_not_know_are_kept_and_null_fields_that_are_written_stay() -> None:
    data = {"kind": "gate", "gate": "g", "event": "reply", "params": None, "at": 5.0, "out": "ab", "via": "mcp"}
    entry = Entry.from_json(data)
    assert isinstance(entry, GateAnswer) and entry.params is None and entry.extra == {"via": "mcp"}
    assert json.dumps(entry.to_json()) == json.dumps(data)
    fork = Fork(parent="run1", step=2, session={"now": 1}, at=1.0)
    assert fork.to_json() == {
        "kind": "fork",
        "parent": "run1",
        "step": 2,
        "context": None,
        "session": {"now": 1},
        "at": 1.0,
    }


@pytest.mark.parametrize(
    ("data", "error"),
    [
        ({"agent": "w"}, "unknown kind None"),
        ({"kind": "teleport"}, "unknown kind 'teleport'"),
        ({"kind": "pick", "agent": "w"}, "a pick entry has no event"),
        ({"kind": "advance"}, "an advance entry has no ms"),
        (["pick"], "a journal entry is a JSON object; got list"),
    ],
)
def test_json_that_is_not_an_entry_is_refused_in_words(data: Any, error: str) -> None:
    with pytest.raises(JournalError, match=error):
        Entry.from_json(data)


def test_each_kind_says_its_own_words() -> None:
    assert Start(input={"changes": "x"}).describe() == 'the run started with {changes: "x"}'
    assert Pick(agent="writer", event="done", params={"notes": "n"}).describe() == 'writer picked done {notes: "n"}'
    assert (
        GateAnswer(gate="writing.asking", event="reply", params={"text": "Ops"}).describe()
        == 'the Gate writing.asking got reply {text: "Ops"}'
    )
    assert (
        EffectStarted(effect="effect-2", attempt=2).describe({"effect-2": "tests"})
        == "effect-2 (tests) started (attempt 2)"
    )
    assert Advance(ms=300.0).describe() == "300 ms passed"
    assert Cancel().describe() == "the run was cancelled" and Cancel(by="ann").describe().endswith("by ann")
    assert (
        Fork(parent="p", step=3, context={"a": 1}).describe() == "forked from run p at step 3 with its context edited"
    )
