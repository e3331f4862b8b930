"""ScriptProvider: a registered script stands in for a model and answers in a model's shape."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

import engine.core.scripts
from engine.core.scripts import scripted
from engine.runtime.providers import provider_for, reset_providers
from engine.runtime.providers.base import ModelRequest, ProviderError, ToolCall, TurnView, Usage
from engine.runtime.providers.script import NO_PICK_TEXT

pytestmark = pytest.mark.anyio

MENU = json.dumps(
    [
        {"description": "Ask.", "input_schema": {"type": "object"}, "name": "ask"},
        {"description": "Finish.", "input_schema": {"type": "object"}, "name": "done"},
    ],
    sort_keys=True,
)


@pytest.fixture(autouse=True)
def registry(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """An empty script registry for each test (the real one is global)."""
    monkeypatch.setattr(engine.core.scripts, "_SCRIPTS", {})
    reset_providers()
    yield
    reset_providers()


def request(name: str, messages: list[dict[str, Any]] | None = None, view: TurnView | None = None) -> ModelRequest:
    return ModelRequest(model=name, system="sys", tools_json=MENU, messages=messages or [], view=view)


async def test_a_pick_becomes_one_tool_call() -> None:
    scripted("notes.writer")(lambda turn: ("done", {"notes": "- faster start"}))
    reply = await provider_for("script/notes.writer").complete(request("notes.writer"))
    assert reply.tool_calls == (
        ToolCall(id="script-1", name="done", arguments={"notes": "- faster start"}, raw='{"notes": "- faster start"}'),
    )
    assert (reply.text, reply.stop_reason, reply.usage, reply.model) == ("", "tool_use", Usage(), "script/notes.writer")
    assert reply.response == {"scripted": True, "pick": {"event": "done", "params": {"notes": "- faster start"}}}
    assert provider_for("script/notes.writer").scripted


async def test_the_call_id_counts_the_tool_uses_already_in_the_conversation() -> None:
    scripted("w")(lambda turn: ("ask", {"question": "again?"}))
    history = [
        {"role": "user", "content": [{"type": "text", "text": "go"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "script-1", "name": "ask", "input": {}},
                {"type": "tool_use", "id": "script-2", "name": "ask", "input": {}},
            ],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "script-2", "content": "ok"}]},
    ]
    reply = await provider_for("script/w").complete(request("w", history))
    assert reply.tool_calls[0].id == "script-3"


async def test_a_script_calls_a_workspace_tool_like_any_other_tool() -> None:
    seen: list[TurnView] = []

    def write(turn: TurnView) -> tuple[str, dict[str, Any]]:
        seen.append(turn)
        return ("workspace_write", {"path": "a.py", "content": "x = 1\n"})

    scripted("coder")(write)
    view = TurnView(
        agent="coder",
        turn="turn-1",
        prompt="Code.",
        menu=(),
        allowed_picks=("submit",),
        workspace=("workspace_list", "workspace_read", "workspace_search", "workspace_write"),
    )
    reply = await provider_for("script/coder").complete(request("coder", view=view))
    assert reply.tool_calls == (
        ToolCall(
            id="script-1",
            name="workspace_write",
            arguments={"path": "a.py", "content": "x = 1\n"},
            raw='{"content": "x = 1\\n", "path": "a.py"}',
        ),
    )
    assert seen[0].workspace[-1] == "workspace_write"


async def test_the_full_model_string_is_accepted_too() -> None:
    scripted("w")(lambda turn: ("ask", None))
    reply = await provider_for("script/w").complete(request("script/w"))
    assert reply.model == "script/w"


async def test_params_none_are_empty() -> None:
    scripted("w")(lambda turn: ("ask", None))
    reply = await provider_for("script/w").complete(request("w"))
    assert reply.tool_calls[0].arguments == {} and reply.tool_calls[0].error is None


@pytest.mark.parametrize("params", [["a", "b"], "notes", 3])
async def test_params_that_are_not_a_mapping_are_a_refused_call(params: Any) -> None:
    scripted("w")(lambda turn: ("done", params))
    reply = await provider_for("script/w").complete(request("w"))
    (call,) = reply.tool_calls
    assert (call.name, call.arguments) == ("done", None)
    assert call.error == f"the params must be a mapping of the event's input; got {type(params).__name__}"
    assert call.raw == repr(params)


async def test_none_ends_the_reply_without_a_pick() -> None:
    scripted("w")(lambda turn: None)
    reply = await provider_for("script/w").complete(request("w"))
    assert (reply.text, reply.tool_calls, reply.stop_reason) == (NO_PICK_TEXT, (), "end_turn")
    assert NO_PICK_TEXT == "(the scripted model ended its reply without a pick)"


async def test_a_coroutine_script_is_awaited() -> None:
    async def write(turn: TurnView) -> tuple[str, dict[str, Any]]:
        return ("done", {"notes": turn.prompt})

    scripted("w")(write)
    view = TurnView(agent="writer", turn="t1", prompt="hello", menu=(), allowed_picks=("done",))
    reply = await provider_for("script/w").complete(request("w", view=view))
    assert reply.tool_calls[0].arguments == {"notes": "hello"}


async def test_the_script_reads_the_view_it_is_given() -> None:
    seen: list[TurnView] = []
    scripted("w")(lambda turn: seen.append(turn))
    view = TurnView(
        agent="writer",
        turn="t1",
        prompt="p",
        menu=({"name": "done"},),
        allowed_picks=("done",),
        answers=("The editor replied: formal",),
        workflow="notes",
    )
    await provider_for("script/w").complete(request("w", view=view))
    assert seen == [view]


async def test_without_a_view_the_script_reads_the_menu_and_nothing_else() -> None:
    seen: list[TurnView] = []
    scripted("w")(lambda turn: seen.append(turn))
    await provider_for("script/w").complete(request("w"))
    assert seen == [TurnView(agent="", turn="", prompt="", menu=tuple(json.loads(MENU)), allowed_picks=())]


async def test_a_script_that_raises_is_a_provider_error() -> None:
    def write(turn: TurnView) -> None:
        raise KeyError("tone")

    scripted("notes.writer")(write)
    with pytest.raises(ProviderError) as caught:
        await provider_for("script/notes.writer").complete(request("notes.writer"))
    assert str(caught.value) == "scripted model \"notes.writer\" raised KeyError: 'tone'"
    assert isinstance(caught.value.__cause__, KeyError)


@pytest.mark.parametrize("result", ["done", ("done",), (3, {}), ("", {}), {"event": "done"}])
async def test_any_other_return_value_says_what_a_script_must_return(result: Any) -> None:
    scripted("w")(lambda turn: result)
    with pytest.raises(ProviderError) as caught:
        await provider_for("script/w").complete(request("w"))
    assert str(caught.value) == f'scripted model "w" must return (event name, params) or None; got {result!r}'


async def test_an_unknown_script_names_the_registered_ones() -> None:
    scripted("b.two")(lambda turn: None)
    scripted("a.one")(lambda turn: None)
    with pytest.raises(ProviderError) as caught:
        await provider_for("script/missing").complete(request("missing"))
    assert str(caught.value).startswith('no scripted model "missing": the registered scripts are a.one, b.two.')
