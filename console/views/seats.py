"""Playing an Agent's seat from the run page: taking it, giving it back, and making a pick in it.

A pick is checked by the event's model, then handed to the Turn loop, which treats it as a model's tool call; the
engine decides what it does (refused, answered, outstanding or ending the Turn).
"""

from __future__ import annotations

from asgiref.sync import sync_to_async
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from console.access import needs
from console.pages.forms import EVENT_FIELD, check, schema_form
from console.pages.regions import run_regions
from console.pages.runview import machine_of, seat_key
from console.views.runs import form_refused
from engine.models import Run
from engine.runtime.errors import HostError, InputPending, NoHost
from engine.web.hosting import ready_host

__all__ = ["take_seat", "give_seat", "seat_pick"]


async def _seat_change(request: HttpRequest, run_id: str, agent: str, take: bool) -> HttpResponse:
    user = await request.auser()
    await sync_to_async(needs)(user, "play")
    run_row = await Run.objects.filter(id=run_id).afirst()
    if run_row is None:
        raise Http404(f"no run {run_id}")
    holder = (run_row.view or {}).get("seats", {}).get(agent)
    if not take and holder != user.get_username():
        return HttpResponseBadRequest(f"you do not hold the seat of {agent}")
    try:
        host = await ready_host()
    except NoHost as err:
        return HttpResponseBadRequest(str(err))
    try:
        await host.take_seat(run_id, agent, (user.pk, user.get_username()) if take else None)
    except InputPending:
        pass  # kept: the run page lists it, pending, until a worker holds the run and carries it out
    except Exception as err:
        return HttpResponseBadRequest(f"the seat of {agent} could not change hands: {err}")
    if request.htmx:
        return HttpResponse(await sync_to_async(run_regions)(run_id, user) or "")
    return redirect(reverse("console:run", args=[run_id]) + f"#seat-{agent}")


@require_POST
async def take_seat(request: HttpRequest, run_id: str, agent: str) -> HttpResponse:
    """Take an Agent's seat: its Turns come to this user's page, from its next request on."""
    return await _seat_change(request, run_id, agent, take=True)


@require_POST
async def give_seat(request: HttpRequest, run_id: str, agent: str) -> HttpResponse:
    """Give the seat back: the model plays the Agent again (a request waiting for this user goes to it)."""
    return await _seat_change(request, run_id, agent, take=False)


@require_POST
async def seat_pick(request: HttpRequest, run_id: str, agent: str) -> HttpResponse:
    """A pick made in the seat: checked by the event's model, then handed to the Turn loop."""
    user = await request.auser()
    await sync_to_async(needs)(user, "play")
    run_row = await Run.objects.filter(id=run_id).afirst()
    if run_row is None:
        raise Http404(f"no run {run_id}")
    if (run_row.view or {}).get("seats", {}).get(agent) != user.get_username():
        return HttpResponseBadRequest(f"you do not hold the seat of {agent}; take it first")
    machine = await sync_to_async(machine_of)(run_row.workflow)
    event = request.POST.get(EVENT_FIELD, "")
    if machine is None or event not in machine.menu_names(agent):
        return HttpResponseBadRequest(f'"{event}" is not on the Menu of {agent}')
    definition = machine.events.get(event)
    if definition is None:
        return HttpResponseBadRequest(f'"{event}" is not on the Menu of {agent}')
    form = schema_form(definition.input, request.POST)
    values = await sync_to_async(check)(form, definition.input)
    if values is None:
        return await form_refused(request, run_id, user, seat_key(agent, event), form, "_seats")
    try:
        host = await ready_host()
        await host.offer_pick(run_id, agent, event, values, sender=user.get_username())
    except InputPending:
        pass  # kept: handed to the Turn when a worker holds the run
    except HostError as err:  # NoHost among them
        return HttpResponseBadRequest(str(err))
    if request.htmx:
        return HttpResponse(status=204)
    return redirect(reverse("console:run", args=[run_id]) + f"#seat-{agent}")
