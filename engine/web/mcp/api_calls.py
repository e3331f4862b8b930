"""The HTTP API's operations, called from an MCP tool as the token's user: the same view function, so the same rules,
the same answers and the same refusals as `/api/...`.

An MCP tool gives the call what an HTTP request would carry (the query, the JSON body) and gets back the view's data,
or an `ApiRefusal` with the status and the words the API would have sent. A refusal becomes an `isError` result in
words; nothing is decided here that the API does not decide.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import mcp_types as types
from asgiref.sync import sync_to_async
from django.http import HttpRequest, QueryDict
from ninja.errors import HttpError
from pydantic import ValidationError

from engine.runtime.errors import HostError, InputPending, RunNotHosted
from engine.web.mcp.auth import Caller

__all__ = ["ApiRefusal", "request_as", "call_sync", "call_async", "result", "refused", "STATUS_WORDS"]

STATUS_WORDS = {
    400: "the request is not valid",
    403: "not permitted",
    404: "not found",
    409: "conflict",
    503: "no host",
}


@dataclass(frozen=True)
class ApiRefusal:
    """What the API would have answered instead of data."""

    status: int
    detail: str
    errors: tuple[Mapping[str, Any], ...] = ()

    def text(self) -> str:
        words = STATUS_WORDS.get(self.status, "refused")
        more = "".join(f"\n- {e.get('field') or 'input'}: {e.get('message')}" for e in self.errors if e.get("message"))
        return f"{words} (HTTP {self.status}): {self.detail}{more}"


def request_as(caller: Caller, query: Mapping[str, Any] | None = None, body: Any = None) -> HttpRequest:
    """An HttpRequest as the API's views read it: the caller as its user, the query, the JSON body."""
    request = HttpRequest()
    request.method = "POST" if body is not None else "GET"
    request.user = caller.user
    request.jr2_door = "mcp"  # type: ignore[attr-defined]  # the door Gate answers and cancels record
    params = QueryDict(mutable=True)
    for name, value in (query or {}).items():
        if value is not None:
            params[name] = str(value)
    request.GET = params
    request._body = json.dumps(body).encode() if body is not None else b""  # type: ignore[attr-defined]
    return request


def _refusal(err: Exception) -> ApiRefusal:
    if isinstance(err, HttpError):
        errors = tuple(getattr(err, "errors", ()) or ())
        return ApiRefusal(err.status_code, str(err), errors)
    if isinstance(err, HostError):
        return ApiRefusal(409 if isinstance(err, RunNotHosted) else 400, str(err))
    if isinstance(err, ValidationError):
        return ApiRefusal(400, f"the request is not valid: {err.errors(include_url=False)}")
    raise err


async def call_sync(view: Callable[..., Any], request: HttpRequest, *args: Any) -> Any:
    """A synchronous view (a read), on Django's thread."""
    try:
        return await sync_to_async(view)(request, *args)
    except (HttpError, HostError, ValidationError) as err:
        return _refusal(err)


async def call_async(view: Callable[..., Awaitable[Any]], request: HttpRequest, *args: Any) -> Any:
    """An asynchronous view (one that hands something to the host)."""
    try:
        return await view(request, *args)
    except InputPending as kept:  # accepted: kept until a worker holds the run, as the API's 202 says
        return {"input": kept.input_id, "url": kept.url, "status": "pending", "detail": str(kept)}
    except (HttpError, HostError, ValidationError) as err:
        return _refusal(err)


def result(data: Any) -> types.CallToolResult:
    """The view's data as the tool's result: JSON text, and the same as structured content when it is an object."""
    if isinstance(data, ApiRefusal):
        return refused(data.text())
    if isinstance(data, tuple) and len(data) == 2 and isinstance(data[0], int):  # (201, body)
        data = data[1]
    text = json.dumps(data, ensure_ascii=False, indent=2, default=str)
    structured = data if isinstance(data, dict) else {"result": data}
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)],
        structured_content=json.loads(json.dumps(structured, default=str)),
        is_error=False,
    )


def refused(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)
