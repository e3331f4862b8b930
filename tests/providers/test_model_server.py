"""The fake model server's own promises, which the runtime's tests rely on to drive whole runs."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from typing import Any

import pytest

from tests.fakes.model_server import ModelServer, Reply, error, text, tool_call


def post(url: str, body: Any) -> tuple[int, dict[str, str], Any]:
    req = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        method="POST",
        headers={"content-type": "application/json", "x-test": "yes"},
    )
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            return resp.status, dict(resp.headers), json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers), json.loads(err.read())


def test_replies_are_answered_in_order_and_requests_recorded(model_server: ModelServer) -> None:
    model_server.queue(tool_call("ask", {"question": "?"}), text("bye"))
    _, _, first = post(model_server.url + "/v1/messages", {"model": "m", "messages": []})
    _, _, second = post(model_server.openai_url + "/chat/completions", {"model": "m", "messages": []})
    assert first["content"][0]["name"] == "ask" and first["stop_reason"] == "tool_use"
    assert second["choices"][0]["message"]["content"] == "bye"
    assert second["choices"][0]["finish_reason"] == "stop"
    assert [r.path for r in model_server.requests] == ["/v1/messages", "/v1/chat/completions"]
    assert model_server.requests[0].headers["x-test"] == "yes"
    assert model_server.bodies[1] == {"model": "m", "messages": []}


def test_a_responder_answers_first_and_none_falls_back_to_the_queue() -> None:
    def responder(body: Any) -> Reply | None:
        return text("from the responder") if body.get("messages") else None

    with ModelServer([text("from the queue")], responder=responder) as server:
        _, _, by_responder = post(server.url + "/v1/messages", {"model": "m", "messages": [{"role": "user"}]})
        _, _, by_queue = post(server.url + "/v1/messages", {"model": "m", "messages": []})
    assert by_responder["content"][0]["text"] == "from the responder"
    assert by_queue["content"][0]["text"] == "from the queue"


def test_with_nothing_queued_it_answers_a_400_that_says_so(model_server: ModelServer) -> None:
    status, _, body = post(model_server.url + "/v1/messages", {"model": "m", "messages": []})
    assert status == 400
    assert body["error"]["message"] == "the fake model server has no reply queued for request #1 (POST /v1/messages)"


def test_always_answers_once_the_queue_is_empty(model_server: ModelServer) -> None:
    model_server.queue(text("first")).always(error(429))
    statuses = [post(model_server.url + "/v1/messages", {"model": "m"})[0] for _ in range(3)]
    assert statuses == [200, 429, 429]


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/v1/messages", {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}),
        (
            "/v1/chat/completions",
            {"error": {"message": "slow down", "type": "rate_limit_exceeded", "param": None, "code": None}},
        ),
    ],
)
def test_errors_carry_the_api_error_body_and_fast_retry_headers(
    model_server: ModelServer, path: str, expected: Any
) -> None:
    model_server.queue(error(429, "slow down"))
    status, headers, body = post(model_server.url + path, {"model": "m"})
    assert (status, body) == (429, expected)
    assert headers["retry-after"] == "0" and headers["retry-after-ms"] == "1"


def test_a_delay_holds_the_answer(model_server: ModelServer) -> None:
    model_server.queue(text("slow", delay=0.2))
    started = time.monotonic()
    post(model_server.url + "/v1/messages", {"model": "m"})
    assert time.monotonic() - started >= 0.2
