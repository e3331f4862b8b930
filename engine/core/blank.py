"""The one rule for blank answers, at every door a person types into (the Console's forms built from a schema, the
API's Gate answers and run inputs): a required text field refuses a value that is empty or only whitespace
(spaces, tabs, newlines). Text is otherwise kept as typed, leading and trailing spaces included; an optional text
field left blank is left out, so its default applies. Agents' picks are held to their models only: the rule is
for people, and recorded journals replay as they were. Pure."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

__all__ = ["BLANK_REFUSED", "required_text", "blank_fields", "blank_text"]

#: What a refused blank answer is told, at its field.
BLANK_REFUSED = "is required, and only whitespace is not an answer"


def required_text(schema: Mapping[str, Any]) -> set[str]:
    """The required properties of a JSON schema that take text (a string, or a string or null)."""
    required = set(schema.get("required") or ())
    out = set()
    for name, prop in (schema.get("properties") or {}).items():
        kinds = {prop.get("type")} | {option.get("type") for option in prop.get("anyOf") or ()}
        if name in required and "string" in kinds and "enum" not in prop:
            out.add(name)
    return out


def blank_fields(model: type[BaseModel] | None, params: Mapping[str, Any] | None) -> list[str]:
    """The required text fields of `model` whose value in `params` is only whitespace, in order."""
    if model is None or not isinstance(params, Mapping):
        return []
    names = _required_text_of(model)
    return [name for name in params if name in names and isinstance(params[name], str) and not params[name].strip()]


@functools.lru_cache(maxsize=1024)
def _required_text_of(model: type[BaseModel]) -> frozenset[str]:
    """`required_text` of a model's schema, built once per model (building it is most of a blank check's cost)."""
    return frozenset(required_text(model.model_json_schema()))


def blank_text(model: type[BaseModel] | None, params: Mapping[str, Any] | None) -> str | None:
    """The refusal in words, naming each blank field, or None."""
    blank = blank_fields(model, params)
    return "; ".join(f"{name}: {BLANK_REFUSED}" for name in blank) or None
