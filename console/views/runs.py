"""The runs list (with its search), the run page, and the run page's forms: answering a Gate and cancelling.

Inputs go to the host that drives the run; the engine decides, and a refusal comes back to the form in the
engine's words (as the form's region for htmx, else as the whole page with status 400).
"""

from __future__ import annotations

import time
from typing import Any

from asgiref.sync import sync_to_async
from django.db.models import Count
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest, HttpResponseForbidden
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from console.access import needs, readers_only
from console.pages.costs import cost_section
from console.pages.folds import graph_context
from console.pages.forms import EVENT_FIELD, SchemaForm, check, schema_form
from console.pages.regions import run_regions
from console.pages.runlist import runs_list
from console.pages.runview import RunPage, gate_key, machine_of, run_page
from console.pages.search_form import search_context
from console.views.feeds import deep_link
from engine.models import Run
from engine.runtime.admission import check_gate_answer
from engine.runtime.claims import refusal_on_view
from engine.runtime.errors import InputPending, NoHost
from engine.runtime.registry import workflows
from engine.web.answering import answer_refusal, is_operator
from engine.web.hosting import ready_host

__all__ = ["runs", "run", "answer_gate", "cancel_run", "claim_gate", "form_refused"]


@readers_only
def runs(request: HttpRequest) -> HttpResponse:
    """Every run, or those a search matches (engine/web/search.py: every filter a query on the server, in the URL)."""
    listed = runs_list(request.GET)
    search = listed["search"]
    statuses = dict(Run.objects.values_list("status").annotate(n=Count("id")))
    return render(
        request,
        "console/runs.html",
        {
            **listed,
            "workflow": request.GET.get("workflow", ""),
            "status": request.GET.get("status", ""),
            "workflows": workflows().names(),
            "statuses": [(s, statuses.get(s, 0)) for s in Run.Status.values],
            **search_context(request.GET, search),
        },
        status=400 if search.errors else 200,
    )


@readers_only
def run(request: HttpRequest, run_id: str) -> HttpResponse:
    page = run_page(run_id, request.user)
    if page is None:
        raise Http404(f"no run {run_id}")
    return render(request, "console/run.html", {**_run_page_context(request, page), **deep_link(request, page)})


def _run_page_context(request: HttpRequest | None, page: RunPage) -> dict[str, Any]:
    """The run page's context: the graph lit for the run, and the section "Cost and time per state" (rendered
    once with the page: the live regions do not carry it)."""
    machine = page.machine
    context: dict[str, Any] = (
        {"svg": ""} if machine is None else graph_context(request, page.run.workflow, machine, run=page.run)
    )
    context.update(page=page, run=page.run)
    context.update(
        cost_section(
            request.GET if request is not None and request.method == "GET" else None,
            page.run,
            machine,
            context["svg"],
            reverse("console:run", args=[page.run.id]),
        )
    )
    return context


@require_POST
async def answer_gate(request: HttpRequest, run_id: str, gate: str) -> HttpResponse:
    """A Gate's form: the input is checked by the event's own model (errors at their fields), then delivered
    through the host; the engine's refusal, if any, is shown on the form."""
    user = await request.auser()
    await sync_to_async(needs)(user, "answer")
    run_row = await Run.objects.filter(id=run_id).afirst()
    if run_row is None:
        raise Http404(f"no run {run_id}")
    refused = await sync_to_async(answer_refusal)(user, run_row.view, gate)
    if refused is not None:  # assigned to others (403) or claimed by someone else (409): their form is not shown
        return HttpResponse(f"{refused[1]}; nothing was delivered", status=refused[0], content_type="text/plain")
    event = request.POST.get(EVENT_FIELD, "")
    machine = await sync_to_async(machine_of)(run_row.workflow)
    definition = machine.gate_event(gate, event) if machine is not None else None
    form = schema_form(definition.input if definition else None, request.POST)
    values = await sync_to_async(check)(form, definition.input if definition else None)
    if definition is None:
        form.add_error(None, f'Gate "{gate}" does not take "{event}"')
    elif values is not None:
        refusal = await _send_answer(run_row, machine, gate, event, values, user.get_username())
        if refusal is None:
            if request.htmx:
                regions = await sync_to_async(run_regions)(run_id, user)
                return HttpResponse(regions or "")
            return redirect(reverse("console:run", args=[run_id]) + "#run-gates")
        form.add_error(None, refusal)
    return await form_refused(request, run_id, user, gate_key(gate, event), form, "_gates")


async def _send_answer(run: Run, machine: Any, gate: str, event: str, values: dict[str, Any], by: str) -> str | None:
    """Check the answer against the run's committed view at once, then send it: None when it was delivered, or
    kept to be delivered (the page shows it waiting, then its outcome, live); else the refusal in words."""
    if machine is not None and machine.digest == run.digest:
        refused = check_gate_answer(machine, run.view or {}, gate, event, values)
        if refused is not None:
            return refused.error or refused.outcome
    try:
        host = await ready_host()
        delivery = await host.deliver(run.id, "gate", gate=gate, event=event, params=values, by=by, door="console")
    except InputPending:
        return None
    except Exception as err:
        return str(err)
    return None if delivery.outcome == "delivered" else (delivery.error or delivery.outcome)


async def form_refused(
    request: HttpRequest, run_id: str, user: Any, key: str, form: SchemaForm, region: str
) -> HttpResponse:
    """A form the engine or the event's model refused, shown again with its errors: as its region for htmx, else
    as the whole run page (400)."""
    page = await sync_to_async(run_page)(run_id, user, {key: form})
    if page is None:
        raise Http404(f"no run {run_id}")
    if request.htmx:
        html = await sync_to_async(render_to_string)(
            f"console/run/{region}.html", {"page": page, "run": page.run, "oob": True}, request
        )
        return HttpResponse(html)
    context = await sync_to_async(_run_page_context)(None, page)
    return await sync_to_async(render)(request, "console/run.html", context, status=400)


@require_POST
async def cancel_run(request: HttpRequest, run_id: str) -> HttpResponse:
    user = await request.auser()
    await sync_to_async(needs)(user, "cancel")
    try:
        host = await ready_host()
    except NoHost as err:
        return HttpResponseBadRequest(str(err))
    reason = request.POST.get("reason", "").strip()
    if len(reason) > 2000:
        return HttpResponseBadRequest("the reason is longer than 2000 characters; the run was not cancelled")
    try:
        await host.cancel(run_id, by=user.get_username(), door="console", reason=reason)
    except InputPending:
        pass  # kept: the run page lists it, pending, until a worker holds the run and carries it out
    except Exception as err:
        return HttpResponseBadRequest(f"run {run_id} could not be cancelled: {err}")
    return redirect("console:run", run_id=run_id)


@require_POST
async def claim_gate(request: HttpRequest, run_id: str, gate: str) -> HttpResponse:
    """The claim buttons of a Gate's card: claim it (or extend one's claim), release it, or, for an operator,
    break someone's claim; then back to the page the button was on."""
    user = await request.auser()
    await sync_to_async(needs)(user, "answer")
    action = request.POST.get("action", "")
    run_row = await Run.objects.filter(id=run_id).afirst()
    if run_row is None:
        raise Http404(f"no run {run_id}")
    if action not in ("claim", "release", "break"):
        return HttpResponseBadRequest(f"action {action[:40]!r} is not claim, release or break")
    if action == "claim" and (refused := await sync_to_async(answer_refusal)(user, run_row.view, gate)):
        return HttpResponseBadRequest(refused[1]) if refused[0] == 409 else HttpResponseForbidden(refused[1])
    if action == "break" and not await sync_to_async(is_operator)(user):
        return HttpResponseForbidden("only an operator (the permission engine.cancel_run) may break a claim")
    if action != "claim" and (not_now := refusal_on_view(run_row.view, gate, action, user.get_username(), time.time())):
        return HttpResponseBadRequest(f"{not_now.error}; nothing changed")
    try:
        host = await ready_host()
        delivery = await host.claim(run_id, gate, action, user.get_username(), door="console")
    except InputPending:
        delivery = None  # kept: delivered when a worker holds the run; the run page lists it, pending
    except Exception as err:
        return HttpResponseBadRequest(f"the claim could not be changed: {err}")
    if delivery is not None and delivery.outcome != "delivered":
        return HttpResponseBadRequest(f"{delivery.error}; nothing changed")
    back = request.POST.get("next", "")
    if not url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()}) or not back.startswith("/"):
        back = reverse("console:run", args=[run_id])
    return redirect(back)
