"""A real local HTTP server that plays a model, for tests: it speaks enough of Anthropic's `POST /v1/messages` and
OpenAI's `POST /v1/chat/completions` for both official SDKs to parse its answers.

It records every request (path, headers, parsed JSON body, raw bytes) and answers each from a queue of scripted
replies, or from a `responder(body) -> Reply | None` you give it (None falls back to the queue). The same `Reply`
is rendered in whichever API the request was made in. With nothing left to answer, it sends a 400 that says so
(not retried by the SDKs, so a test that asks more than it scripted fails at once and clearly).

    from tests.fakes.model_server import ModelServer, text, tool_call

    with ModelServer() as server:                          # or the `model_server` fixture
        server.queue(tool_call("ask", {"question": "Which tone?"}), text("done"))
        settings.JR2_ANTHROPIC_BASE_URL = server.url       # local: settings.JR2_LOCAL_BASE_URL = server.openai_url
        ...                                                # run the code that calls the model
        assert server.requests[0].body["tools"][-1]["cache_control"] == {"type": "ephemeral"}

Replies: `tool_call(name, input)` (or `raw="..."` for argument text that is not JSON), `text("...")` (end_turn),
`refusal()`, `error(429)` / `error(500)` / `error(401)` / `error(400, "message")`; each takes `usage={"input": ...,
"output": ..., "cache_read": ..., "cache_write": ...}`, and `delay=` seconds to answer slowly. `server.always(r)`
answers every request with `r` once the queue is empty (e.g. 429 every time). Error replies carry `retry-after: 0`
and `retry-after-ms: 1`: both SDKs ignore a zero `retry-after` and back off 0.5 s and more, so the millisecond header
is what keeps retries fast.

`ModelServer(prompt_cache=True)` keeps a prompt cache (tests/fakes/prompt_cache.py): each Anthropic request's
`input_tokens`, `cache_read_input_tokens` and `cache_creation_input_tokens` are then computed from the breakpoints
it carries, as the API would report them (keys a reply's `usage=` gives still win). Either way, a request with more
than 4 `cache_control` blocks gets the API's 400.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tests.fakes.prompt_cache import PromptCache, TooManyBreakpoints, check_breakpoints
from tests.live_server import free_port

__all__ = [
    "ModelServer",
    "Reply",
    "ToolUse",
    "Recorded",
    "tool_call",
    "text",
    "refusal",
    "error",
    "closed_port_url",
    "model_server",
]

ANTHROPIC_PATH = "/v1/messages"
OPENAI_PATH = "/v1/chat/completions"

#: The neutral (Anthropic) stop reasons as chat-completions finish reasons.
FINISH_REASONS = {"tool_use": "tool_calls", "end_turn": "stop", "max_tokens": "length", "refusal": "content_filter"}

ANTHROPIC_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}
DEFAULT_ERROR_MESSAGES = {
    400: "Your request was malformed.",
    401: "invalid x-api-key",
    403: "Permission denied.",
    404: "Not found.",
    429: "Number of request tokens has exceeded your per-minute rate limit.",
    500: "Internal server error.",
    529: "Overloaded.",
}


@dataclass(frozen=True)
class ToolUse:
    """One tool call of a reply. `raw`, when given, is sent as the arguments text exactly (OpenAI); Anthropic gets
    it parsed when it is JSON, else as a string `input` (which a real API never sends)."""

    name: str
    input: Any = None
    raw: str | None = None
    id: str | None = None


@dataclass(frozen=True)
class Reply:
    """One scripted answer: a model's reply (text, tool calls, stop reason, usage) or an HTTP error."""

    text: str = ""
    calls: tuple[ToolUse, ...] = ()
    stop_reason: str | None = None
    usage: Mapping[str, int] = field(default_factory=dict)
    status: int = 200
    message: str = ""
    headers: Mapping[str, str] = field(default_factory=dict)
    model: str | None = None
    delay: float = 0.0
    thinking: str = ""

    @property
    def stop(self) -> str:
        return self.stop_reason or ("tool_use" if self.calls else "end_turn")


def tool_call(
    name: str,
    input: Any = None,
    *,
    raw: str | None = None,
    id: str | None = None,
    text: str = "",
    usage: Mapping[str, int] | None = None,
    delay: float = 0.0,
    thinking: str = "",
) -> Reply:
    """A reply that calls one tool (a pick); `input` defaults to {}. `thinking` adds a thinking block (Anthropic)."""
    use = ToolUse(name=name, input={} if input is None and raw is None else input, raw=raw, id=id)
    return Reply(text=text, calls=(use,), usage=dict(usage or {}), delay=delay, thinking=thinking)


def text(
    content: str, *, stop_reason: str = "end_turn", usage: Mapping[str, int] | None = None, delay: float = 0.0
) -> Reply:
    """A reply of plain text and no pick."""
    return Reply(text=content, stop_reason=stop_reason, usage=dict(usage or {}), delay=delay)


def refusal(content: str = "", *, usage: Mapping[str, int] | None = None) -> Reply:
    """A reply the model's safety system stopped ("refusal"; chat completions say "content_filter")."""
    return Reply(text=content, stop_reason="refusal", usage=dict(usage or {}))


def error(
    status: int, message: str | None = None, *, headers: Mapping[str, str] | None = None, delay: float = 0.0
) -> Reply:
    """An HTTP error with the API's JSON error body. Retry headers make the SDKs retry at once."""
    base = {"retry-after": "0", "retry-after-ms": "1"}
    return Reply(
        status=status,
        message=message or DEFAULT_ERROR_MESSAGES.get(status, f"Error {status}."),
        headers={**base, **(headers or {})},
        delay=delay,
    )


@dataclass(frozen=True)
class Recorded:
    """One request as the server received it."""

    method: str
    path: str
    headers: Mapping[str, str]
    body: Any
    raw: bytes

    @property
    def api(self) -> str:
        return "anthropic" if self.path.endswith(ANTHROPIC_PATH) else "openai"


Responder = Callable[[Any], "Reply | None"]


class ModelServer:
    """The server. Start it with `with ModelServer() as server:` (or `start()` / `stop()`)."""

    def __init__(
        self,
        replies: tuple[Reply, ...] | list[Reply] = (),
        *,
        responder: Responder | None = None,
        prompt_cache: bool = False,
    ) -> None:
        self.replies: deque[Reply] = deque(replies)
        self.cache: PromptCache | None = PromptCache() if prompt_cache else None
        self.responder = responder
        self.default: Reply | None = None
        self.requests: list[Recorded] = []
        self._lock = threading.Lock()
        self._sockets: set[socket.socket] = set()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- scripting ------------------------------------------------------------------------------------------------

    def queue(self, *replies: Reply) -> ModelServer:
        """Add replies, answered in order, one for each request."""
        with self._lock:
            self.replies.extend(replies)
        return self

    def always(self, reply: Reply | None) -> ModelServer:
        """Answer with `reply` whenever the queue is empty (None: stop doing so)."""
        self.default = reply
        return self

    @property
    def bodies(self) -> list[Any]:
        with self._lock:
            return [r.body for r in self.requests]

    def count(self, path: str | None = None) -> int:
        with self._lock:
            return sum(1 for r in self.requests if path is None or r.path.endswith(path))

    # -- addresses ------------------------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        """The base URL for Anthropic's SDK (it appends /v1/messages)."""
        if self._httpd is None:
            raise RuntimeError("the model server is not started")
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def openai_url(self) -> str:
        """The base URL for OpenAI's SDK (it appends /chat/completions)."""
        return self.url + "/v1"

    # -- lifecycle ------------------------------------------------------------------------------------------------

    def start(self) -> ModelServer:
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.01}, name="fake-model-server", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        httpd.shutdown()
        httpd.server_close()
        with self._lock:
            sockets, self._sockets = set(self._sockets), set()
        for sock in sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> ModelServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- answering (on the server's threads) ----------------------------------------------------------------------

    def _next_reply(self, recorded: Recorded) -> Reply | None:
        if self.responder is not None:
            reply = self.responder(recorded.body)
            if reply is not None:
                return reply
        with self._lock:
            if self.replies:
                return self.replies.popleft()
        return self.default

    def _answer(self, recorded: Recorded, number: int) -> tuple[int, dict[str, str], Any]:
        if recorded.path.endswith(ANTHROPIC_PATH):
            api = "anthropic"
        elif recorded.path.endswith(OPENAI_PATH):
            api = "openai"
        else:
            return 404, {}, _error_body("openai", 404, f"the fake model server has no {recorded.path}")
        if not isinstance(recorded.body, dict):
            return 400, {}, _error_body(api, 400, "the request body is not a JSON object")
        computed: dict[str, int] = {}
        if api == "anthropic":
            try:
                computed = self._cache_usage(recorded.body)
            except TooManyBreakpoints as err:
                return 400, {}, _error_body(api, 400, str(err))
        reply = self._next_reply(recorded)
        if reply is None:
            return (
                400,
                {},
                _error_body(
                    api,
                    400,
                    f"the fake model server has no reply queued for request "
                    f"#{number} ({recorded.method} {recorded.path})",
                ),
            )
        if reply.delay:
            time.sleep(reply.delay)
        if reply.status != 200:
            return reply.status, dict(reply.headers), _error_body(api, reply.status, reply.message)
        model = reply.model or str(recorded.body.get("model", "fake-model"))
        if api == "anthropic":
            return 200, dict(reply.headers), _anthropic_message(reply, model, number, computed)
        return 200, dict(reply.headers), _openai_completion(reply, model, number)

    def _cache_usage(self, body: dict[str, Any]) -> dict[str, int]:
        if self.cache is None:
            check_breakpoints(body)
            return {}
        usage = self.cache.usage(body)
        return {"input": usage.input, "cache_read": usage.cache_read, "cache_write": usage.cache_write}


def _handler_for(server: ModelServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def setup(self) -> None:
            super().setup()
            with server._lock:
                server._sockets.add(self.request)

        def finish(self) -> None:
            with server._lock:
                server._sockets.discard(self.request)
            super().finish()

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body: Any = json.loads(raw) if raw else None
            except json.JSONDecodeError:
                body = None
            recorded = Recorded(
                method="POST",
                path=self.path.split("?", 1)[0],
                headers={k.lower(): v for k, v in self.headers.items()},
                body=body,
                raw=raw,
            )
            with server._lock:
                server.requests.append(recorded)
                number = len(server.requests)
            status, headers, payload = server._answer(recorded, number)
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


def _usage(reply: Reply, computed: Mapping[str, int] | None = None) -> dict[str, int]:
    usage = {"input": 10, "output": 5, "cache_read": 0, "cache_write": 0}
    usage.update(computed or {})
    usage.update(reply.usage)
    return usage


def _anthropic_message(
    reply: Reply, model: str, number: int, computed: Mapping[str, int] | None = None
) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if reply.thinking:
        content.append({"type": "thinking", "thinking": reply.thinking, "signature": f"sig-{number:04d}"})
    if reply.text:
        content.append({"type": "text", "text": reply.text})
    for index, use in enumerate(reply.calls):
        data = use.input
        if use.raw is not None:
            try:
                data = json.loads(use.raw)
            except json.JSONDecodeError:
                data = use.raw
        content.append(
            {"type": "tool_use", "id": use.id or f"toolu_{number:04d}_{index}", "name": use.name, "input": data}
        )
    usage = _usage(reply, computed)
    return {
        "id": f"msg_{number:04d}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": reply.stop,
        "stop_sequence": None,
        "usage": {
            "input_tokens": usage["input"],
            "output_tokens": usage["output"],
            "cache_read_input_tokens": usage["cache_read"],
            "cache_creation_input_tokens": usage["cache_write"],
        },
    }


def _openai_completion(reply: Reply, model: str, number: int) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
    if reply.calls:
        message["tool_calls"] = [
            {
                "id": use.id or f"call_{number:04d}_{index}",
                "type": "function",
                "function": {"name": use.name, "arguments": use.raw if use.raw is not None else json.dumps(use.input)},
            }
            for index, use in enumerate(reply.calls)
        ]
    usage = _usage(reply)
    return {
        "id": f"chatcmpl-{number:04d}",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": FINISH_REASONS.get(reply.stop, reply.stop)}],
        "usage": {
            "prompt_tokens": usage["input"],
            "completion_tokens": usage["output"],
            "total_tokens": usage["input"] + usage["output"],
            "prompt_tokens_details": {"cached_tokens": usage["cache_read"]},
        },
    }


def _error_body(api: str, status: int, message: str) -> dict[str, Any]:
    if api == "anthropic":
        kind = ANTHROPIC_ERROR_TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")
        return {"type": "error", "error": {"type": kind, "message": message}}
    kind = "rate_limit_exceeded" if status == 429 else ("server_error" if status >= 500 else "invalid_request_error")
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}


def closed_port_url() -> str:
    """A URL on 127.0.0.1 where nothing listens (connections are refused)."""
    return f"http://127.0.0.1:{free_port()}"


@pytest.fixture
def model_server() -> Iterator[ModelServer]:
    """A started ModelServer for one test (import this fixture into a conftest.py to use it)."""
    with ModelServer() as server:
        yield server
