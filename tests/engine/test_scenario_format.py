"""The scenario file format (engine/core/scenarios.py): what it reads, what it refuses (naming the file and the
field), and that the shipped JSON schema is the one the models derive."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.core.journal.entries import Advance, GateAnswer, Pick, Start
from engine.core.scenarios import Scenario, ScenarioError, input_of, schema

SCHEMA_FILE = Path(__file__).resolve().parents[2] / "engine" / "core" / "scenario.schema.json"

GOOD = {
    "version": 1,
    "workflow": "notes",
    "input": {"changes": "x"},
    "inputs": [
        {"kind": "pick", "agent": "writer", "event": "ask", "params": {"question": "?"}},
        {"kind": "gate", "gate": "writing.asking", "event": "reply", "params": {"text": "Ops"}},
        {"kind": "advance", "ms": 300},
    ],
    "expect": {"status": "done", "state": ["notes.done"], "output": {"notes": "n"}},
}


def test_the_shipped_schema_is_the_models_schema() -> None:
    assert json.loads(SCHEMA_FILE.read_text()) == schema(), "regenerate with engine.core.scenarios.schema_text()"


def test_a_scenario_reads_back_as_written_and_becomes_a_journal() -> None:
    scenario = Scenario.from_json(GOOD)
    assert Scenario.from_text(scenario.to_text()) == scenario
    assert scenario.to_json()["inputs"][2] == {"kind": "advance", "ms": 300}
    assert scenario.journal() == [
        Start(input={"changes": "x"}),
        Pick(agent="writer", event="ask", params={"question": "?"}),
        GateAnswer(gate="writing.asking", event="reply", params={"text": "Ops"}),
        Advance(ms=300),
    ]


def test_a_recorded_entry_becomes_an_input_without_what_the_host_added() -> None:
    pick = Pick(agent="writer", event="ask", params={}, outcome="answered", at=5, out="d", turn="t", call="c")
    assert input_of(pick).model_dump(exclude_none=True) == {
        "kind": "pick",
        "agent": "writer",
        "event": "ask",
        "params": {},
        "outcome": "answered",
    }
    assert input_of(Start(input={})) is None


@pytest.mark.parametrize(
    "change, words",
    [
        ({"version": 2}, "f.json: version: this jr2 reads version 1; got 2"),
        ({"inputs": [{"kind": "pick", "event": "ask"}]}, "f.json: inputs[0].agent (a pick input): Field required"),
        ({"inputs": [{"kind": "vote"}]}, "f.json: inputs[0]: Input tag 'vote'"),
        ({"inputs": [{"kind": "advance", "ms": -1}]}, "inputs[0].ms (an advance input): Input should be greater"),
        ({"expect": {"status": "finished", "state": []}}, "f.json: expect.status: Input should be 'active'"),
        ({"expect": {"status": "done"}}, "f.json: expect.state: Field required"),
        ({"colour": "red"}, "f.json: colour: Extra inputs are not permitted"),
    ],
)
def test_a_bad_file_is_refused_naming_the_file_and_the_field(change: dict, words: str) -> None:
    with pytest.raises(ScenarioError) as caught:
        Scenario.from_json({**GOOD, **change}, source="f.json")
    assert words in str(caught.value)


def test_bad_json_is_refused_with_its_line() -> None:
    with pytest.raises(ScenarioError, match=r"f.json: not JSON: .* at line 2"):
        Scenario.from_text('{"version": 1,\n oops}', source="f.json")
    with pytest.raises(ScenarioError, match="f.json: a scenario is a JSON object; got list"):
        Scenario.from_json([], source="f.json")
