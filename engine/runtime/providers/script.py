"""`script/<name>`: a deterministic stand-in for a model, for tests and the offline demo (see engine/core/scripts.py).

A script reads the Turn as a `TurnView` and returns one pick, `(event, params)`, or None to end its reply without
one. Its reply has the same shape as a real model's, so the Turn loop treats both alike: an unknown event or bad
params are refused back to it, and a reply without a pick is re-prompted.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Mapping
from typing import Any

from engine.core.scripts import script_named, scripts
from engine.runtime.providers._conversation import tool_use_count
from engine.runtime.providers.base import ModelReply, ModelRequest, Provider, ProviderError, ToolCall, TurnView, Usage

__all__ = ["ScriptProvider", "NO_PICK_TEXT"]

NO_PICK_TEXT = "(the scripted model ended its reply without a pick)"


class ScriptProvider(Provider):
    """Runs the script registered as `request.model` (a `script/` prefix is also accepted)."""

    scripted = True
    prefix = "script"

    async def complete(self, request: ModelRequest) -> ModelReply:
        name = request.model.removeprefix(f"{self.prefix}/")
        script = script_named(name)
        if script is None:
            known = ", ".join(sorted(scripts())) or "none"
            raise ProviderError(
                f'no scripted model "{name}": the registered scripts are {known}. Register one with '
                f'@engine.scripted("{name}") in a module of the workflows folder.'
            )
        view = request.view if request.view is not None else _view_of(request)
        try:
            result = script(view)
            if inspect.isawaitable(result):
                result = await result
        except Exception as err:
            raise ProviderError(f'scripted model "{name}" raised {type(err).__name__}: {err}') from err
        model = f"{self.prefix}/{name}"
        if result is None:
            return ModelReply(
                text=NO_PICK_TEXT,
                tool_calls=(),
                stop_reason="end_turn",
                model=model,
                response={"scripted": True, "pick": None},
            )
        if not (isinstance(result, (tuple, list)) and len(result) == 2 and isinstance(result[0], str) and result[0]):
            raise ProviderError(
                f'scripted model "{name}" must return (event name, params) or None; got {_short(result)}'
            )
        event, params = result[0], {} if result[1] is None else result[1]
        call = _call(f"script-{1 + tool_use_count(request.messages)}", event, params)
        return ModelReply(
            text="",
            tool_calls=(call,),
            stop_reason="tool_use",
            usage=Usage(),
            model=model,
            response={"scripted": True, "pick": {"event": event, "params": _jsonable(params)}},
        )


def _call(call_id: str, event: str, params: Any) -> ToolCall:
    if not isinstance(params, Mapping):
        return ToolCall(
            id=call_id,
            name=event,
            arguments=None,
            raw=_short(params),
            error=f"the params must be a mapping of the event's input; got {type(params).__name__}",
        )
    return ToolCall(id=call_id, name=event, arguments=dict(params), raw=json.dumps(params, sort_keys=True, default=str))


def _view_of(request: ModelRequest) -> TurnView:
    """The view of a request that came without one: its Menu, nothing else."""
    return TurnView(agent="", turn="", prompt="", menu=tuple(request.tools), allowed_picks=())


def _jsonable(value: Any) -> Any:
    try:
        return json.loads(json.dumps(value, default=str))
    except (TypeError, ValueError):
        return repr(value)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 200 else text[:197] + "..."
