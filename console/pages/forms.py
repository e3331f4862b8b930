"""Forms built from an event's or a door's pydantic JSON schema: one field per property, named after it, labelled by
its description, marked required, with its default. A select with no default starts empty; a required text field
refuses only whitespace (engine/core/blank.py, the rule for every door a person types into).

The form only shapes what the browser sends. Validation is the engine's: `check(model, data)` runs the pydantic model
itself and puts each error at its field, and the engine validates again when the input is delivered.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from django import forms
from pydantic import BaseModel, ValidationError

from engine.core.blank import BLANK_REFUSED

__all__ = ["SchemaForm", "schema_form", "check", "EVENT_FIELD"]

#: The hidden field that says which event a Gate form sends (an event's own fields can never start with "_").
EVENT_FIELD = "_event"


class JSONField(forms.CharField):
    """An array or object property: typed as JSON."""

    widget = forms.Textarea(attrs={"rows": 3, "class": "json"})

    def to_python(self, value: Any) -> Any:
        text = super().to_python(value)
        if text in ("", None):
            return None
        try:
            return json.loads(text)
        except ValueError as err:
            raise forms.ValidationError(f"not valid JSON: {err}") from err


class TextField(forms.CharField):
    """A text property: the browser's CRLF line endings become plain newlines, as the person typed them. Required,
    it refuses only whitespace (engine/core/blank.py: the one rule for blank answers)."""

    def to_python(self, value: Any) -> Any:
        text = super().to_python(value)
        return text.replace("\r\n", "\n") if isinstance(text, str) else text

    def validate(self, value: Any) -> None:
        super().validate(value)
        if self.required and isinstance(value, str) and not value.strip():
            raise forms.ValidationError(f"This field {BLANK_REFUSED}.", code="blank")


class SchemaForm(forms.Form):
    """A form whose fields come from a JSON schema; `cleaned_input()` is the input to deliver."""

    def __init__(self, schema: Mapping[str, Any], *args: Any, prefix: str | None = None, **kwargs: Any) -> None:
        super().__init__(*args, prefix=prefix, **kwargs)
        required = set(schema.get("required", ()))
        definitions = schema.get("$defs", {})
        for name, prop in (schema.get("properties") or {}).items():
            self.fields[name] = _field(_resolve(prop, definitions), name in required)

    def cleaned_input(self) -> dict[str, Any]:
        """The submitted values, leaving out optional fields left empty (so the model's defaults apply)."""
        return {
            name: value
            for name, value in self.cleaned_data.items()
            if not (value in ("", None) and not self.fields[name].required)
        }


def _resolve(prop: Mapping[str, Any], definitions: Mapping[str, Any]) -> dict[str, Any]:
    """A property with its `$ref` (an enum or nested model) and `anyOf [X, null]` (an Optional) folded in."""
    prop = dict(prop)
    ref = prop.pop("$ref", None)
    if isinstance(ref, str):
        prop = {**definitions.get(ref.rsplit("/", 1)[-1], {}), **prop}
    options = prop.get("anyOf")
    if isinstance(options, list):
        kept = [o for o in options if o.get("type") != "null"]
        if len(kept) == 1:
            prop = {**_resolve(kept[0], definitions), **{k: v for k, v in prop.items() if k != "anyOf"}}
    return prop


def _field(prop: Mapping[str, Any], required: bool) -> forms.Field:
    label = prop.get("description") or prop.get("title") or ""
    common: dict[str, Any] = {"required": required, "label": label}
    if "default" in prop and prop["default"] is not None:
        common["initial"] = (
            prop["default"] if not isinstance(prop["default"], (list, dict)) else json.dumps(prop["default"])
        )
    kind = prop.get("type")
    if "enum" in prop or "const" in prop:
        values = prop.get("enum") or [prop.get("const")]
        # No default: the select starts on the empty choice, so a careless Send picks nothing (a required one is
        # then refused at its field).
        choices = [("", "—")] if not required or "initial" not in common else []
        return forms.ChoiceField(choices=choices + [(str(v), str(v)) for v in values], **common)
    if kind == "boolean":
        return forms.BooleanField(**{**common, "required": False})
    if kind == "integer":
        return forms.IntegerField(**common)
    if kind == "number":
        return forms.FloatField(**common)
    if kind in ("array", "object"):
        return JSONField(**common, help_text="JSON")
    return TextField(widget=forms.Textarea(attrs={"rows": 2}), strip=False, **common)


def schema_form(
    model: type[BaseModel] | None, data: Any = None, prefix: str | None = None, auto_id: str = "id_%s"
) -> SchemaForm:
    """`auto_id` keeps element ids apart when a page holds several forms; the inputs stay named after the fields."""
    return SchemaForm(model.model_json_schema() if model is not None else {}, data, prefix=prefix, auto_id=auto_id)


def check(form: SchemaForm, model: type[BaseModel] | None) -> dict[str, Any] | None:
    """The form's input validated by the pydantic model itself; each error is put at its field (or on the form).
    None when anything is wrong."""
    if not form.is_valid():
        return None
    values = form.cleaned_input()
    if model is None:
        return values
    try:
        model.model_validate(values)
    except ValidationError as err:
        for error in err.errors():
            field = str(error["loc"][0]) if error["loc"] else None
            form.add_error(field if field in form.fields else None, error["msg"])
        return None
    return values
