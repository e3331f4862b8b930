"""Real receivers for the notification tests: an HTTP server that records every webhook POST (it can be down, then
up again on the same port), and an SMTP server (aiosmtpd) that records every message. Both listen on free ports
of 127.0.0.1 and run in threads of the test process."""

from __future__ import annotations

import email
import email.policy
import socket
import threading
from dataclasses import dataclass, field
from email.message import EmailMessage
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from aiosmtpd.controller import Controller

__all__ = ["free_port", "Receiver", "Received", "Mailbox"]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Receiver:
    """A webhook receiver: `start()`/`stop()` open and close its port (stopped, a POST is refused, as by a receiver
    that is down); `answer` is the status it answers with."""

    port: int = field(default_factory=free_port)
    answer: int = 200
    got: list[Received] = field(default_factory=list)
    _server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    def start(self) -> Receiver:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                receiver.got.append(Received(self.path, {k: v for k, v in self.headers.items()}, body))
                self.send_response(receiver.answer)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args: Any) -> None:
                pass

        ThreadingHTTPServer.allow_reuse_address = True
        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None


class _Collect:
    def __init__(self, box: Mailbox) -> None:
        self.box = box

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        message = email.message_from_bytes(envelope.content, policy=email.policy.default)
        assert isinstance(message, EmailMessage)
        self.box.messages.append(message)
        return "250 Message accepted for delivery"


@dataclass
class Mailbox:
    """An SMTP server on a free port that keeps every message it is given."""

    port: int = field(default_factory=free_port)
    messages: list[EmailMessage] = field(default_factory=list)
    _controller: Controller | None = None

    def start(self) -> Mailbox:
        self._controller = Controller(_Collect(self), hostname="127.0.0.1", port=self.port)
        self._controller.start()
        return self

    def stop(self) -> None:
        if self._controller is not None:
            self._controller.stop()
            self._controller = None

    def texts(self) -> list[str]:
        return [str(m.get_content()) for m in self.messages]
