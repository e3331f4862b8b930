"""The Gate inbox: `/gates/` lists every open Gate across all runs with its form inline; `/gates/answer/` answers
one Gate or several of one kind at once, each delivered on its own."""

from __future__ import annotations

from typing import Any

from asgiref.sync import sync_to_async
from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import render
from django.template.loader import render_to_string
from django.views.decorators.http import require_POST

from console.access import can, needs, readers_only
from console.pages.assigned import WHO, Answerer
from console.pages.forms import EVENT_FIELD
from console.pages.gates import (
    ORDERS,
    SHOWN,
    Batch,
    Outcome,
    Result,
    answer_many,
    check_batch,
    inbox_items,
    inbox_query,
    item_for,
    open_gates,
)
from engine.models import GateRecord, Run
from engine.runtime.registry import workflows

__all__ = ["inbox", "answer"]


def _filters(params: QueryDict) -> tuple[dict[str, str], list[str]]:
    """The inbox's filters from its URL (workflow, gate, order), each checked; errors name the parameter."""
    found = {
        "workflow": params.get("workflow", "").strip(),
        "gate": params.get("gate", "").strip(),
        "who": params.get("who", "").strip(),
        "order": params.get("order", "").strip() or "oldest",
    }
    errors = []
    if found["order"] not in ORDERS:
        errors.append(f'order: "{found["order"][:40]}" is not one of {", ".join(ORDERS)}')
        found["order"] = "oldest"
    if found["who"] not in WHO:
        errors.append(f'who: "{found["who"][:40]}" is not one of {", ".join(w for w in WHO if w)}')
        found["who"] = ""
    for key in ("workflow", "gate"):
        if len(found[key]) > 300:
            errors.append(f"{key}: longer than 300 characters")
            found[key] = ""
    return found, errors


def _context(request: HttpRequest, filters: dict[str, str], errors: list[str]) -> dict[str, Any]:
    answering = can(request.user, "answer")
    answerer = Answerer.of(request.user)
    rows = open_gates(**filters, answerer=answerer) if not errors else GateRecord.objects.none()
    count = rows.count()
    items = inbox_items(rows.select_related("run")[:SHOWN], answering, answerer)
    kinds = sorted(
        set(
            GateRecord.objects.filter(closed_at=None, run__status__in=Run.LIVE, run__imported_from="").values_list(
                "workflow", "gate"
            )
        )
    )
    return {
        "items": items,
        "count": count,
        "shown": len(items),
        "filters": filters,
        "errors": errors,
        "answering": answering,
        "orders": ORDERS,
        "whos": WHO,
        "workflows": workflows().names(),
        "gates": sorted({gate for _, gate in kinds}),
        "query": inbox_query(filters),
        "shown_ids": ",".join(str(item.record.pk) for item in items),
    }


@readers_only
def inbox(request: HttpRequest) -> HttpResponse:
    filters, errors = _filters(request.GET)
    return render(request, "console/gates.html", _context(request, filters, errors), status=400 if errors else 200)


@require_POST
async def answer(request: HttpRequest) -> HttpResponse:
    """Answer the selected Gates (`gate`, repeated: record ids) with one event (`_event`) and its input. The input
    is checked once by the event's model; any error, or Gates of different kinds, delivers nothing."""
    user = await request.auser()
    await sync_to_async(needs)(user, "answer")
    ids = [i.strip() for i in request.POST.getlist("gate") if i.strip()]
    event = request.POST.get(EVENT_FIELD, "")
    batch = await sync_to_async(check_batch)(ids, event, request.POST)
    outcomes: list[Outcome] = []
    if not batch.error and batch.values is not None:
        outcomes = await answer_many(batch, user)
    html = await sync_to_async(_answered)(request, batch, outcomes)
    if request.htmx:
        return HttpResponse(html)
    filters, errors = _filters(request.GET)
    context = await sync_to_async(_context)(request, filters, errors)
    context["result"] = html
    failed = batch.error or batch.values is None
    return await sync_to_async(render)(request, "console/gates.html", context, status=400 if failed else 200)


def _answered(request: HttpRequest, batch: Batch, outcomes: list[Outcome]) -> str:
    """The batch's result, and each Gate's item as it is now: a delivered or closed one says so; a refused input
    shows its errors on the form it was typed into."""
    items = []
    answerer = Answerer.of(request.user)
    if batch.form is not None and batch.values is None and batch.records:
        item = item_for(batch.records[0], True, answerer)
        item.forms = [
            f if f.event != batch.event else type(f)(f.event, f.description, batch.form, f.rejecting, f.has_reason)
            for f in item.forms
        ]
        items.append(item)
    items += [item_for(o.record, True, answerer) for o in outcomes if o.result == Result.PENDING]  # now saying it waits
    return render_to_string(
        "console/gates/_result.html",
        {
            "batch": batch,
            "outcomes": outcomes,
            "items": items,
            "oob": True,
            "answered": f"answered by {request.user.get_username()} with {batch.event}",
            "delivered": [o for o in outcomes if o.result == Result.DELIVERED],
            "pending": [o for o in outcomes if o.result == Result.PENDING],
            "closed": [o for o in outcomes if o.result == Result.CLOSED],
            "refused": [o for o in outcomes if o.result == Result.REFUSED],
        },
        request,
    )
