"""`local/<model id>`: a model behind an OpenAI-compatible chat-completions server (vLLM, llama.cpp's server, Ollama),
through the official SDK's `AsyncOpenAI`. The only module that imports `openai`.

Local models send malformed tool arguments more often than hosted ones; those become ToolCalls with `arguments`
None and an `error`, which the Turn loop refuses back to the model instead of guessing.

Two settings make small models on llama.cpp's server (llama-cpp-python, `--chat_format chatml-function-calling`)
walk a Machine; both default to what any OpenAI-compatible server expects:

- `JR2_LOCAL_TOOL_CHOICE`: `auto` (default) lets the model answer in text or call any Menu tool; `allowed` names
  the one Allowed pick in `tool_choice` when the Allowed picks hold exactly one event (else `auto`), so a server
  that constrains a named call with a grammar makes exactly that pick, with arguments that fit its schema. The
  tools block is unchanged either way (the Menu, byte-stable), so the server's prefix cache still hits.
- `JR2_LOCAL_TOOL_RESULTS`: `tool` (default) sends answers and refusals as `tool` messages; `user` sends them as
  the user's text ("Result of your call ask: ..."), for chat templates that drop the `tool` role (llama-cpp-python's
  chatml-function-calling renders only system, user and assistant messages, so the model would never read them).
"""

from __future__ import annotations

import contextlib
import functools
import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import openai

from engine.runtime.providers import _config
from engine.runtime.providers._clients import ClientCache
from engine.runtime.providers._conversation import text_of, turns
from engine.runtime.providers._errors import after_retries, status_error
from engine.runtime.providers.base import (
    ModelReply,
    ModelRequest,
    Provider,
    ProviderError,
    ToolCall,
    Usage,
    parse_arguments,
)

__all__ = [
    "LocalProvider",
    "openai_tools",
    "openai_messages",
    "tool_choice",
    "DEFAULT_BASE_URL",
    "DEFAULT_API_KEY",
    "TOOL_CHOICES",
    "TOOL_RESULTS",
]

DEFAULT_BASE_URL = "http://127.0.0.1:8080/v1"
DEFAULT_API_KEY = "not-needed"

#: The values of JR2_LOCAL_TOOL_CHOICE and JR2_LOCAL_TOOL_RESULTS, the default first.
TOOL_CHOICES = ("auto", "allowed")
TOOL_RESULTS = ("tool", "user")

#: The chat-completions finish reasons in the neutral (Anthropic) words the Turn loop reads.
FINISH_REASONS = {"tool_calls": "tool_use", "function_call": "tool_use", "stop": "end_turn", "length": "max_tokens"}


@functools.lru_cache(maxsize=256)
def _tools_text(tools_json: str) -> str:
    tools = [
        {
            "type": "function",
            "function": {
                "name": tool["name"],
                "description": tool.get("description") or "",
                "parameters": tool.get("input_schema") or {"type": "object", "properties": {}},
            },
        }
        for tool in json.loads(tools_json)
    ]
    return json.dumps(tools)


def openai_tools(tools_json: str) -> list[dict[str, Any]]:
    """The Menu as function tools; a pure function of `tools_json`, so equal Menus give equal bytes (servers with a
    prefix cache, such as vLLM and llama.cpp, reuse the prompt's start only when it is byte-equal)."""
    tools: list[dict[str, Any]] = json.loads(_tools_text(tools_json))
    return tools


def openai_messages(
    system: str, messages: Sequence[Mapping[str, Any]], tool_results: str = "tool"
) -> list[dict[str, Any]]:
    """The system prompt and the neutral conversation as chat messages: a tool_use becomes an assistant's
    `tool_calls` entry (its raw text when the model's arguments were refused, so the model sees what it sent), a
    tool_result a `tool` message right after it (or, with `tool_results="user"`, a line of the user's text naming
    the call), and text the user's or the assistant's content. An assistant's calls without text have the content
    "" (not null: llama.cpp's server refuses null there, and OpenAI and vLLM take "")."""
    out: list[dict[str, Any]] = []
    if system:
        out.append({"role": "system", "content": system})
    names: dict[str, str] = {}
    for role, content in turns(messages):
        texts = [str(block["text"]) for block in content if block.get("type") == "text"]
        if role == "assistant":
            calls = [
                {
                    "id": block["id"],
                    "type": "function",
                    "function": {"name": block["name"], "arguments": _arguments_text(block)},
                }
                for block in content
                if block.get("type") == "tool_use"
            ]
            names.update((call["id"], call["function"]["name"]) for call in calls)
            if not texts and not calls:
                continue
            message: dict[str, Any] = {"role": "assistant", "content": "\n\n".join(texts)}
            if calls:
                message["tool_calls"] = calls
            out.append(message)
            continue
        results = [block for block in content if block.get("type") == "tool_result"]
        if tool_results == "user":
            texts = [_result_line(block, names) for block in results] + texts
        else:
            for block in results:
                text = text_of(block.get("content"))
                if block.get("is_error"):
                    text = f"Error: {text}"
                out.append({"role": "tool", "tool_call_id": block.get("tool_use_id", ""), "content": text})
        if texts:
            out.append({"role": role, "content": "\n\n".join(texts)})
    return out


def _result_line(block: Mapping[str, Any], names: Mapping[str, str]) -> str:
    """A tool result as the user's text, naming the call it answers (its name, else its id)."""
    call_id = str(block.get("tool_use_id", ""))
    call = names.get(call_id) or call_id
    what = "Error from" if block.get("is_error") else "Result of"
    return f"{what} your call {call}: {text_of(block.get('content'))}"


def tool_choice(mode: str, tools: Sequence[Mapping[str, Any]], allowed: Sequence[str] | None) -> Any:
    """`tool_choice` for a request: "auto", or with `mode="allowed"` the one Allowed pick when there is exactly one
    and it is on the Menu."""
    if mode == "allowed" and allowed is not None and len(allowed) == 1:
        names = {tool["function"]["name"] for tool in tools}
        if allowed[0] in names:
            return {"type": "function", "function": {"name": allowed[0]}}
    return "auto"


def _choice_setting(name: str, values: Sequence[str]) -> str:
    value = _config.setting_str(name, values[0]).strip().lower()
    if value not in values:
        raise ProviderError(f"{name} must be one of {', '.join(values)}; got {value!r}")
    return value


def _arguments_text(block: Mapping[str, Any]) -> str:
    if "raw" in block and isinstance(block["raw"], str):
        return block["raw"]
    return json.dumps(block.get("input") or {}, sort_keys=True)


class LocalProvider(Provider):
    """A chat-completions server at `JR2_LOCAL_BASE_URL`. `request.model` is the server's model id (a `local/`
    prefix is also accepted).

    Settings (a Django setting, else the environment variable of the same name): `JR2_LOCAL_BASE_URL`,
    `JR2_LOCAL_API_KEY` (most local servers want none), `JR2_LOCAL_TOOL_CHOICE`, `JR2_LOCAL_TOOL_RESULTS` (see the
    module's docstring), `JR2_PROVIDER_MAX_RETRIES`, `JR2_PROVIDER_TIMEOUT`.
    """

    prefix = "local"

    def __init__(self) -> None:
        self._clients: ClientCache[openai.AsyncOpenAI] = ClientCache()

    async def complete(self, request: ModelRequest) -> ModelReply:
        base_url = _config.setting_str("JR2_LOCAL_BASE_URL", DEFAULT_BASE_URL)
        api_key = _config.setting_str("JR2_LOCAL_API_KEY", DEFAULT_API_KEY)
        retries = _config.max_retries()
        seconds = _config.timeout()
        timeout = openai.Timeout(seconds, connect=_config.connect_timeout(seconds))
        client = await self._clients.get(
            (api_key, base_url, retries, seconds),
            lambda: openai.AsyncOpenAI(api_key=api_key, base_url=base_url, max_retries=retries, timeout=timeout),
        )
        params = self._params(request)
        with _mapped_errors(base_url, retries):
            completion = await client.chat.completions.create(**params)
        return _reply(completion, base_url)

    async def aclose(self) -> None:
        await self._clients.aclose()

    def _params(self, request: ModelRequest) -> dict[str, Any]:
        results = _choice_setting("JR2_LOCAL_TOOL_RESULTS", TOOL_RESULTS)
        params: dict[str, Any] = {
            "model": request.model.removeprefix(f"{self.prefix}/"),
            "messages": openai_messages(request.system, request.messages, results),
            "max_tokens": request.max_tokens,
            "stream": False,
        }
        tools = openai_tools(request.tools_json)
        if tools:
            params["tools"] = tools
            params["tool_choice"] = tool_choice(
                _choice_setting("JR2_LOCAL_TOOL_CHOICE", TOOL_CHOICES),
                tools,
                request.view.allowed_picks if request.view is not None else None,
            )
        if request.dials.get("temperature") is not None:
            params["temperature"] = request.dials["temperature"]
        return params


def _reply(completion: Any, base_url: str) -> ModelReply:
    if not completion.choices:
        raise ProviderError(f"the local model server at {base_url} answered with no choices")
    choice = completion.choices[0]
    message = choice.message
    calls: list[ToolCall] = []
    for index, call in enumerate(message.tool_calls or ()):
        call_id = getattr(call, "id", None) or f"call-{index + 1}"
        function = getattr(call, "function", None)
        if function is None:
            calls.append(
                ToolCall(
                    id=call_id,
                    name=str(getattr(call, "type", "")),
                    arguments=None,
                    error="only function tool calls can be picks",
                )
            )
            continue
        arguments, raw, error = _arguments(function.arguments if function.arguments is not None else "")
        calls.append(ToolCall(id=call_id, name=function.name, arguments=arguments, raw=raw, error=error))
    text = message.content or ""
    stop_reason = FINISH_REASONS.get(str(choice.finish_reason), str(choice.finish_reason or ""))
    if not text and getattr(message, "refusal", None):
        text, stop_reason = str(message.refusal), "refusal"
    usage = completion.usage
    details = getattr(usage, "prompt_tokens_details", None) if usage is not None else None
    return ModelReply(
        text=text,
        tool_calls=tuple(calls),
        stop_reason=stop_reason,
        usage=Usage(
            input=(usage.prompt_tokens or 0) if usage else 0,
            output=(usage.completion_tokens or 0) if usage else 0,
            cache_read=(getattr(details, "cached_tokens", None) or 0) if details else 0,
        ),
        model=str(completion.model or ""),
        response=completion.model_dump(mode="json", warnings=False),
    )


def _arguments(text: Any) -> tuple[dict[str, Any] | None, str, str | None]:
    """`parse_arguments`, except that raw control characters inside JSON strings (a newline, a tab) are read as
    themselves: llama-cpp-python's JSON-schema grammar lets them into strings, and what they mean is plain, so a
    call is not refused for them. Anything else that is not a JSON object is still refused."""
    arguments, raw, error = parse_arguments(text)
    if error is not None and isinstance(text, str):
        try:
            value = json.loads(text, strict=False)
        except json.JSONDecodeError:
            return arguments, raw, error
        if isinstance(value, dict):
            return value, raw, None
    return arguments, raw, error


@contextlib.contextmanager
def _mapped_errors(base_url: str, retries: int) -> Iterator[None]:
    """The SDK's errors as ProviderError, at the boundary (after the SDK's own retries)."""
    after = after_retries(retries)
    server = f"the local model server at {base_url}"
    try:
        yield
    except openai.APIStatusError as err:
        raise status_error(
            err.status_code, _api_message(err), server, "Set JR2_LOCAL_API_KEY to the key the server expects.", after
        ) from err
    except openai.APITimeoutError as err:
        raise ProviderError(
            f"{server} did not answer in time{after}; raise JR2_PROVIDER_TIMEOUT for a slow model", retryable=True
        ) from err
    except openai.APIConnectionError as err:
        cause = f" ({err.__cause__}{after})" if err.__cause__ else after
        raise ProviderError(
            f"could not connect to {server}{cause}: start the server, or set JR2_LOCAL_BASE_URL to where it listens",
            retryable=True,
        ) from err
    except openai.OpenAIError as err:
        raise ProviderError(f"the OpenAI SDK failed talking to {server}: {err}") from err


def _api_message(err: openai.APIStatusError) -> str:
    """The server's own words: OpenAI, vLLM and llama.cpp send {"error": {"message"}}, Ollama {"error": "..."}
    (the SDK has already unwrapped "error")."""
    body = err.body
    if isinstance(body, Mapping) and body.get("message"):
        return str(body["message"])
    if isinstance(body, str) and body:
        return body
    return err.message
