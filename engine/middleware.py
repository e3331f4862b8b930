"""Middleware: under /api/, every error is JSON with a `detail` (a response that Django or a library made as an HTML
page, a wrong method, a CSRF refusal, a page not found, is given again as JSON); and every response carries the
Content-Security-Policy (`JR2_CSP`), which allows no inline script."""
from __future__ import annotations

from http import HTTPStatus
from typing import Any, Callable

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse

__all__ = ["ApiJsonErrors", "ContentSecurityPolicy"]

WHY = {
    403: "forbidden: {reason}",
    404: "no API endpoint {method} {path}; see /api/docs",
    405: "{method} is not allowed on {path} (allowed: {allowed}); see /api/docs",
}


class ApiJsonErrors:
    """Middleware: rewrite non-JSON error responses of /api/ paths as `{"detail": ...}`."""

    async_capable = True
    sync_capable = True

    def __init__(self, get_response: Callable[[HttpRequest], Any]) -> None:
        self.get_response = get_response
        self.is_async = iscoroutinefunction(get_response)
        if self.is_async:
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest) -> Any:
        if self.is_async:
            return self._acall(request)
        return self._json(request, self.get_response(request))

    async def _acall(self, request: HttpRequest) -> HttpResponse:
        return self._json(request, await self.get_response(request))

    @staticmethod
    def _json(request: HttpRequest, response: HttpResponse) -> HttpResponse:
        if not request.path.startswith("/api/") or response.status_code < 400 or \
                response.get("Content-Type", "").startswith("application/json"):
            return response
        status = response.status_code
        text = getattr(response, "content", b"").decode(errors="replace").strip()
        reason = "CSRF verification failed (send the API token as `Authorization: Bearer <token>`)" \
            if "CSRF" in text else HTTPStatus(status).phrase
        detail = WHY.get(status, "{reason}").format(method=request.method, path=request.path,
                                                    allowed=response.get("Allow", "?"), reason=reason)
        replaced = JsonResponse({"detail": detail}, status=status)
        if response.get("Allow"):
            replaced["Allow"] = response["Allow"]
        return replaced


class ContentSecurityPolicy:
    """Middleware: the `Content-Security-Policy` header (settings.JR2_CSP; empty: none) on every response that has
    none. The Console's JS lives in static files, htmx included (its indicator styles are off: base.html)."""

    async_capable = True
    sync_capable = True

    def __init__(self, get_response: Callable[[HttpRequest], Any]) -> None:
        self.get_response = get_response
        self.policy = str(getattr(settings, "JR2_CSP", ""))
        self.is_async = iscoroutinefunction(get_response)
        if self.is_async:
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest) -> Any:
        if self.is_async:
            return self._acall(request)
        return self._header(self.get_response(request))

    async def _acall(self, request: HttpRequest) -> HttpResponse:
        return self._header(await self.get_response(request))

    def _header(self, response: HttpResponse) -> HttpResponse:
        if self.policy and "Content-Security-Policy" not in response:
            response["Content-Security-Policy"] = self.policy
        return response
