"""A Gate's `assign` (engine/core/assignment.py): checked by `create_machine`, resolved when the Gate opens (a
callable of the context included), kept in the Session's JSON and in the view readers see."""

from __future__ import annotations

import json

import pytest

from engine import MachineError
from engine.core.assignment import words
from engine.core.session import Session
from tests.engine.helpers import build, event, started

reply = event("reply", text=str)


def gate_machine(assign, whole_input=False):
    gate_input = {"meta": {"question": "Ship it?"}, "assign": assign}
    return build(
        [reply],
        {
            "id": "m",
            "context": {"owner": "cy"},
            "initial": "asking",
            "states": {
                "asking": {
                    "invoke": {
                        "src": "gate",
                        "id": "ask",
                        "input": (lambda context: gate_input) if whole_input else gate_input,
                    },
                    "on": {"reply": "done"},
                },
                "done": {"type": "final"},
            },
        },
    )


def test_a_listed_assign_is_on_the_open_gate_and_in_its_json() -> None:
    session = started(gate_machine(["user:ann", "group:leads"]))
    (gate,) = session.gates
    assert gate.assign == ("user:ann", "group:leads")
    assert gate.to_json()["assign"] == ["user:ann", "group:leads"]
    again = Session.restore(gate_machine(["user:ann", "group:leads"]), json.loads(json.dumps(session.to_json())))
    assert again.gates[0].assign == ("user:ann", "group:leads")


def test_a_callable_assign_reads_the_context_and_leaves_data_in_the_snapshot() -> None:
    session = started(gate_machine(lambda context: [f"user:{context['owner']}"]))
    assert session.gates[0].assign == ("user:cy",)
    json.dumps(session.to_json())  # no function left in the snapshot


def test_an_assign_inside_an_input_callable_is_read_when_the_gate_opens() -> None:
    session = started(gate_machine(["group:leads"], whole_input=True))
    assert session.gates[0].assign == ("group:leads",)


def test_a_gate_with_no_assign_has_none() -> None:
    session = started(gate_machine(None))
    assert session.gates[0].assign is None
    assert "assign" not in session.gates[0].to_json()


def test_a_callable_that_gives_no_list_assigns_the_gate_to_nobody_and_says_why() -> None:
    session = started(gate_machine(lambda context: 5))
    gate = session.gates[0]
    assert gate.assign == ()
    assert "got int 5" in gate.assign_error


@pytest.mark.parametrize(
    ("assign", "words_of_it"),
    [
        ("user:ann", "got str 'user:ann'"),
        (["ann"], "assign lists 'ann'"),
        (["user: ann"], "assign lists 'user: ann'"),
        (["team:x"], "assign lists 'team:x'"),
        ([3], "assign lists 3"),
        ({"user": "ann"}, "got dict"),
        (7, "got int 7"),
    ],
)
def test_create_machine_refuses_an_assign_that_is_not_a_list_of_names_or_a_callable(assign, words_of_it) -> None:
    with pytest.raises(MachineError) as caught:
        gate_machine(assign)
    assert 'the Gate in state "m.asking" has a bad assign' in str(caught.value)
    assert words_of_it in str(caught.value)


def test_whom_a_gate_is_assigned_to_in_words() -> None:
    assert words(["user:ann"]) == "the user ann"
    assert words(["user:ann", "group:leads", "user:bo"]) == "the user ann, the group leads and the user bo"
    assert words([]) == "nobody (only superusers may answer it)"
