"""The NUL character (engine/core/text.py): found where it is, replaced in what the world writes, and refused in what a
party sends, by the Session itself, so a run's journal never holds it on any database."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from engine import Session
from engine.core.text import nul_at, without_nul
from workflows import notes


@pytest.mark.parametrize(
    "value, where",
    [
        ("plain", None),
        ({"a": ["x", {"b": 1}]}, None),
        (None, None),
        (3, None),
        ("a\x00", ()),
        ({"a": ["x", {"b": "\x00"}]}, ("a", 1, "b")),
        ({"k\x00": 1}, ("k\x00",)),
        (("ok", "n\x00"), (1,)),
    ],
)
def test_nul_at_names_the_first_place_holding_it(value: object, where: tuple[object, ...] | None) -> None:
    assert nul_at(value) == where


def test_without_nul_replaces_it_everywhere_and_leaves_the_rest_as_it_was() -> None:
    clean = {"a": ["x", 1, None]}
    assert without_nul(clean) is clean
    assert without_nul({"k\x00": ["a\x00b", ("\x00",), 2]}) == {"k\ufffd": ["a\ufffdb", ("\ufffd",), 2]}


def test_a_door_pick_or_gate_answer_holding_nul_is_refused_by_the_core_and_changes_nothing() -> None:
    with pytest.raises(ValidationError, match="text may not contain the NUL character"):
        notes.machine.validate_door({"changes": "x\x00"})
    session = Session(notes.machine, {"changes": "One fix."})
    session.drain()
    before = session.to_json(), list(session.journal)
    refused = session.pick("writer", "ask", {"question": "Who\x00?"})
    assert refused.outcome == "refused" and refused.error is not None and "question: text may not" in refused.error
    assert (session.to_json(), session.journal) == before
    assert session.pick("writer", "ask", {"question": "Who reads them?"}).outcome == "outstanding"
    session.drain()
    before = session.to_json(), list(session.journal)
    gate = session.gates[0].id
    delivery = session.send_gate(gate, "reply", {"text": "A\x00"})
    assert delivery.outcome == "refused" and delivery.code == "invalid" and "text: text may not" in str(delivery.error)
    assert (session.to_json(), session.journal) == before
    assert session.send_gate(gate, "reply", {"text": "Admins"}).outcome == "delivered"
