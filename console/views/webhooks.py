"""The webhooks' delivery log: `/webhooks/` lists the endpoints (the admin's and `JR2_WEBHOOKS`'s) with their
counts, `/webhooks/<id>/` one endpoint's deliveries (status, tries, next try, response code, the last error) with a
"send again" on each. Operators and staff see them: an endpoint's address is theirs to know; its secret is never
shown."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.db.models import Count, Q
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST

from console.access import readers_only
from engine.models import Delivery, WebhookEndpoint
from engine.runtime.host import current_host

__all__ = ["endpoints", "endpoint_log", "send_again", "SHOWN"]

SHOWN = 200


def _allowed(user: object) -> None:
    if not (getattr(user, "is_staff", False) or getattr(user, "has_perm", lambda _: False)("engine.cancel_run")):
        raise PermissionDenied("the delivery log is for operators and staff")


@readers_only
def endpoints(request: HttpRequest) -> HttpResponse:
    _allowed(request.user)
    rows = WebhookEndpoint.objects.annotate(
        pending=Count("deliveries", filter=Q(deliveries__status=Delivery.Status.PENDING)),
        failed=Count("deliveries", filter=Q(deliveries__status=Delivery.Status.FAILED)),
        delivered=Count("deliveries", filter=Q(deliveries__status=Delivery.Status.DELIVERED)),
    )
    return render(request, "console/webhooks.html", {"endpoints": rows})


@readers_only
def endpoint_log(request: HttpRequest, endpoint_id: int) -> HttpResponse:
    _allowed(request.user)
    endpoint = WebhookEndpoint.objects.filter(pk=endpoint_id).first()
    if endpoint is None:
        raise Http404(f"no webhook endpoint {endpoint_id}")
    status = request.GET.get("status", "")
    rows = endpoint.deliveries.all()
    if status in Delivery.Status.values:
        rows = rows.filter(status=status)
    return render(
        request,
        "console/webhook.html",
        {"endpoint": endpoint, "deliveries": rows[:SHOWN], "status": status, "statuses": Delivery.Status.values},
    )


@require_POST
@readers_only
def send_again(request: HttpRequest, delivery_id: int) -> HttpResponse:
    """Put a delivery back to be sent now, with its same body, delivery id and idempotency key."""
    _allowed(request.user)
    found = Delivery.objects.filter(pk=delivery_id).first()
    if found is None:
        raise Http404(f"no delivery {delivery_id}")
    Delivery.objects.filter(pk=delivery_id).update(
        status=Delivery.Status.PENDING, next_try=timezone.now(), taken_until=None
    )
    host = current_host()
    if host is not None:
        host.courier.wake()
    return redirect("console:webhook", endpoint_id=found.endpoint_id)
