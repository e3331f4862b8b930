"""`/gates/<record>/link/<token>/`: the page a one-tap link opens, and its answer. No password and no session: the
link itself says who is answering (engine/runtime/links.py), for that Gate only, so it logs nobody in. Every use is
logged; a refused one says why and counts as a failed login of the address (`JR2_RATE_LOGIN`)."""

from __future__ import annotations

from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.cache import never_cache

from console.pages.forms import EVENT_FIELD, check
from console.pages.onetap import link_page
from console.pages.runview import machine_of
from engine.models import GateLink, GateRecord, Run
from engine.runtime import links
from engine.runtime.errors import InputPending
from engine.runtime.store.inputs import KEPT
from engine.web import ratelimit
from engine.web.answering import answer_refusal
from engine.web.hosting import ready_host

__all__ = ["gate_link"]


@never_cache
async def gate_link(request: HttpRequest, record_id: int, token: str) -> HttpResponse:
    rate = getattr(settings, "JR2_RATE_LOGIN", "10/300")
    address = ratelimit.client_ip(request)
    wait = await sync_to_async(ratelimit.blocked)("login-ip", address, rate)
    if wait:
        response = await sync_to_async(render)(
            request, "console/link/refused.html", {"why": f"Too many refused links; try again in {wait} s."}, status=429
        )
        response["Retry-After"] = str(wait)
        return response
    found = await sync_to_async(links.redeem)(token[:400], record_id)
    link = found.link
    if found.why or link is None:
        await sync_to_async(_refused)(link, found.why, address, rate)
        status = 410 if found.gone else 403  # gone: it was good once; forbidden: never here
        return await sync_to_async(render)(request, "console/link/refused.html", {"why": found.why}, status=status)
    if request.method != "POST":
        await sync_to_async(links.log_use)(link, "opened", "", address)
        return await sync_to_async(_page)(request, link, None, "", "", 200)
    return await _answer(request, link, address)


def _refused(link: GateLink | None, why: str, address: str, rate: str) -> None:
    links.log_use(link, "refused", why, address)
    ratelimit.failed("login-ip", address, rate)


def _page(request: HttpRequest, link: GateLink, data: Any, only: str, error: str, status: int) -> HttpResponse:
    page = link_page(link.record, data, only)
    return render(
        request, "console/link/gate.html", {"page": page, "link": link, "error": error, "who": link.user}, status=status
    )


async def _answer(request: HttpRequest, link: GateLink, address: str) -> HttpResponse:
    """The answer from the link's page: checked by the event's own model, then by the Gate's assignment and claim,
    then delivered through the host as the link's user, by the door `link`."""
    record: GateRecord = link.record
    event = str(request.POST.get(EVENT_FIELD, ""))[:120]
    machine = await sync_to_async(machine_of)(record.workflow)
    definition = machine.gate_event(record.gate, event) if machine is not None else None
    if definition is None or event not in record.accepts:
        why = f'Gate "{record.gate}" does not take "{event}" (it takes: {", ".join(record.accepts)})'
        return await sync_to_async(_page)(request, link, None, "", why, 400)
    page = await sync_to_async(link_page)(record, request.POST, event)
    form = next(f.form for f in page.forms if f.event == event)
    values = await sync_to_async(check)(form, definition.input)
    if values is None:
        return await sync_to_async(_page)(request, link, request.POST, event, "", 400)
    view = await Run.objects.filter(pk=record.run_id).values_list("view", flat=True).afirst()
    refused = await sync_to_async(answer_refusal)(link.user, view, record.gate)
    if refused is not None:
        await sync_to_async(links.log_use)(link, "refused", refused[1], address)
        return await sync_to_async(_page)(request, link, request.POST, event, refused[1], refused[0])
    try:
        host = await ready_host()
        delivery = await host.deliver(
            record.run_id,
            "gate",
            gate=record.gate,
            event=event,
            params=values,
            by=link.user.get_username(),
            door="link",
        )
    except InputPending as pending:  # kept: delivered, in order, when a worker holds the run
        await sync_to_async(links.log_use)(link, "answered", f"{event}, kept as input {pending.input_id}", address)
        return await sync_to_async(render)(
            request,
            "console/link/answered.html",
            {"record": record, "event": event, "who": link.user, "kept": KEPT},
        )
    except Exception as err:
        return await sync_to_async(_page)(request, link, request.POST, event, str(err), 503)
    if delivery.outcome != "delivered":
        why = delivery.error or delivery.outcome
        await sync_to_async(links.log_use)(link, "refused", why, address)
        return await sync_to_async(_page)(request, link, request.POST, event, why, 409)
    await sync_to_async(links.log_use)(link, "answered", event, address)
    return await sync_to_async(render)(
        request, "console/link/answered.html", {"record": record, "event": event, "who": link.user}
    )
