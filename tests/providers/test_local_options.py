"""The local provider's two settings for small models on llama.cpp's server (JR2_LOCAL_TOOL_CHOICE,
JR2_LOCAL_TOOL_RESULTS), over real HTTP to the fake model server, and JR2_MODEL_OVERRIDE, which puts an Agent on
another model than its workflow declares."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from engine.runtime.players import check_model_overrides, model_overrides, player_for
from engine.runtime.providers import DEFAULT_PROVIDERS, ProviderError, aclose_all, provider_for, reset_providers
from engine.runtime.providers.base import ModelRequest, TurnView
from tests.fakes.model_server import ModelServer, text, tool_call
from tests.providers import test_contract as contract

MODEL = "local/qwen3-8b"


def request(allowed: tuple[str, ...] | None, messages: list[dict[str, Any]] | None = None) -> ModelRequest:
    view = TurnView(agent="writer", turn="turn-1", prompt="", menu=(), allowed_picks=allowed) if allowed else None
    return ModelRequest(
        model="qwen3-8b",
        system=contract.SYSTEM,
        tools_json=contract.MENU,
        view=view,
        messages=messages or [{"role": "user", "content": [{"type": "text", "text": "Go."}]}],
    )


@pytest.fixture
async def server(model_server: ModelServer, settings: Any) -> Any:
    settings.JR2_LOCAL_BASE_URL = model_server.openai_url
    settings.JR2_PROVIDER_MAX_RETRIES = 0
    reset_providers()
    yield model_server
    await aclose_all()


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("setting", "allowed", "choice"),
    [
        (None, ("ask",), "auto"),
        ("auto", ("ask",), "auto"),
        ("allowed", ("ask",), {"type": "function", "function": {"name": "ask"}}),
        ("Allowed", ("done",), {"type": "function", "function": {"name": "done"}}),
        ("allowed", ("ask", "done"), "auto"),
        ("allowed", ("reply",), "auto"),  # not on this Agent's Menu
        ("allowed", None, "auto"),  # no view of the Turn
    ],
)
async def test_tool_choice_names_the_one_allowed_pick_when_asked(
    server: ModelServer, settings: Any, setting: str | None, allowed: Any, choice: Any
) -> None:
    settings.JR2_LOCAL_TOOL_CHOICE = setting
    server.queue(text("ok"))
    await provider_for(MODEL).complete(request(allowed))
    [body] = server.bodies
    assert body["tool_choice"] == choice
    assert [t["function"]["name"] for t in body["tools"]] == ["ask", "done"]  # the Menu, whatever is allowed


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("name", "value", "values"),
    [
        ("JR2_LOCAL_TOOL_CHOICE", "required", "auto, allowed"),
        ("JR2_LOCAL_TOOL_RESULTS", "assistant", "tool, user"),
    ],
)
async def test_a_bad_setting_is_refused_before_any_request(
    server: ModelServer, settings: Any, name: str, value: str, values: str
) -> None:
    setattr(settings, name, value)
    with pytest.raises(ProviderError) as caught:
        await provider_for(MODEL).complete(request(("ask",)))
    assert str(caught.value) == f"{name} must be one of {values}; got {value!r}"
    assert server.count() == 0


@pytest.mark.anyio
async def test_tool_results_as_user_text_name_their_call(server: ModelServer, settings: Any) -> None:
    settings.JR2_LOCAL_TOOL_RESULTS = "user"
    server.queue(text("ok"))
    await provider_for(MODEL).complete(request(("ask",), contract.HISTORY))
    [body] = server.bodies
    assert body["messages"][1:] == [
        contract.TestLocal.expected_history[0],
        contract.TestLocal.expected_history[1],
        {"role": "user", "content": "Result of your call ask: The editor is away.\n\nYour reply ended without a pick."},
        contract.TestLocal.expected_history[4],
        {
            "role": "user",
            "content": "Error from your call done: Refused: the arguments are not JSON.\n\n"
            "Notice from your earlier work: saved.\n\n"
            "Formal, please.\n\nAllowed picks now: ask, done.",
        },
    ]
    assert not any(m["role"] == "tool" for m in body["messages"])


@pytest.mark.anyio
async def test_raw_control_characters_in_argument_strings_are_read_as_themselves(server: ModelServer) -> None:
    """llama-cpp-python's JSON-schema grammar lets a raw newline into a string; strict JSON refuses it."""
    raw = '{ "notes": "## New\n- faster\tstart" }'
    server.queue(tool_call("done", raw=raw, id="call_1"), tool_call("done", raw='{"notes": "a\nb"', id="call_2"))
    (call,) = (await provider_for(MODEL).complete(request(("done",)))).tool_calls
    assert (call.arguments, call.raw, call.error) == ({"notes": "## New\n- faster\tstart"}, raw, None)
    (broken,) = (await provider_for(MODEL).complete(request(("done",)))).tool_calls
    assert (
        broken.arguments is None and broken.error is not None and broken.error.startswith("the arguments are not JSON")
    )


# -- JR2_MODEL_OVERRIDE ---------------------------------------------------------------------------------------------


def test_an_override_plays_the_agent_on_its_model(settings: Any) -> None:
    settings.JR2_SCRIPTED = False
    settings.JR2_MODEL_OVERRIDE = '{"notes.writer": "local/smollm2"}'
    player = player_for("notes", "writer", "anthropic/claude-haiku-5-5")
    assert (player.model, player.declared, player.scripted) == ("local/smollm2", "anthropic/claude-haiku-5-5", False)
    assert player.label == "local/smollm2 (JR2_MODEL_OVERRIDE, declared anthropic/claude-haiku-5-5)"
    other = player_for("triage", "writer", "anthropic/claude-haiku-5-5")
    assert other.model != "local/smollm2"
    settings.JR2_SCRIPTED = True  # the override is the Agent's model; offline, its stand-in plays as before
    assert player_for("notes", "writer", "anthropic/claude-haiku-5-5").model == "script/notes.writer"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("{notes.writer: local/x}", "JR2_MODEL_OVERRIDE must be a JSON object of"),
        ('["local/x"]', "JR2_MODEL_OVERRIDE must be an object of"),
        ('{"notes.writer": "smollm2"}', "JR2_MODEL_OVERRIDE['notes.writer'] must be a model"),
        ('{"notes.writer": "local/"}', "JR2_MODEL_OVERRIDE['notes.writer'] must be a model"),
        ({"notes.writer": 3}, "JR2_MODEL_OVERRIDE['notes.writer'] must be a model"),
    ],
)
def test_a_malformed_override_is_named(settings: Any, value: Any, message: str) -> None:
    settings.JR2_MODEL_OVERRIDE = value
    with pytest.raises(ValueError) as caught:
        model_overrides()
    assert str(caught.value).startswith(message)
    assert check_model_overrides({"notes.writer": "anthropic/x"}, DEFAULT_PROVIDERS) == [str(caught.value)]


def test_an_override_must_name_a_loaded_agent_and_a_known_provider(settings: Any) -> None:
    settings.JR2_MODEL_OVERRIDE = {"notes.writer": "local/smollm2"}
    assert check_model_overrides({"notes.writer": "anthropic/x"}, DEFAULT_PROVIDERS) == []
    settings.JR2_MODEL_OVERRIDE = {"notes.editor": "ollama/smollm2"}
    assert check_model_overrides({"notes.writer": "anthropic/x"}, DEFAULT_PROVIDERS) == [
        "JR2_MODEL_OVERRIDE names 'notes.editor', which is no loaded workflow's Agent (the Agents: notes.writer)",
        "JR2_MODEL_OVERRIDE['notes.editor'] is 'ollama/smollm2', whose provider 'ollama' is not one of anthropic, "
        "human, local, mcp, script (setting JR2_PROVIDERS)",
    ]


@pytest.mark.django_db
def test_jr2_up_refuses_a_bad_override_before_it_serves(settings: Any) -> None:
    settings.JR2_MODEL_OVERRIDE = {"notes.editor": "local/smollm2"}
    with pytest.raises(CommandError) as caught:
        call_command("jr2", "up", verbosity=0)
    assert str(caught.value).startswith(
        "jr2 up: JR2_MODEL_OVERRIDE names 'notes.editor', which is no loaded workflow's Agent (the Agents: "
    )
