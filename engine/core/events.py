"""`define_event`: one workflow event, which an Agent may pick or a Gate's caller may send."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel

from engine.core.errors import EventDefError

__all__ = ["EventDef", "define_event", "Audience", "NAME_PATTERN"]

NAME_PATTERN = re.compile(r"^[a-zA-Z0-9_-]+$")
Audience = Literal["agent", "external", "any"]
RESERVED_FIELDS = {
    "sender": "the engine writes that field on every delivered event (who sent it)",
    "type": "it is the event's name on every delivered event",
}


@dataclass(frozen=True)
class EventDef:
    """An event: its name (the `on` key and the tool name), its pydantic input model, and how it is delivered."""

    name: str
    input: type[BaseModel]
    description: str | None = None
    semantics: str = "ack"
    audience: Audience | None = None

    def json_schema(self) -> dict[str, Any]:
        """The tool's input schema: the model's JSON schema, with each field's description."""
        return self.input.model_json_schema()

    def tool(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description or "", "input_schema": self.json_schema()}


def define_event(
    name: str,
    input: type[BaseModel],
    description: str | None = None,
    semantics: str = "ack",
    audience: Audience | None = None,
    **retired: Any,
) -> EventDef:
    """Define one workflow event. Refuses a bad name, a `sender` field, a non-model input and `output`."""
    if not isinstance(name, str) or not NAME_PATTERN.match(name):
        raise EventDefError(
            f'define_event: invalid name "{name}" — must match /^[a-zA-Z0-9_-]+$/ (it becomes a tool name and an '
            "event type)"
        )
    if "output" in retired:
        raise EventDefError(
            f'define_event: "{name}" declares an `output`, which is retired — every pick is answered when the work '
            "it started is done, and the answer is the Machine's, not the def's"
        )
    if retired:
        raise EventDefError(f'define_event: "{name}" got unknown arguments {sorted(retired)}')
    if not (isinstance(input, type) and issubclass(input, BaseModel)):
        raise EventDefError(
            f'define_event: "{name}" needs a pydantic model class as its input (class X(BaseModel): ...); got {input!r}'
        )
    for reserved, why in RESERVED_FIELDS.items():
        if any(
            field_name == reserved or reserved in (field.alias, field.validation_alias, field.serialization_alias)
            for field_name, field in input.model_fields.items()
        ):
            raise EventDefError(
                f'define_event: "{name}" declares `{reserved}` in its input — {why}; name the payload field '
                "something else"
            )
    if audience not in (None, "agent", "external", "any"):
        raise EventDefError(f'define_event: "{name}" has audience {audience!r}; use "agent", "external" or "any"')
    return EventDef(name=name, input=input, description=description, semantics=semantics, audience=audience)
