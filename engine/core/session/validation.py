"""A party's input checked before anything moves: an object with string keys, no NUL in any text, no `sender` or
`type` (the engine writes those), and valid for its event's model. A refusal comes back as words, never as an
exception, so a host never has to catch one."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from engine.core.text import NUL_REFUSED, nul_at
from engine.core.words import validation_text
from engine.core.workflow import Machine

__all__ = ["validate_input"]

_RESERVED = (("sender", "the engine writes it on every delivered event"), ("type", "it is the event's name"))


def validate_input(machine: Machine, event: str, params: Mapping[str, Any] | None) -> tuple[dict[str, Any], str | None]:
    """The event's input, validated by its model and made JSON-ready, or the reason it is refused."""
    if params is None:
        params = {}
    if not isinstance(params, Mapping):
        return {}, f'the input of "{event}" must be an object; got {type(params).__name__}'
    if any(not isinstance(key, str) for key in params):
        return {}, f'the input of "{event}" must have string keys; got {sorted(map(repr, params))}'
    nul = nul_at(dict(params))
    if nul is not None:
        return {}, f'the input of "{event}" is not valid: {".".join(map(str, nul))}: {NUL_REFUSED}'
    for reserved, why in _RESERVED:
        if reserved in params:
            return {}, f"no party can write `{reserved}`: {why}"
    try:
        model = machine.events[event].input.model_validate(dict(params))
        validated = model.model_dump(mode="json")
    except ValidationError as err:
        return {}, f'the input of "{event}" is not valid: {validation_text(err)}'
    except Exception as err:
        return {}, f'the input of "{event}" is not valid: its model raised {type(err).__name__}: {err}'
    for reserved, _ in _RESERVED:
        if reserved in validated:
            return {}, f'the input of "{event}" carries `{reserved}` after validation; no party can write it'
    return validated, None
