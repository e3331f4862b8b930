"""The provider contract: one test class for the seam, run against each real provider over real HTTP.

`ProviderContract` holds the tests every provider must pass (`provider = None`, so pytest does not collect it);
each subclass names its provider, points it at the fake model server and says how its API's request reads. Nothing
is mocked: the official SDK sends real requests, the server records them, and the tests read both sides.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

from engine.runtime.providers import aclose_all, provider_for, reset_providers
from engine.runtime.providers.anthropic import AnthropicProvider
from engine.runtime.providers.base import ModelReply, ModelRequest, Provider, ProviderError, ToolCall, Usage
from engine.runtime.providers.local import LocalProvider
from engine.runtime.workspace.tools import TOOL_NAMES, tools_json
from tests.fakes.model_server import ModelServer, closed_port_url, error, refusal, text, tool_call
from tests.fakes.prompt_cache import CacheUsage, PromptCache, check_breakpoints

CACHE = {"type": "ephemeral"}

pytestmark = pytest.mark.anyio

MAX_RETRIES = 2

MENU = json.dumps(
    [
        {
            "name": "ask",
            "description": "Ask the editor one question.",
            "input_schema": {
                "properties": {"question": {"type": "string"}},
                "required": ["question"],
                "type": "object",
            },
        },
        {
            "name": "done",
            "description": "Call this once, with the finished notes.",
            "input_schema": {"properties": {"notes": {"type": "string"}}, "required": ["notes"], "type": "object"},
        },
    ],
    sort_keys=True,
)

SYSTEM = "You write short release notes.\n\nYou act only by calling tools."
PROMPT = "Write the release notes for these changes:\n- faster start\n\nAllowed picks now: ask, done."
LAST = "Formal, please.\n\nAllowed picks now: ask, done."

#: A recorded conversation as the Turn loop keeps it, with the untidy parts real runs leave: a reply with neither
#: text nor a pick, user messages in a row, a refused pick (its `raw` kept), and text before a tool result.
HISTORY: list[dict[str, Any]] = [
    {"role": "user", "content": [{"type": "text", "text": PROMPT}]},
    {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "One question first."},
            {"type": "tool_use", "id": "t1", "name": "ask", "input": {"question": "Which tone?"}},
        ],
    },
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "The editor is away."}]},
    {"role": "assistant", "content": []},
    {"role": "user", "content": [{"type": "text", "text": "Your reply ended without a pick."}]},
    {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "t2", "name": "done", "input": {}, "raw": "{notes: oops"}],
    },
    {"role": "user", "content": [{"type": "text", "text": "Notice from your earlier work: saved."}]},
    {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "t2",
                "is_error": True,
                "content": "Refused: the arguments are not JSON.",
            },
            {"type": "text", "text": LAST},
        ],
    },
]


def request(model: str, messages: list[dict[str, Any]] | None = None, **dials: Any) -> ModelRequest:
    return ModelRequest(
        model=model,
        system=SYSTEM,
        tools_json=MENU,
        messages=messages
        if messages is not None
        else [{"role": "user", "content": [{"type": "text", "text": PROMPT}]}],
        dials=dials,
    )


class ProviderContract:
    """What every provider owes the Turn loop. Subclasses set `provider` and `model` and fill the hooks."""

    provider: type[Provider] | None = None
    model = ""
    #: The stop reason a refusal arrives as.
    refusal_stop = "refusal"
    #: Whether the API reports tokens written to the prompt cache.
    reports_cache_write = True

    server: ModelServer

    # -- hooks ----------------------------------------------------------------------------------------------------

    def point_at(self, settings: Any, server: ModelServer) -> None:
        raise NotImplementedError("subclasses of ProviderContract must implement point_at()")

    def set_base_url(self, settings: Any, url: str) -> None:
        raise NotImplementedError("subclasses of ProviderContract must implement set_base_url()")

    def tool_names(self, body: dict[str, Any]) -> list[str]:
        raise NotImplementedError("subclasses of ProviderContract must implement tool_names()")

    def conversation(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        """The messages of the request body, without the system prompt."""
        raise NotImplementedError("subclasses of ProviderContract must implement conversation()")

    def last_text(self, body: dict[str, Any]) -> str:
        """The text that ends the request's last message."""
        raise NotImplementedError("subclasses of ProviderContract must implement last_text()")

    expected_history: list[dict[str, Any]] = []

    # -- fixtures -------------------------------------------------------------------------------------------------

    @pytest.fixture(autouse=True)
    async def _wired(self, model_server: ModelServer, settings: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
        settings.JR2_PROVIDER_MAX_RETRIES = MAX_RETRIES
        settings.JR2_PROVIDER_TIMEOUT = 10
        self.point_at(settings, model_server)
        self.server = model_server
        reset_providers()
        yield
        await aclose_all()

    async def complete(self, req: ModelRequest | None = None) -> ModelReply:
        return await provider_for(self.model).complete(req or request(self.model_id))

    @property
    def model_id(self) -> str:
        return self.model.split("/", 1)[1]

    # -- the contract ---------------------------------------------------------------------------------------------

    async def test_the_prefix_picks_this_provider(self) -> None:
        assert self.provider is not None
        assert type(provider_for(self.model)) is self.provider
        assert provider_for(self.model) is provider_for(self.model)

    async def test_a_tool_call_is_parsed_into_a_tool_call(self) -> None:
        self.server.queue(tool_call("ask", {"question": "Which tone?"}, id="call-7"))
        reply = await self.complete()
        assert reply.tool_calls == (
            ToolCall(id="call-7", name="ask", arguments={"question": "Which tone?"}, raw='{"question": "Which tone?"}'),
        )
        assert reply.stop_reason == "tool_use"
        assert reply.text == ""
        assert reply.model == self.model_id
        assert self.server.requests[0].body["model"] == self.model_id
        assert json.loads(json.dumps(reply.response))["id"]

    async def test_plain_text_ends_the_turn_without_a_pick(self) -> None:
        self.server.queue(text("I have nothing to pick."))
        reply = await self.complete()
        assert (reply.text, reply.tool_calls, reply.stop_reason) == ("I have nothing to pick.", (), "end_turn")

    async def test_a_refusal_is_returned_as_the_stop_reason(self) -> None:
        self.server.queue(refusal())
        reply = await self.complete()
        assert reply.stop_reason == self.refusal_stop
        assert reply.tool_calls == ()

    async def test_the_tools_block_is_byte_identical_on_every_request(self) -> None:
        self.server.queue(
            tool_call("ask", {"question": "Tone?"}), tool_call("ask", {"question": "Length?"}), text("done")
        )
        messages: list[dict[str, Any]] = [{"role": "user", "content": [{"type": "text", "text": PROMPT}]}]
        for _ in range(3):
            reply = await self.complete(request(self.model_id, messages))
            messages.append(reply.message())
            for call in reply.tool_calls:
                messages.append(
                    {
                        "role": "user",
                        "content": [
                            {
                                "type": "tool_result",
                                "tool_use_id": call.id,
                                "content": "Noted.\n\nAllowed picks now: ask, done.",
                            }
                        ],
                    }
                )
        bodies = self.server.bodies
        assert len(bodies) == 3
        assert len({len(self.conversation(b)) for b in bodies}) == 3, "the conversations should differ"
        hashes = {hashlib.sha256(json.dumps(b["tools"]).encode()).hexdigest() for b in bodies}
        assert len(hashes) == 1
        assert self.tool_names(bodies[0]) == ["ask", "done"]
        raw_tools = {_raw_member(r.raw, b"tools") for r in self.server.requests}
        assert len(raw_tools) == 1

    async def test_the_workspace_tools_go_after_the_menu_in_the_same_bytes_on_every_request(self) -> None:
        tools = tools_json(MENU, True)
        write = {"path": "notes.md", "content": "- faster start\n"}
        self.server.queue(tool_call("workspace_write", write, id="w-1"), text("ok"))
        messages: list[dict[str, Any]] = [{"role": "user", "content": [{"type": "text", "text": PROMPT}]}]
        reply = await self.complete(
            ModelRequest(model=self.model_id, system=SYSTEM, tools_json=tools, messages=messages)
        )
        [call] = reply.tool_calls
        assert (call.id, call.name, call.arguments, call.error) == ("w-1", "workspace_write", write, None)
        messages += [
            reply.message(),
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "w-1", "content": "notes.md created (15 bytes)."}],
            },
        ]
        await self.complete(ModelRequest(model=self.model_id, system=SYSTEM, tools_json=tools, messages=messages))
        first, second = self.server.bodies
        assert self.tool_names(first) == ["ask", "done", *TOOL_NAMES]
        assert first["tools"] == second["tools"]
        assert len({_raw_member(r.raw, b"tools") for r in self.server.requests}) == 1

    async def test_the_last_user_text_is_sent_verbatim_and_last(self) -> None:
        self.server.queue(text("ok"), text("ok"))
        await self.complete()
        await self.complete(request(self.model_id, HISTORY[:6] + [HISTORY[-1]]))
        first, second = self.server.bodies
        assert self.last_text(first) == PROMPT
        assert self.last_text(second) == LAST

    async def test_the_history_round_trips_into_the_api_format(self) -> None:
        self.server.queue(text("ok"))
        await self.complete(request(self.model_id, HISTORY))
        assert self.conversation(self.server.bodies[0]) == self.expected_history

    async def test_usage_is_mapped(self) -> None:
        self.server.queue(text("ok", usage={"input": 120, "output": 30, "cache_read": 900, "cache_write": 64}))
        reply = await self.complete()
        assert reply.usage == Usage(
            input=120, output=30, cache_read=900, cache_write=64 if self.reports_cache_write else 0
        )

    async def test_dials_are_sent(self) -> None:
        self.server.queue(text("ok"), text("ok"))
        await self.complete()
        await self.complete(request(self.model_id, max_tokens=321, temperature=0.25))
        default, dialled = self.server.bodies
        assert default["max_tokens"] == 4096 and "temperature" not in default
        assert dialled["max_tokens"] == 321 and dialled["temperature"] == 0.25

    async def test_a_429_then_success_is_retried_and_succeeds(self) -> None:
        self.server.queue(error(429), tool_call("done", {"notes": "- faster start"}))
        reply = await self.complete()
        assert reply.tool_calls[0].arguments == {"notes": "- faster start"}
        assert self.server.count() == 2

    async def test_429_every_time_is_a_retryable_provider_limit(self) -> None:
        self.server.always(error(429, "Number of requests has exceeded your rate limit."))
        with pytest.raises(ProviderError) as caught:
            await self.complete()
        assert str(caught.value) == "provider limit: 429 Number of requests has exceeded your rate limit."
        assert caught.value.retryable and caught.value.status == 429
        assert self.server.count() == MAX_RETRIES + 1

    async def test_500_every_time_is_retryable(self) -> None:
        self.server.always(error(500, "Internal server error."))
        with pytest.raises(ProviderError) as caught:
            await self.complete()
        assert caught.value.retryable and caught.value.status == 500
        assert "(500)" in str(caught.value) and "Internal server error." in str(caught.value)
        assert self.server.count() == MAX_RETRIES + 1

    async def test_401_is_not_retried_and_says_the_key_was_refused(self) -> None:
        self.server.queue(error(401, "invalid x-api-key"))
        with pytest.raises(ProviderError) as caught:
            await self.complete()
        assert not caught.value.retryable and caught.value.status == 401
        assert "refused the key (401): invalid x-api-key" in str(caught.value)
        assert self.server.count() == 1

    async def test_400_says_the_request_was_refused_with_the_api_message(self) -> None:
        self.server.queue(error(400, "messages: roles must alternate"))
        with pytest.raises(ProviderError) as caught:
            await self.complete()
        assert str(caught.value).endswith("refused the request (400): messages: roles must alternate")
        assert not caught.value.retryable and caught.value.status == 400
        assert self.server.count() == 1

    async def test_connection_refused_is_retryable_and_names_the_url(self, settings: Any) -> None:
        settings.JR2_PROVIDER_MAX_RETRIES = 0  # the SDK backs off 0.5 s and more between connection attempts
        url = closed_port_url()
        self.set_base_url(settings, url)
        with pytest.raises(ProviderError) as caught:
            await self.complete()
        assert caught.value.retryable and caught.value.status is None
        assert url in str(caught.value)

    async def test_a_reply_slower_than_the_timeout_is_retryable(self, settings: Any) -> None:
        settings.JR2_PROVIDER_MAX_RETRIES = 0
        settings.JR2_PROVIDER_TIMEOUT = 0.1
        self.server.queue(text("too late", delay=0.4))
        with pytest.raises(ProviderError) as caught:
            await self.complete()
        assert caught.value.retryable and "did not answer in time" in str(caught.value)
        assert "JR2_PROVIDER_TIMEOUT" in str(caught.value)

    async def test_a_changed_base_url_is_used_at_the_next_call(self, settings: Any) -> None:
        with ModelServer([text("from the second server")]) as other:
            self.point_at(settings, other)
            reply = await self.complete()
        assert reply.text == "from the second server"
        assert self.server.count() == 0


def _raw_member(raw: bytes, name: bytes) -> bytes:
    """The bytes of one top-level member of a JSON body exactly as they were sent (the body is parsed once to find
    where the member starts and ends)."""
    decoder = json.JSONDecoder()
    text_ = raw.decode()
    start = text_.index(f'"{name.decode()}"')
    value_start = text_.index(":", start) + 1
    while text_[value_start] == " ":
        value_start += 1
    _, end = decoder.raw_decode(text_, value_start)
    return text_[value_start:end].encode()


class TestAnthropic(ProviderContract):
    provider = AnthropicProvider
    model = "anthropic/claude-test-1"

    def point_at(self, settings: Any, server: ModelServer) -> None:
        settings.JR2_ANTHROPIC_BASE_URL = server.url

    def set_base_url(self, settings: Any, url: str) -> None:
        settings.JR2_ANTHROPIC_BASE_URL = url

    def tool_names(self, body: dict[str, Any]) -> list[str]:
        return [tool["name"] for tool in body["tools"]]

    def conversation(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        messages: list[dict[str, Any]] = body["messages"]
        return messages

    def last_text(self, body: dict[str, Any]) -> str:
        last = body["messages"][-1]
        assert last["role"] == "user"
        block = last["content"][-1]
        assert block["type"] == "text"
        return str(block["text"])

    expected_history = [
        {"role": "user", "content": [{"type": "text", "text": PROMPT}]},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "One question first."},
                {"type": "tool_use", "id": "t1", "name": "ask", "input": {"question": "Which tone?"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "The editor is away."},
                {"type": "text", "text": "Your reply ended without a pick."},
            ],
        },
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t2", "name": "done", "input": {}}]},
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "t2",
                    "is_error": True,
                    "content": "Refused: the arguments are not JSON.",
                },
                {"type": "text", "text": "Notice from your earlier work: saved."},
                {"type": "text", "text": LAST, "cache_control": {"type": "ephemeral"}},
            ],
        },
    ]

    async def test_the_moving_breakpoint_sits_on_the_last_block_only(self) -> None:
        self.server.queue(text("ok"))
        await self.complete(request(self.model_id, HISTORY))
        messages = self.server.bodies[0]["messages"]
        marked = [
            (m, b)
            for m, msg in enumerate(messages)
            for b, block in enumerate(msg["content"])
            if "cache_control" in block
        ]
        assert marked == [(len(messages) - 1, len(messages[-1]["content"]) - 1)]
        assert "cache_control" not in json.dumps(HISTORY)  # the recorded conversation is not marked

    async def test_a_thinking_block_last_leaves_the_breakpoint_on_the_block_before(self) -> None:
        self.server.queue(text("ok"))
        messages = [
            {"role": "user", "content": [{"type": "text", "text": PROMPT}]},
            {
                "role": "assistant",
                "content": [{"type": "text", "text": "Hm."}, {"type": "thinking", "thinking": "x", "signature": "s"}],
            },
        ]
        await self.complete(request(self.model_id, messages))
        last = self.server.bodies[0]["messages"][-1]["content"]
        assert [b.get("cache_control") for b in last] == [{"type": "ephemeral"}, None]

    async def test_each_request_reads_the_previous_conversation_from_the_cache(self) -> None:
        """Three requests of one growing conversation against the fake server's prompt cache: from the second on,
        all that the previous request sent is read from the cache and only the new blocks are written."""
        self.server.cache = PromptCache()
        self.server.queue(*(tool_call("ask", {"question": f"Q{i}?"}, id=f"toolu_{i}") for i in range(3)))
        messages: list[dict[str, Any]] = [{"role": "user", "content": [{"type": "text", "text": PROMPT}]}]
        usages = []
        for i in range(3):
            reply = await self.complete(request(self.model_id, list(messages)))
            usages.append(reply.usage)
            messages += [
                reply.message(),
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": f"toolu_{i}", "content": f"A{i}."}],
                },
            ]
        first, second, third = usages
        assert (first.input, first.cache_read) == (0, 0) and first.cache_write > 0
        assert second.cache_read == first.cache_write and second.input == 0
        assert third.cache_read == second.cache_read + second.cache_write and third.input == 0
        assert 0 < third.cache_write < second.cache_read  # only the two new blocks are written

    async def test_without_the_moving_breakpoint_the_conversation_is_paid_in_full(self) -> None:
        """The fake cache can fail: the same second request with its conversation breakpoint taken out reads only
        the tools and the system prompt and pays for the conversation at full price."""
        cache = PromptCache()
        self.server.queue(text("ok"))
        await self.complete(request(self.model_id, HISTORY))
        body = self.server.bodies[0]
        marked = cache.usage(body)
        assert cache.usage(body) == CacheUsage(input=0, cache_write=0, cache_read=marked.cache_write)
        bare = {
            **body,
            "messages": json.loads(
                json.dumps(body["messages"]).replace(', "cache_control": {"type": "ephemeral"}', "")
            ),
        }
        assert "cache_control" not in json.dumps(bare["messages"])
        unmarked = cache.usage(bare)
        assert unmarked.input > 0 and unmarked.cache_read < marked.cache_write

    async def test_more_than_four_breakpoints_is_the_apis_400(self) -> None:
        """The fake server refuses what the API refuses, so a provider that marked too many blocks would fail."""
        import anthropic

        tools = [{"name": f"e{i}", "input_schema": {"type": "object"}, "cache_control": CACHE} for i in range(4)]
        messages = [{"role": "user", "content": [{"type": "text", "text": PROMPT, "cache_control": CACHE}]}]
        client = anthropic.AsyncAnthropic(api_key="test-key", base_url=self.server.url, max_retries=0)
        with pytest.raises(
            anthropic.BadRequestError, match="A maximum of 4 blocks with cache_control may be provided. Found 5."
        ):
            await client.messages.create(model=self.model_id, max_tokens=10, tools=tools, messages=messages)  # type: ignore[arg-type]
        await client.close()
        assert check_breakpoints({"tools": tools[:3], "messages": messages}) == 4

    async def test_missing_key_says_to_set_it_and_sends_nothing(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.delenv("ANTHROPIC_API_KEY")
        with pytest.raises(ProviderError) as caught:
            await self.complete()
        assert str(caught.value).startswith("ANTHROPIC_API_KEY is not set: ")
        assert not caught.value.retryable
        assert self.server.count() == 0

    async def test_the_key_is_read_at_each_call_and_sent(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.server.queue(text("ok"), text("ok"))
        await self.complete()
        monkeypatch.setenv("ANTHROPIC_API_KEY", "rotated-key")
        await self.complete()
        first, second = (r.headers for r in self.server.requests)
        assert "test-key" in first.get("x-api-key", first.get("authorization", ""))
        assert "rotated-key" in second.get("x-api-key", second.get("authorization", ""))

    async def test_a_tool_input_that_is_not_an_object_is_a_refused_call(self) -> None:
        self.server.queue(tool_call("done", ["- faster start"], id="toolu_1"))
        reply = await self.complete()
        (call,) = reply.tool_calls
        assert (call.id, call.name, call.arguments) == ("toolu_1", "done", None)
        assert call.raw == '["- faster start"]'
        assert call.error == "the arguments must be a JSON object; got list"

    async def test_thinking_is_passed_and_its_blocks_go_back_unchanged(self) -> None:
        self.server.queue(
            tool_call("ask", {"question": "Tone?"}, id="toolu_1", thinking="The editor decides."), text("ok")
        )
        thinking = {"type": "enabled", "budget_tokens": 2048}
        first = await self.complete(request(self.model_id, max_tokens=8192, thinking=thinking))
        messages = [
            {"role": "user", "content": [{"type": "text", "text": PROMPT}]},
            first.message(),
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "Formal."}]},
        ]
        await self.complete(request(self.model_id, messages, max_tokens=8192, thinking=thinking))
        sent_first, sent_second = self.server.bodies
        assert sent_first["thinking"] == thinking
        assert sent_second["messages"][1]["content"] == [
            {"type": "thinking", "thinking": "The editor decides.", "signature": "sig-0001"},
            {"type": "tool_use", "id": "toolu_1", "name": "ask", "input": {"question": "Tone?"}},
        ]

    async def test_a_large_max_tokens_is_sent_without_streaming(self) -> None:
        self.server.queue(text("ok"))
        reply = await self.complete(request(self.model_id, max_tokens=64000))
        assert reply.text == "ok" and self.server.bodies[0]["max_tokens"] == 64000

    async def test_a_529_overload_is_retryable(self) -> None:
        self.server.always(error(529, "Overloaded"))
        with pytest.raises(ProviderError) as caught:
            await self.complete()
        assert caught.value.retryable and caught.value.status == 529
        assert "Overloaded" in str(caught.value)


class TestLocal(ProviderContract):
    provider = LocalProvider
    model = "local/qwen3-8b"
    refusal_stop = "content_filter"
    reports_cache_write = False

    def point_at(self, settings: Any, server: ModelServer) -> None:
        settings.JR2_LOCAL_BASE_URL = server.openai_url

    def set_base_url(self, settings: Any, url: str) -> None:
        settings.JR2_LOCAL_BASE_URL = url

    def tool_names(self, body: dict[str, Any]) -> list[str]:
        return [tool["function"]["name"] for tool in body["tools"]]

    def conversation(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        system, *messages = body["messages"]
        assert system == {"role": "system", "content": SYSTEM}
        return messages

    def last_text(self, body: dict[str, Any]) -> str:
        last = body["messages"][-1]
        assert last["role"] == "user"
        return str(last["content"])

    expected_history = [
        {"role": "user", "content": PROMPT},
        {
            "role": "assistant",
            "content": "One question first.",
            "tool_calls": [
                {
                    "id": "t1",
                    "type": "function",
                    "function": {"name": "ask", "arguments": '{"question": "Which tone?"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "t1", "content": "The editor is away."},
        {"role": "user", "content": "Your reply ended without a pick."},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": "t2", "type": "function", "function": {"name": "done", "arguments": "{notes: oops"}}],
        },
        {"role": "tool", "tool_call_id": "t2", "content": "Error: Refused: the arguments are not JSON."},
        {"role": "user", "content": "Notice from your earlier work: saved.\n\n" + LAST},
    ]

    async def test_tools_are_function_tools_with_tool_choice_auto(self) -> None:
        self.server.queue(text("ok"))
        await self.complete()
        body = self.server.bodies[0]
        assert body["tool_choice"] == "auto"
        assert body["tools"][1] == {
            "type": "function",
            "function": {
                "name": "done",
                "description": "Call this once, with the finished notes.",
                "parameters": json.loads(MENU)[1]["input_schema"],
            },
        }

    @pytest.mark.parametrize(
        ("raw", "error_start"),
        [
            ("{notes: oops", "the arguments are not JSON ("),
            ('["- faster start"]', "the arguments must be a JSON object; got list"),
            ('"- faster start"', "the arguments must be a JSON object; got str"),
        ],
    )
    async def test_malformed_tool_arguments_are_a_refused_call(self, raw: str, error_start: str) -> None:
        self.server.queue(tool_call("done", raw=raw, id="call_1"))
        reply = await self.complete()
        (call,) = reply.tool_calls
        assert (call.id, call.name, call.arguments, call.raw) == ("call_1", "done", None, raw)
        assert call.error is not None and call.error.startswith(error_start)
        assert reply.message()["content"][0] == {
            "type": "tool_use",
            "id": "call_1",
            "name": "done",
            "input": {},
            "raw": raw,
        }

    async def test_the_api_key_setting_is_sent(self, settings: Any) -> None:
        self.server.queue(text("ok"), text("ok"))
        await self.complete()
        settings.JR2_LOCAL_API_KEY = "vllm-secret"
        await self.complete()
        first, second = (r.headers["authorization"] for r in self.server.requests)
        assert (first, second) == ("Bearer not-needed", "Bearer vllm-secret")

    async def test_connection_refused_says_to_start_the_server(self, settings: Any) -> None:
        settings.JR2_PROVIDER_MAX_RETRIES = 0
        settings.JR2_LOCAL_BASE_URL = closed_port_url() + "/v1"
        with pytest.raises(ProviderError) as caught:
            await self.complete()
        assert "start the server, or set JR2_LOCAL_BASE_URL" in str(caught.value)
