"""`jr2 up`'s HTTP requests (engine/runtime/serve.py's `lean_requests`): a JSON body reaches the application as it
came, without Twisted parsing it as a form first, and a form is still parsed as Twisted parses it. Real daphne and
Twisted objects, fed raw HTTP bytes; the server beside them only records what daphne hands it."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from daphne.http_protocol import HTTPFactory, WebRequest
from twisted.internet.testing import StringTransport

from engine.runtime.serve import lean_requests


class _Server:
    """What daphne's HTTP factory asks of its server, recording each application's scope and queue."""

    proxy_forwarded_address_header = None
    root_path = ""
    server_name = "daphne"
    request_buffer_size = 8192
    http_timeout = None

    def __init__(self) -> None:
        self.scopes: list[dict[str, Any]] = []
        self.queues: list[asyncio.Queue[Any]] = []

    def protocol_connected(self, protocol: Any) -> None:
        pass

    def protocol_disconnected(self, protocol: Any) -> None:
        pass

    def log_action(self, protocol: str, action: str, details: dict[str, Any]) -> None:
        pass

    def create_application(self, protocol: Any, scope: dict[str, Any]) -> asyncio.Queue[Any]:
        self.scopes.append(scope)
        self.queues.append(asyncio.Queue())
        return self.queues[-1]


def _served(content_type: bytes, path: bytes, body: bytes) -> tuple[Any, _Server]:
    """One POST through daphne's factory as `jr2 up` sets it up: the request Twisted made, and the server."""
    built: list[Any] = []
    server = _Server()
    factory = HTTPFactory(server)
    lean_requests(factory)
    protocol = factory.buildProtocol(("127.0.0.1", 0))
    made = protocol.requestFactory
    assert made is not WebRequest and issubclass(made, WebRequest)

    def recorded(*args: Any, **kwargs: Any) -> Any:
        built.append(made(*args, **kwargs))
        return built[-1]

    protocol.requestFactory = recorded
    protocol.makeConnection(StringTransport())
    head = b"POST " + path + b" HTTP/1.1\r\nHost: t\r\nContent-Type: " + content_type
    protocol.dataReceived(head + f"\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body)
    assert len(built) == 1 and len(server.scopes) == 1
    return built[0], server


@pytest.mark.parametrize("content_type", [b"application/json", b"Application/JSON; charset=utf-8"])
def test_a_json_body_is_not_read_as_a_form(content_type: bytes) -> None:
    body = b'{"changes": "a=1&b=2"}'
    request, server = _served(content_type, b"/api/workflows/notes/runs", body)
    assert server.scopes[0]["path"] == "/api/workflows/notes/runs"
    assert request.args == {} and request._parsePOSTFormSubmission is False
    message = server.queues[0].get_nowait()
    assert message["type"] == "http.request" and message["body"] == body


def test_a_form_is_parsed_as_before() -> None:
    body = b"a=1&b=2"
    request, server = _served(b"application/x-www-form-urlencoded", b"/login/", body)
    assert request.args == {b"a": [b"1"], b"b": [b"2"]}
    assert server.queues[0].get_nowait()["body"] == body
