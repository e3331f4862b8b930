"""The one rule for blank answers (engine/core/blank.py) in the forms built from a schema, and a select with no
default starting empty (console/pages/forms.py)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from console.pages.forms import check, schema_form
from engine.core.blank import blank_text
from workflows.notes import machine as notes_machine
from workflows.triage import LabelInput


class Note(BaseModel):
    text: str = Field(description="The text.")
    extra: str = Field("kept", description="Optional.")


def test_a_required_text_of_only_whitespace_is_refused_at_its_field() -> None:
    for blank in ("", "   ", " \r\n\t "):
        form = schema_form(Note, {"text": blank})
        assert check(form, Note) is None
        assert "only whitespace is not an answer" in " ".join(form.errors["text"]) or blank == ""
    form = schema_form(Note, {"text": "  kept as typed  ", "extra": "   "})
    assert check(form, Note) == {"text": "  kept as typed  ", "extra": "   "}


def test_the_rule_in_words_for_the_api_names_the_field() -> None:
    reply = notes_machine.gate_event("writing.asking", "reply")
    assert reply is not None
    assert blank_text(reply.input, {"text": "   "}) == "text: is required, and only whitespace is not an answer"
    assert blank_text(reply.input, {"text": "Ops"}) is None


class Pick(BaseModel):
    kind: Literal["a", "b"] = Field(description="Which.")
    other: Literal["a", "b"] = Field("b", description="Which, with a default.")


def test_a_select_with_no_default_starts_empty_and_refuses_a_careless_send() -> None:
    form = schema_form(LabelInput)
    html = str(form["label"])
    assert '<option value="" selected>' in html and 'value="bug" selected' not in html
    careless = schema_form(LabelInput, {"label": "", "reason": "because"})
    assert check(careless, LabelInput) is None and "label" in careless.errors
    defaulted = str(schema_form(Pick)["other"])
    assert 'value="b" selected' in defaulted  # a default is where it starts
