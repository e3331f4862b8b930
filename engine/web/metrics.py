"""`/metrics`: the engine's metrics in Prometheus' text format, for those who scrape. It needs an API token
(`Authorization: Bearer <token>`), unless `JR2_METRICS_OPEN=1`: the counts name workflows and models."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.http import require_GET
from ninja.errors import HttpError
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, generate_latest

from engine.runtime import telemetry
from engine.web.api import TokenAuth

__all__ = ["metrics_view"]


@require_GET
def metrics_view(request: HttpRequest) -> HttpResponse:
    if not getattr(settings, "JR2_METRICS_OPEN", False):
        refused = _refused(request)
        if refused is not None:
            return refused
    telemetry.metrics()  # the readers exist from the first scrape on, even before any run
    return HttpResponse(generate_latest(REGISTRY), content_type=CONTENT_TYPE_LATEST)


def _refused(request: HttpRequest) -> HttpResponse | None:
    header = request.headers.get("Authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return _json(401, "/metrics needs `Authorization: Bearer <API token>` (or JR2_METRICS_OPEN=1)")
    try:
        user = TokenAuth().authenticate(request, token.strip())
    except HttpError as err:  # too many wrong tokens from this address: 429
        return _json(err.status_code, str(err.message))
    if user is None:
        return _json(401, "that API token is not valid (revoked, mistyped, or of an inactive user)")
    return None


def _json(status: int, detail: str) -> JsonResponse:
    response = JsonResponse({"detail": detail}, status=status)
    if status == 401:
        response["WWW-Authenticate"] = "Bearer"
    return response
