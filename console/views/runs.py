"""Console pages: thin views over what the engine computes and the runtime committed; no rule lives here.

Reading needs a logged-in user (or `JR2_CONSOLE_OPEN_READS`); starting runs, answering Gates and cancelling need the
runtime's permissions (console/access.py). Inputs go to the host that drives the run; the engine decides, and a
refusal comes back to the form in the engine's words.
"""
from __future__ import annotations

import json
import math
from typing import Any

from asgiref.sync import sync_to_async
from django.db.models import Count
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest, QueryDict
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.views.decorators.http import require_POST

import engine
from engine.web import search as run_search
from engine.models import Run
from engine.runtime.registry import workflows
from engine.runtime.host import HostError, current_host

#: Said when this process has no host: it was started some other way than `jr2 up` or `jr2 web`.
NO_HOST = "no host in this server process: start it with `jr2 up` (or `jr2 web` beside `jr2 worker`)"

from console import costs as cost_tables
from console import graph
from console.access import can, needs, readers_only
from console.feed_views import deep_link
from console.folds import graph_context
from console.forms import EVENT_FIELD, check, schema_form
from console.live import live_counts, run_regions
from console.runview import gate_key, machine_of, run_page

PAGE_SIZE = 25


# -- workflows -----------------------------------------------------------------------------------------------

@readers_only
def home(request: HttpRequest) -> HttpResponse:
    """Every Workflow with its live runs, open Gates and warnings; files that failed to load, with their error."""
    found = workflows()
    live: dict[str, dict[str, int]] = {}
    for run in Run.objects.filter(status__in=Run.LIVE).only("workflow", "view"):
        counts = live.setdefault(run.workflow, {"runs": 0, "gates": 0})
        counts["runs"] += 1
        counts["gates"] += len((run.view or {}).get("gates", []))
    rows = []
    for loaded in found.workflows:
        machine = loaded.machine
        rows.append({"name": loaded.name, "file": loaded.file, "loaded": machine is not None,
                     "error": loaded.error, "where": loaded.where, "status": loaded.status,
                     "machine": machine, "warnings": machine.warnings() if machine else [],
                     "live": live.get(loaded.name, {}).get("runs", 0),
                     "gates": live.get(loaded.name, {}).get("gates", 0)})
    helpers = [f for f in found.files if f.helper and f.failed]
    return render(request, "console/home.html", {"engine_version": engine.__version__, "folder": found.folder,
                                                 "workflows": rows, "broken_helpers": helpers})


def _workflow(name: str) -> Any:
    loaded = workflows().find(name)
    if loaded is None:
        raise Http404(f'no workflow "{name}"')
    return loaded


@readers_only
def workflow(request: HttpRequest, name: str) -> HttpResponse:
    loaded = _workflow(name)
    return render(request, "console/workflow.html", _workflow_context(request, loaded))


def _workflow_context(request: HttpRequest, loaded: Any, form: Any = None, error: str = "") -> dict[str, Any]:
    machine = loaded.machine
    context: dict[str, Any] = {"loaded": loaded, "name": loaded.name, "machine": machine, "error": error}
    if machine is None:
        return context
    context.update(
        **live_counts(loaded.name),
        **graph_context(request, loaded.name, machine),
        seats_text=machine.seats_text(loaded.name),
        states=_state_details(machine),
        menus=[(agent, machine.agents[agent].model if agent in machine.agents else "", machine.menu(agent))
               for agent in machine.menus()],
        warnings=machine.warnings(),
        form=form if form is not None else schema_form(machine.door),
        can_start=can(request.user, "start"),
        can_play=can(request.user, "play"),
        agents=sorted(machine.agents),
        runs=Run.objects.filter(workflow=loaded.name).order_by("-created_at")[:10],
    )
    context.update(_costs(request, Run.objects.filter(workflow=loaded.name), machine, context["svg"],
                          reverse("console:workflow", args=[loaded.name])))
    return context


def _costs(request: HttpRequest | None, runs: Any, machine: Any, svg: str, base: str) -> dict[str, Any]:
    """The section "Cost and time per state": the table sorted by `?sort=`, the heat by `?overlay=tokens|time` (by
    tokens when off), and the graph with the overlay when `?overlay=` names a measure. Its links go to `base` (the
    page's own address: a form's failed POST renders this page at another one) and keep the page's other
    parameters, so every view of it is bookmarkable."""
    params = request.GET.copy() if request is not None and request.method == "GET" else QueryDict(mutable=True)
    overlay = params.get("overlay", "")
    overlay = overlay if overlay in cost_tables.MEASURES else ""
    found = cost_tables.state_costs(runs, machine, overlay or "tokens")
    count = 1 if isinstance(runs, Run) else runs.count()

    def link(**changes: Any) -> str:
        query = params.copy()
        for key, value in changes.items():
            query.pop(key, None)
            if value is not None:
                query[key] = value
        encoded = query.urlencode()
        return base + ("?" + encoded if encoded else "")

    out: dict[str, Any] = {
        "costs": cost_tables.cost_table(found, params.get("sort", ""), lambda sort: link(sort=sort) + "#costs"),
        "cost_runs": count, "cost_measure": overlay or "tokens", "cost_overlay": overlay,
        "cost_links": [(m, link(overlay=m)) for m in cost_tables.MEASURES] + [("off", link(overlay=None))],
        "cost_spent": any(c.spent for c in found), "cost_of_run": isinstance(runs, Run),
        "cost_measured": any(c.heat > 0 for c in found),
        "cost_root": machine.id if machine is not None else "",
    }
    if overlay and svg:
        out["svg"] = graph.overlay_svg(svg, cost_tables.heat_of(found), cost_tables.titles_of(found))
    return out


def _state_details(machine: Any) -> list[dict[str, Any]]:
    """Per state: its seats, its transitions and what it invokes (shown when the state is clicked)."""
    seats = {seat.state: seat for seat in machine.seats()}
    out = []
    for node in machine.nodes:
        if not node.path:
            continue
        transitions = []
        for t in node.all_transitions():
            target = ", ".join(".".join(x.path) or machine.id for x in t.target) if t.target else "(no target)"
            guard = graph.guard_text(t.guard)
            transitions.append({"event": t.event_type or "(always)", "target": target, "guard": guard})
        seat = seats.get(node.id)
        out.append({"path": ".".join(node.path), "type": node.type,
                    "invokes": [f"{inv.src if isinstance(inv.src, str) else '(inline)'} ({inv.id})"
                                for inv in node.invoke],
                    "seat": seat.line() if seat else "", "transitions": transitions})
    return out


@readers_only
def workflow_graph(request: HttpRequest, name: str) -> HttpResponse:
    machine = _workflow(name).machine
    if machine is None:
        raise Http404(f'workflow "{name}" did not load')
    return HttpResponse(graph.machine_svg(machine), content_type="image/svg+xml; charset=utf-8")


@require_POST
async def start_run(request: HttpRequest, name: str) -> HttpResponse:
    """The start form: the door validated by the workflow's own model (errors at their fields), then the host
    starts the run."""
    user = await request.auser()
    await sync_to_async(needs)(user, "start")
    loaded = await sync_to_async(_workflow)(name)
    machine = loaded.machine
    if machine is None:
        return HttpResponseBadRequest(f'workflow "{name}" did not load')
    form = schema_form(machine.door, request.POST)
    values = check(form, machine.door)
    host = current_host()
    error = "" if host is not None else NO_HOST
    playing = request.POST.getlist("_play")
    if playing:
        await sync_to_async(needs)(user, "play")
    if values is not None and host is not None:
        await host.ready.wait()
        seats = {agent: (user.pk, user.get_username()) for agent in playing}
        run_id = await host.start_run(name, values, user_id=user.pk, seats=seats)
        return redirect("console:run", run_id=run_id)
    context = await sync_to_async(_workflow_context)(request, loaded, form, error)
    return await sync_to_async(render)(request, "console/workflow.html", context, status=400)


# -- runs ------------------------------------------------------------------------------------------------------

@readers_only
def runs(request: HttpRequest) -> HttpResponse:
    """Every run, or those a search matches (engine/web/search.py: every filter a query on the server, in the URL)."""
    from console.search_form import search_context

    search = run_search.parse(request.GET)
    rows = search.apply(Run.objects.all())
    count = rows.count()
    pages = max(1, math.ceil(count / PAGE_SIZE))
    try:
        page = min(max(int(request.GET.get("page", "1")), 1), pages)
    except ValueError:
        page = 1
    shown = rows.order_by("-created_at", "id")[(page - 1) * PAGE_SIZE: page * PAGE_SIZE]
    statuses = dict(Run.objects.values_list("status").annotate(n=Count("id")))
    return render(request, "console/runs.html", {
        "runs": shown, "count": count, "page": page, "pages": pages, "search": search,
        "workflow": request.GET.get("workflow", ""), "status": request.GET.get("status", ""),
        "workflows": workflows().names(), "statuses": [(s, statuses.get(s, 0)) for s in Run.Status.values],
        "query": _query(request, page=None), **search_context(request.GET, search),
    }, status=400 if search.errors else 200)


def _query(request: HttpRequest, **changes: Any) -> str:
    params = request.GET.copy()
    for key, value in changes.items():
        params.pop(key, None)
        if value is not None:
            params[key] = value
    return params.urlencode()


@readers_only
def run(request: HttpRequest, run_id: str) -> HttpResponse:
    page = run_page(run_id, request.user)
    if page is None:
        raise Http404(f"no run {run_id}")
    return render(request, "console/run.html", {**_run_page_context(request, page), **deep_link(request, page)})


def _run_context(page: Any, request: HttpRequest | None = None) -> dict[str, Any]:
    machine = page.machine
    drawn = graph_context(request, page.run.workflow, machine, run=page.run) if machine is not None else {"svg": ""}
    return {**drawn, "page": page, "run": page.run}


def _run_page_context(request: HttpRequest | None, page: Any) -> dict[str, Any]:
    """The run page's context with its section "Cost and time per state" (rendered once with the page: the live
    regions do not carry it)."""
    context = _run_context(page, request)
    context.update(_costs(request, page.run, page.machine, context["svg"],
                          reverse("console:run", args=[page.run.id])))
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
    event = request.POST.get(EVENT_FIELD, "")
    machine = await sync_to_async(machine_of)(run_row.workflow)
    definition = machine.gate_event(gate, event) if machine is not None else None
    form = schema_form(definition.input if definition else None, request.POST)
    values = await sync_to_async(check)(form, definition.input if definition else None)
    if definition is None:
        form.add_error(None, f'Gate "{gate}" does not take "{event}"')
    elif values is not None:
        host = current_host()
        if host is None:
            form.add_error(None, NO_HOST)
        else:
            await host.ready.wait()
            try:
                delivery = await host.deliver(run_id, "gate", gate=gate, event=event, params=values,
                                              by=user.get_username())
            except Exception as err:  # noqa: BLE001 - the run ended or moved to another host: say so on the form
                form.add_error(None, str(err))
            else:
                if delivery.outcome == "delivered":
                    if request.htmx:
                        regions = await sync_to_async(run_regions)(run_id, user)
                        return HttpResponse(regions or "")
                    return redirect(reverse("console:run", args=[run_id]) + "#run-gates")
                form.add_error(None, delivery.error or delivery.outcome)
    return await _form_refused(request, run_id, user, gate_key(gate, event), form, "_gates")


async def _form_refused(request: HttpRequest, run_id: str, user: Any, key: str, form: Any,
                        region: str) -> HttpResponse:
    """A form the engine or the event's model refused, shown again with its errors: as its region for htmx, else
    as the whole run page (400)."""
    page = await sync_to_async(run_page)(run_id, user, {key: form})
    if page is None:
        raise Http404(f"no run {run_id}")
    if request.htmx:
        html = await sync_to_async(render_to_string)(
            f"console/run/{region}.html", {"page": page, "run": page.run, "oob": True}, request)
        return HttpResponse(html)
    context = await sync_to_async(_run_page_context)(None, page)
    return await sync_to_async(render)(request, "console/run.html", context, status=400)


@require_POST
async def cancel_run(request: HttpRequest, run_id: str) -> HttpResponse:
    user = await request.auser()
    await sync_to_async(needs)(user, "cancel")
    host = current_host()
    if host is None:
        return HttpResponseBadRequest(NO_HOST)
    await host.ready.wait()
    try:
        await host.cancel(run_id)
    except Exception as err:  # noqa: BLE001 - the run ended meanwhile: the page shows how it ended
        return HttpResponseBadRequest(f"run {run_id} could not be cancelled: {err}")
    return redirect("console:run", run_id=run_id)


# -- replay ----------------------------------------------------------------------------------------------------

@readers_only
def replay(request: HttpRequest, run_id: str) -> HttpResponse:
    """Step through a run's journal: the graph, context, seats, Allowed picks and Turns as they were after a step,
    and the whole run replayed against the current Machine (no model, no Effect)."""
    from engine.models import JournalEntry, TurnMessage
    from engine.core.journal.replay import replay as replay_run
    from engine.core.session import SessionError

    from console.replaying import session_at, steps_of
    from console.runview import _lines

    run_row = Run.objects.filter(id=run_id).first()
    if run_row is None:
        raise Http404(f"no run {run_id}")
    machine = machine_of(run_row.workflow)
    steps = steps_of(run_row, machine)
    if not steps:
        raise Http404(f"run {run_id} has no journal")
    try:
        step = min(max(int(request.GET.get("step", len(steps))), 1), len(steps))
    except ValueError:
        step = len(steps)
    context: dict[str, Any] = {"run": run_row, "steps": steps, "step": step, "current": steps[step - 1],
                               "machine": machine, "speeds": (0.5, 1, 2, 4)}
    if machine is None:
        context["error"] = f'workflow "{run_row.workflow}" does not load now, so its states cannot be shown'
    else:
        try:
            session = session_at(run_row, machine, step)
        except SessionError as err:
            context["error"] = f"this step cannot be shown on the current Machine: {err}"
        else:
            active = session.active_paths
            seat_paths = {f"{machine.id}.{p}" for p in active}
            context.update(
                svg=graph.lit_svg(graph.machine_svg(machine), active, ()),
                active=active, context_json=json.dumps(session.context, indent=2, ensure_ascii=False,
                                                       sort_keys=True, default=str),
                seats=[seat.line() for seat in machine.seats() if seat.path in seat_paths],
                turns=[{"agent": t.agent, "path": t.path, "outstanding": t.outstanding,
                        "allowed": session.allowed_picks(t.agent)} for t in session.turns],
                gates=session.gates, status=session.status)
        until = steps[step].at if step < len(steps) else None
        messages = TurnMessage.objects.filter(run=run_row).select_related("turn").order_by("conversation", "seq")
        if until is not None:
            messages = messages.filter(created_at__lt=until)
        by_turn: dict[str, list[Any]] = {}
        for message in messages:
            by_turn.setdefault(message.turn.turn, []).append(message)
        context["conversation"] = [(turn, _lines(items, [])) for turn, items in by_turn.items()]
    if request.GET.get("rerun"):
        if machine is None:
            context["rerun"] = "the workflow does not load now"
        else:
            journal = [{"seq": e.seq, "kind": e.kind, "entry": e.entry, "out": e.out}
                       for e in JournalEntry.objects.filter(run=run_row).order_by("seq")]
            report = replay_run(machine, journal)
            context["rerun"] = report.message
            context["rerun_same"] = report.same
            context["rerun_step"] = getattr(report, "step", None)
    return render(request, "console/replay.html", context)


# -- playing a seat ------------------------------------------------------------------------------------------------

async def _seat_change(request: HttpRequest, run_id: str, agent: str, take: bool) -> HttpResponse:
    user = await request.auser()
    await sync_to_async(needs)(user, "play")
    run_row = await Run.objects.filter(id=run_id).afirst()
    if run_row is None:
        raise Http404(f"no run {run_id}")
    holder = (run_row.view or {}).get("seats", {}).get(agent)
    if not take and holder != user.get_username():
        return HttpResponseBadRequest(f"you do not hold the seat of {agent}")
    host = current_host()
    if host is None:
        return HttpResponseBadRequest(NO_HOST)
    await host.ready.wait()
    try:
        await host.take_seat(run_id, agent, (user.pk, user.get_username()) if take else None)
    except Exception as err:  # noqa: BLE001 - someone else holds it, or the run ended: say so
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
    """A pick made in the seat: checked by the event's model, then handed to the Turn loop, which treats it as a
    model's tool call (refused, answered, outstanding or ending the Turn)."""
    from console.runview import seat_key

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
    if values is not None:
        host = current_host()
        if host is None:
            return HttpResponseBadRequest(NO_HOST)
        await host.ready.wait()
        try:
            await host.offer_pick(run_id, agent, event, values)
        except HostError as err:
            return HttpResponseBadRequest(str(err))
        if request.htmx:
            return HttpResponse(status=204)
        return redirect(reverse("console:run", args=[run_id]) + f"#seat-{agent}")
    return await _form_refused(request, run_id, user, seat_key(agent, event), form, "_seats")
