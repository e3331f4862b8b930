"""The words made one way everywhere (engine/core/words.py): durations, pydantic errors, error values."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ValidationError

from engine.core.words import duration_text, error_text, exception_text, validation_lines, validation_text


@pytest.mark.parametrize(
    ("ms", "text"),
    [
        (None, "—"),
        (0, "0 ms"),
        (0.4, "0.4 ms"),
        (0.123, "0.123 ms"),
        (125.4, "125 ms"),
        (999.6, "1 s"),
        (1332.4, "1.33 s"),
        (12_500, "12.5 s"),
        (59_999, "1 min"),
        (150_000, "2.5 min"),
        (7_200_000, "2 h"),
        (-5, "0 ms"),
    ],
)
def test_a_duration_has_three_significant_figures_in_the_largest_unit_it_fills(ms: float | None, text: str) -> None:
    assert duration_text(ms) == text


class Door(BaseModel):
    changes: str
    count: int


def test_a_validation_error_names_each_field_and_the_whole_when_no_field() -> None:
    with pytest.raises(ValidationError) as caught:
        Door.model_validate({"count": "many"})
    assert validation_lines(caught.value) == [
        "changes: Field required",
        "count: Input should be a valid integer, unable to parse string as an integer",
    ]
    assert validation_text(caught.value) == "; ".join(validation_lines(caught.value))
    with pytest.raises(ValidationError) as whole:
        Door.model_validate([1])
    assert validation_text(whole.value, "(file)").startswith("(file): ")


def test_an_error_value_in_words() -> None:
    assert error_text({"message": "boom", "reason": "other"}) == "boom"
    assert error_text({"reason": "gone"}) == "gone"
    assert error_text("plain") == "plain"
    assert error_text({"code": 3}) == '{"code": 3}'
    try:
        try:
            raise KeyError("inner")
        except KeyError as inner:
            raise RuntimeError("outer") from inner
    except RuntimeError as err:
        assert exception_text(err) == "KeyError: 'inner'"
        assert error_text(err) == "KeyError: 'inner'"
