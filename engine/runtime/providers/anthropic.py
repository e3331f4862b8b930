"""`anthropic/<model id>`: Claude through the official SDK's `AsyncAnthropic`. The only module that imports `anthropic`.

Prompt caching is why the request is built the way it is: the tools block (the Menu) and the system prompt come
first in the prompt, carry `cache_control`, and are the same bytes on every request of an Agent, so every request
after the first reads them from the cache. A third, moving breakpoint sits on the last block of the conversation (as
Anthropic's guide does for multi-turn conversations): the conversation only grows at its end and its earlier blocks'
bytes never change, so each request reads all of the previous request's conversation from the cache and pays full
price only for what is new. Three breakpoints per request, under the API's limit of four.

Retries with backoff (429, 5xx, dropped connections) are the SDK's own; what is left after them leaves as a
`ProviderError` whose message says what to do.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import anthropic

from engine.runtime.providers import _config
from engine.runtime.providers._clients import ClientCache
from engine.runtime.providers._conversation import turns
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
    "AnthropicProvider",
    "anthropic_tools",
    "anthropic_system",
    "anthropic_messages",
    "DEFAULT_BASE_URL",
    "MAX_BREAKPOINTS",
]

DEFAULT_BASE_URL = "https://api.anthropic.com"
CACHE_CONTROL: dict[str, str] = {"type": "ephemeral"}
#: The API refuses a request with more blocks carrying `cache_control` than this.
MAX_BREAKPOINTS = 4
#: Blocks the API does not let carry `cache_control`.
_UNCACHEABLE = frozenset({"thinking", "redacted_thinking"})


@functools.lru_cache(maxsize=256)
def _tools_text(tools_json: str) -> str:
    tools: list[dict[str, Any]] = []
    for tool in json.loads(tools_json):
        entry: dict[str, Any] = {"name": tool["name"]}
        if tool.get("description"):
            entry["description"] = tool["description"]
        entry["input_schema"] = tool.get("input_schema") or {"type": "object", "properties": {}}
        tools.append(entry)
    if tools:
        tools[-1]["cache_control"] = dict(CACHE_CONTROL)
    return json.dumps(tools)


def anthropic_tools(tools_json: str) -> list[dict[str, Any]]:
    """The Menu as the API's tools, `cache_control` on the last one. A pure function of `tools_json` (derived once,
    then parsed fresh for each request), so equal Menus give byte-equal tools blocks."""
    tools: list[dict[str, Any]] = json.loads(_tools_text(tools_json))
    return tools


def anthropic_system(system: str) -> list[dict[str, Any]]:
    """The system prompt as one text block carrying `cache_control` (none for an empty prompt: the API refuses
    empty text blocks)."""
    if not system:
        return []
    return [{"type": "text", "text": system, "cache_control": dict(CACHE_CONTROL)}]


def anthropic_messages(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The neutral conversation as the API's messages: roles alternate (consecutive ones merged), tool results first
    in a user message, and the `raw` we keep on a refused tool_use left out (the API knows no such field). The last
    block that may carry one gets `cache_control`: the moving breakpoint. The blocks are copies, so the recorded
    conversation is never marked and every earlier block goes out in the same bytes on the next request."""
    out: list[dict[str, Any]] = []
    for role, content in turns(messages):
        converted = []
        for block in content:
            if block.get("type") == "tool_use":
                block = {
                    "type": "tool_use",
                    "id": block["id"],
                    "name": block["name"],
                    "input": block.get("input") if isinstance(block.get("input"), Mapping) else {},
                }
            converted.append(block)
        out.append({"role": role, "content": converted})
    _mark_last(out)
    return out


def _mark_last(messages: list[dict[str, Any]]) -> None:
    for message in reversed(messages):
        for block in reversed(message["content"]):
            if block.get("type") not in _UNCACHEABLE:
                block["cache_control"] = dict(CACHE_CONTROL)
                return


class AnthropicProvider(Provider):
    """Claude over the Messages API. `request.model` is the model id (an `anthropic/` prefix is also accepted).

    Settings (a Django setting, else the environment variable of the same name): `JR2_ANTHROPIC_BASE_URL`,
    `JR2_PROVIDER_MAX_RETRIES`, `JR2_PROVIDER_TIMEOUT`. The key is `ANTHROPIC_API_KEY`, read at each call, so a
    key set after start-up is used without a restart.
    """

    prefix = "anthropic"

    def __init__(self) -> None:
        self._clients: ClientCache[anthropic.AsyncAnthropic] = ClientCache()

    async def complete(self, request: ModelRequest) -> ModelReply:
        api_key = os.environ.get("ANTHROPIC_API_KEY", "").strip()
        if not api_key:
            raise ProviderError(
                "ANTHROPIC_API_KEY is not set: export your Anthropic API key as ANTHROPIC_API_KEY in the environment "
                "of the jr2 server, or give this Agent a local/ or script/ model"
            )
        base_url = _config.setting_str("JR2_ANTHROPIC_BASE_URL", DEFAULT_BASE_URL)
        retries = _config.max_retries()
        seconds = _config.timeout()
        timeout = anthropic.Timeout(seconds, connect=_config.connect_timeout(seconds))
        client = await self._clients.get(
            (api_key, base_url, retries, seconds),
            lambda: anthropic.AsyncAnthropic(api_key=api_key, base_url=base_url, max_retries=retries, timeout=timeout),
        )
        # Given per request, the timeout also turns off the SDK's guess that a large max_tokens needs streaming.
        params = {**self._params(request), "timeout": timeout}
        with _mapped_errors(base_url, retries):
            message = await client.messages.create(**params)
        return _reply(message)

    async def aclose(self) -> None:
        await self._clients.aclose()

    def _params(self, request: ModelRequest) -> dict[str, Any]:
        params: dict[str, Any] = {
            "model": request.model.removeprefix(f"{self.prefix}/"),
            "max_tokens": request.max_tokens,
            "messages": anthropic_messages(request.messages),
        }
        system = anthropic_system(request.system)
        if system:
            params["system"] = system
        tools = anthropic_tools(request.tools_json)
        if tools:
            params["tools"] = tools
        dials = request.dials
        if dials.get("thinking") is not None:
            params["thinking"] = dials["thinking"]
        if dials.get("temperature") is not None:
            # Not a keyword of this SDK's `create`, still a field of the API.
            params["extra_body"] = {"temperature": dials["temperature"]}
        return params


def _reply(message: Any) -> ModelReply:
    texts: list[str] = []
    calls: list[ToolCall] = []
    for block in message.content:
        if block.type == "text":
            texts.append(block.text)
        elif block.type == "tool_use":
            data = block.input
            arguments, raw, error = parse_arguments(
                data if isinstance(data, Mapping) else json.dumps(data, default=str)
            )
            calls.append(ToolCall(id=block.id, name=block.name, arguments=arguments, raw=raw, error=error))
    usage = message.usage
    return ModelReply(
        text="".join(texts),
        tool_calls=tuple(calls),
        stop_reason=str(message.stop_reason or ""),
        usage=Usage(
            input=usage.input_tokens or 0,
            output=usage.output_tokens or 0,
            cache_read=usage.cache_read_input_tokens or 0,
            cache_write=usage.cache_creation_input_tokens or 0,
        ),
        model=str(message.model),
        response=message.model_dump(mode="json", warnings=False),
    )


@contextlib.contextmanager
def _mapped_errors(base_url: str, retries: int) -> Iterator[None]:
    """The SDK's errors as ProviderError, at the boundary (after the SDK's own retries)."""
    after = after_retries(retries)
    try:
        yield
    except anthropic.APIStatusError as err:
        raise status_error(
            err.status_code, _api_message(err), "the Anthropic API", "Check ANTHROPIC_API_KEY.", after
        ) from err
    except anthropic.APITimeoutError as err:
        raise ProviderError(
            f"the Anthropic API at {base_url} did not answer in time{after}; raise "
            "JR2_PROVIDER_TIMEOUT if long replies are expected",
            retryable=True,
        ) from err
    except anthropic.APIConnectionError as err:
        cause = f" ({err.__cause__}{after})" if err.__cause__ else after
        raise ProviderError(
            f"could not reach the Anthropic API at {base_url}{cause}: check the network, or JR2_ANTHROPIC_BASE_URL",
            retryable=True,
        ) from err
    except anthropic.AnthropicError as err:
        raise ProviderError(f"the Anthropic SDK failed: {err}") from err


def _api_message(err: anthropic.APIStatusError) -> str:
    message = getattr(err, "api_message", None)
    if isinstance(message, str) and message:
        return message
    body = err.body
    if isinstance(body, Mapping):
        inner = body.get("error")
        if isinstance(inner, Mapping) and inner.get("message"):
            return str(inner["message"])
    return err.message
