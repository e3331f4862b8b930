"""Middleware: under /api/, every error is JSON with a `detail` (a response that Django or a library made as an HTML
page, a wrong method, a CSRF refusal, a page not found, is given again as JSON); every response carries the
Content-Security-Policy (`JR2_CSP`), which allows no inline script; and an address holding the NUL character is
refused before any view looks it up (PostgreSQL cannot compare text with NUL: it would be a 500 there).

Django's own middleware, served in lean shapes (`LeanAsgiHandler`, jr2/asgi.py): under ASGI a Django middleware
runs each hook through `sync_to_async` (a hop to the request's thread and back), so those whose hooks do no I/O (the
security headers, Common, the frame options, the lazy `request.user`) run them on the event loop instead
(`_Inline`), and an API call with a bearer token skips what serves browsers only (`_NotForApi`: the session, CSRF,
the user from the session, messages): the token is its identity, and no cookie is read or set for it (the API's
operations are CSRF-exempt). settings.MIDDLEWARE keeps Django's names, which `check --deploy` and the admin's checks
look up: the handler swaps each for its lean shape when it builds its chain (`LEAN`). A bearer call to an async
operation is served without Django's thread per request (`LeanAsgiHandler`)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from http import HTTPStatus
from typing import Any
from urllib.parse import parse_qsl

from asgiref.sync import iscoroutinefunction, markcoroutinefunction, sync_to_async
from django.conf import settings
from django.contrib.auth.middleware import AuthenticationMiddleware
from django.contrib.messages.middleware import MessageMiddleware
from django.contrib.sessions.middleware import SessionMiddleware
from django.core import signals
from django.core.cache import close_caches
from django.core.exceptions import RequestAborted
from django.core.handlers.asgi import ASGIHandler, get_script_prefix
from django.core.handlers.base import reset_urlconf
from django.db import close_old_connections, reset_queries
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.middleware.clickjacking import XFrameOptionsMiddleware
from django.middleware.common import CommonMiddleware
from django.middleware.csrf import CsrfViewMiddleware
from django.middleware.security import SecurityMiddleware
from django.urls import Resolver404, ResolverMatch, get_resolver, set_script_prefix

from engine.core.text import NUL
from engine.runtime.host import current_host

__all__ = [
    "ApiJsonErrors",
    "ContentSecurityPolicy",
    "RefuseNul",
    "refuse_nul_websockets",
    "bearer_api_call",
    "Security",
    "Sessions",
    "Common",
    "Csrf",
    "Authentication",
    "Messages",
    "FrameOptions",
    "LEAN",
    "LeanAsgiHandler",
]

WHY = {
    403: "forbidden: {reason}",
    404: "no API endpoint {method} {path}; see /api/docs",
    405: "{method} is not allowed on {path} (allowed: {allowed}); see /api/docs",
}


class _Middleware:
    """Sync and async alike, without a thread hop (Django's MiddlewareMixin runs its hooks through sync_to_async
    under ASGI): `refuse` may answer a request before the view, `after` may change the response."""

    async_capable = True
    sync_capable = True

    def __init__(self, get_response: Callable[[HttpRequest], Any]) -> None:
        self.get_response = get_response
        self.is_async = iscoroutinefunction(get_response)
        if self.is_async:
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest) -> Any:
        refused = self.refuse(request)
        if self.is_async:
            return self._acall(request, refused)
        return refused if refused is not None else self.after(request, self.get_response(request))

    async def _acall(self, request: HttpRequest, refused: HttpResponse | None) -> HttpResponse:
        return refused if refused is not None else self.after(request, await self.get_response(request))

    def refuse(self, request: HttpRequest) -> HttpResponse | None:
        return None

    def after(self, request: HttpRequest, response: HttpResponse) -> HttpResponse:
        return response


class ApiJsonErrors(_Middleware):
    """Middleware: rewrite non-JSON error responses of /api/ paths as `{"detail": ...}`."""

    def after(self, request: HttpRequest, response: HttpResponse) -> HttpResponse:
        if (
            not request.path.startswith("/api/")
            or response.status_code < 400
            or response.get("Content-Type", "").startswith("application/json")
        ):
            return response
        status = response.status_code
        text = getattr(response, "content", b"").decode(errors="replace").strip()
        reason = (
            "CSRF verification failed (send the API token as `Authorization: Bearer <token>`)"
            if "CSRF" in text
            else HTTPStatus(status).phrase
        )
        detail = WHY.get(status, "{reason}").format(
            method=request.method, path=request.path, allowed=response.get("Allow", "?"), reason=reason
        )
        replaced = JsonResponse({"detail": detail}, status=status)
        if response.get("Allow"):
            replaced["Allow"] = response["Allow"]
        return replaced


class ContentSecurityPolicy(_Middleware):
    """Middleware: the `Content-Security-Policy` header (settings.JR2_CSP; empty: none) on every response that has
    none. The Console's JS lives in static files, htmx included (its indicator styles are off: base.html)."""

    def __init__(self, get_response: Callable[[HttpRequest], Any]) -> None:
        super().__init__(get_response)
        self.policy = str(getattr(settings, "JR2_CSP", ""))

    def after(self, request: HttpRequest, response: HttpResponse) -> HttpResponse:
        if self.policy and "Content-Security-Policy" not in response:
            response["Content-Security-Policy"] = self.policy
        return response


def _nul_in_query(query: str) -> bool:
    return any(NUL in k or NUL in v for k, v in parse_qsl(query, keep_blank_values=True))


class RefuseNul(_Middleware):
    """Middleware: an address holding NUL (`%00`), which no run id, workflow name or filter may contain: a 404 when
    it is in the path (there is no such thing), a 400 when it is in the query. Form fields are checked by their
    forms, and JSON bodies by what reads them (the run core, forks, imports), so those refusals name the field."""

    def refuse(self, request: HttpRequest) -> HttpResponse | None:
        if NUL in request.path:
            status, detail = (
                404,
                "nothing is at this address: it holds the NUL character (%00), which no run id or name contains",
            )
        elif _nul_in_query(request.META.get("QUERY_STRING", "")):
            status, detail = 400, "the query holds the NUL character (%00), which no filter may contain"
        else:
            return None
        if request.path.startswith("/api/"):
            return JsonResponse({"detail": detail}, status=status)
        return HttpResponse(detail, status=status, content_type="text/plain; charset=utf-8")


def refuse_nul_websockets(app: Any) -> Any:
    """ASGI middleware for the websocket routes: a socket whose path or query holds NUL is closed (4404, as for no
    such run) before a consumer looks anything up."""

    async def guarded(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if NUL in scope.get("path", "") or _nul_in_query(scope.get("query_string", b"").decode("latin-1")):
            await receive()  # websocket.connect
            await send({"type": "websocket.close", "code": 4404})
            return
        await app(scope, receive, send)

    return guarded


# -- Django's middleware, lean under ASGI ---------------------------------------------------------------------------


def bearer_api_call(request: HttpRequest) -> bool:
    """A call to the JSON API that carries `Authorization: Bearer ...`: it is authenticated by its token alone."""
    return request.path.startswith("/api/") and request.headers.get("Authorization", "")[:7].lower() == "bearer "


class _Inline:
    """For a Django middleware whose hooks do no I/O: under ASGI they run on the event loop, not through
    `sync_to_async` (MiddlewareMixin's way, for hooks that may read the database)."""

    get_response: Callable[[HttpRequest], Any]

    async def __acall__(self, request: HttpRequest) -> HttpResponse:
        response = self.process_request(request) if hasattr(self, "process_request") else None
        response = response or await self.get_response(request)
        if hasattr(self, "process_response"):
            response = self.process_response(request, response)
        return response


class _NotForApi:
    """For a Django middleware that serves browsers only: a bearer API call goes past it untouched."""

    get_response: Callable[[HttpRequest], Any]
    async_mode: bool

    def __call__(self, request: HttpRequest) -> Any:
        if not self.async_mode and bearer_api_call(request):
            return self.get_response(request)
        return super().__call__(request)  # type: ignore[misc]

    async def __acall__(self, request: HttpRequest) -> HttpResponse:
        if bearer_api_call(request):
            return await self.get_response(request)
        return await super().__acall__(request)  # type: ignore[misc,no-any-return]


class Security(_Inline, SecurityMiddleware):
    """Django's SecurityMiddleware (headers, HTTPS redirect), on the event loop."""


class Sessions(_NotForApi, SessionMiddleware):
    """Django's SessionMiddleware; not for bearer API calls."""


class Common(_Inline, CommonMiddleware):
    """Django's CommonMiddleware (the slash redirect, Content-Length), on the event loop."""


class Csrf(_NotForApi, CsrfViewMiddleware):
    """Django's CSRF check; not for bearer API calls (the API's operations are CSRF-exempt: no cookie
    authenticates them)."""

    async def process_view(self, request: HttpRequest, callback: Any, args: Any, kwargs: Any) -> HttpResponse | None:
        if bearer_api_call(request):
            return None
        return await sync_to_async(super().process_view, thread_sensitive=True)(request, callback, args, kwargs)


class Authentication(_NotForApi, _Inline, AuthenticationMiddleware):
    """Django's AuthenticationMiddleware (a lazy `request.user`, read from the session when used), on the event
    loop; not for bearer API calls, whose token sets `request.user`."""


class Messages(_NotForApi, MessageMiddleware):
    """Django's MessageMiddleware; not for bearer API calls."""


class FrameOptions(_Inline, XFrameOptionsMiddleware):
    """Django's X-Frame-Options header, on the event loop."""


#: Django's middleware (as settings.MIDDLEWARE names them) -> its lean shape here.
LEAN = {
    "django.middleware.security.SecurityMiddleware": f"{__name__}.Security",
    "django.contrib.sessions.middleware.SessionMiddleware": f"{__name__}.Sessions",
    "django.middleware.common.CommonMiddleware": f"{__name__}.Common",
    "django.middleware.csrf.CsrfViewMiddleware": f"{__name__}.Csrf",
    "django.contrib.auth.middleware.AuthenticationMiddleware": f"{__name__}.Authentication",
    "django.contrib.messages.middleware.MessageMiddleware": f"{__name__}.Messages",
    "django.middleware.clickjacking.XFrameOptionsMiddleware": f"{__name__}.FrameOptions",
}


#: The receivers of Django's request signals that touch only this thread's (this context's) database connections,
#: caches and URLconf: on the event loop, where an async view opens none, they are quick and do no I/O.
_PLAIN_RECEIVERS = {reset_queries, close_old_connections, close_caches, reset_urlconf}


def _plain(signal: Any, sender: type) -> bool:
    """Whether every receiver of `signal` is one of Django's own plain ones (else they go through threads, as
    Django sends them)."""
    sync, asynchronous = signal._live_receivers(sender)
    return not asynchronous and all(receiver in _PLAIN_RECEIVERS for receiver in sync)


def _bearer_scope(scope: dict[str, Any]) -> bool:
    """`bearer_api_call` read off the ASGI scope, before any request is made."""
    if not scope["path"].startswith("/api/"):
        return False
    return any(name == b"authorization" and value[:7].lower() == b"bearer " for name, value in scope["headers"])


class LeanAsgiHandler(ASGIHandler):
    """Django's ASGI handler, its chain built from settings.MIDDLEWARE with each of Django's middleware in its lean
    shape (`LEAN`); the settings themselves keep Django's names.

    A bearer API call to an async operation (starting a run, answering a Gate, ...) in a process whose host is
    ready is served without Django's per-request thread: `ASGIHandler` makes a thread for every request
    (asgiref's `ThreadSensitiveContext`), hops to it to send `request_started`, and again to close the response
    (`request_finished`), then joins it. Such a call reads the database on the host's own thread only
    (engine/web/api.py's `_read`), so its request thread would do nothing but those signals, whose receivers (when
    they are Django's own, `_PLAIN_RECEIVERS`) touch only the calling thread's connections and caches: they run
    here on the event loop instead. Any other call, or other receivers, is served as Django serves it."""

    def load_middleware(self, is_async: bool = False) -> None:
        named = settings.MIDDLEWARE
        settings.MIDDLEWARE = [LEAN.get(path, path) for path in named]
        try:
            super().load_middleware(is_async)
        finally:
            settings.MIDDLEWARE = named

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        match = self._lean_match(scope) if scope["type"] == "http" else None
        if match is None:
            await super().__call__(scope, receive, send)
            return
        scope["jr2.resolver_match"] = match
        await self._serve_lean(scope, receive, send)

    def _lean_match(self, scope: dict[str, Any]) -> ResolverMatch | None:
        """The view's match when the call may be served lean (see the class): else None."""
        if not _bearer_scope(scope):
            return None
        host = current_host()
        if host is None or not host.ready.is_set():
            return None
        if not (_plain(signals.request_started, type(self)) and _plain(signals.request_finished, type(self))):
            return None
        script = get_script_prefix(scope)
        try:
            match = get_resolver().resolve(scope["path"].removeprefix(script) if script else scope["path"])
        except Resolver404:
            return None
        return match if iscoroutinefunction(match.func) else None

    def resolve_request(self, request: HttpRequest) -> ResolverMatch:
        """The match `__call__` found already, for a call served lean."""
        match = getattr(request, "scope", {}).get("jr2.resolver_match")
        if match is None or hasattr(request, "urlconf"):
            return super().resolve_request(request)  # type: ignore[no-any-return]
        request.resolver_match = match
        return match  # type: ignore[no-any-return]

    async def _serve_lean(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        """`ASGIHandler.handle`, the request signals sent on the event loop (Django 5.2's steps otherwise)."""
        try:
            body_file = await self.read_body(receive)
        except RequestAborted:
            return
        set_script_prefix(get_script_prefix(scope))
        signals.request_started.send(sender=self.__class__, scope=scope)
        request, error_response = self.create_request(scope, body_file)
        if request is None:
            body_file.close()
            await self.send_response(error_response, send)
            error_response.close()
            return

        async def process_request() -> HttpResponse:
            response = await self.run_get_response(request)
            with contextlib.suppress(asyncio.CancelledError):  # the client went away while it was sent
                await self.send_response(response, send)
            return response

        tasks = [
            asyncio.create_task(self.listen_for_disconnect(receive)),
            asyncio.create_task(process_request()),
        ]
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for task in tasks:
            if task.done():
                try:
                    task.result()
                except RequestAborted:
                    pass
                except AssertionError:
                    body_file.close()
                    raise
            else:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        try:
            response = tasks[1].result()
        except asyncio.CancelledError:
            signals.request_finished.send(sender=self.__class__)
        else:
            response.close()  # sends request_finished
        body_file.close()
