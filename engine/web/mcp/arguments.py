"""Tools whose arguments are a pydantic model: the model gives the input schema `tools/list` shows, and it checks
every call's arguments, so a bad call is refused in words naming each wrong field and does nothing."""

from __future__ import annotations

from typing import TypeVar

import mcp_types as types
from pydantic import BaseModel, ValidationError

__all__ = ["tool", "parsed"]

M = TypeVar("M", bound=BaseModel)


def tool(name: str, description: str, arguments: type[BaseModel]) -> types.Tool:
    return types.Tool(name=name, description=description, input_schema=arguments.model_json_schema())


def parsed(model: type[M], params: types.CallToolRequestParams) -> M | types.CallToolResult:
    """The call's arguments as `model`, or an isError result saying what is wrong (nothing was done)."""
    try:
        return model.model_validate(dict(params.arguments or {}))
    except ValidationError as err:
        wrong = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}" for e in err.errors(include_url=False)
        )
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=f"the arguments of {params.name} are not valid: {wrong}")],
            is_error=True,
        )
