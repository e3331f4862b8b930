"""The graph's folds and a child Machine's page (console/pages/folds.py keeps what each user folds).

    POST /workflows/<name>/graph/folds/   toggle=<path> | set=1 (collapsed=<path> ...) | set=all | set=none
                                          [machine=<invoke id>/...] [run=<id>] [next=<this page>]
    GET  /workflows/<name>/machines/<invoke id>/.../    a child Machine's own graph and states

A folds request from htmx or a script gets the graph drawn anew (lit for `run`); a form post goes back to `next`.
"""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from console.access import readers_only
from console.pages.folds import SESSION_KEY, child_machine, folds_for, folds_key, graph_context
from console.pages.states import state_details
from engine.models import Run
from engine.runtime import graph
from engine.runtime.registry import workflows

__all__ = ["graph_folds", "child_machine_page"]


@require_POST
@readers_only
def graph_folds(request: HttpRequest, name: str) -> HttpResponse:
    loaded = workflows().find(name)
    if loaded is None or loaded.machine is None:
        raise Http404(f'no workflow "{name}"')
    invokes = request.POST.get("machine", "")
    machine = child_machine(loaded.machine, invokes)
    allowed = graph.collapsible(machine)
    current = set(folds_for(request, name, machine, invokes))
    toggle, chosen = request.POST.get("toggle"), request.POST.get("set")
    if toggle is not None:
        if toggle not in allowed:
            return HttpResponseBadRequest(
                f'"{toggle[:200]}" is not a state with states inside in '
                f'Machine "{machine.id}", so it cannot be collapsed'
            )
        current ^= {toggle}
    elif chosen in ("all", "none"):
        current = set(allowed) if chosen == "all" else set()
    elif chosen == "1":
        asked = request.POST.getlist("collapsed")
        wrong = [path for path in asked if path not in allowed]
        if wrong:
            return HttpResponseBadRequest(
                f'not states with states inside in Machine "{machine.id}", so they cannot '
                f"be collapsed: {', '.join(p[:200] for p in wrong)}"
            )
        current = set(asked)
    else:
        return HttpResponseBadRequest(
            "say what to collapse: toggle=<state path>, or set=1 with collapsed=<state "
            "path> for each, or set=all, or set=none"
        )
    run = None
    if request.POST.get("run"):
        run = Run.objects.filter(id=request.POST["run"], workflow=name).first()
        if run is None:
            return HttpResponseBadRequest(f'workflow "{name}" has no run {request.POST["run"][:40]}')
    stored = dict(request.session.get(SESSION_KEY, {}))
    stored[folds_key(name, invokes)] = [path for path in allowed if path in current]
    request.session[SESSION_KEY] = stored
    if request.htmx or request.headers.get("X-Jr2-Graph") == "1":
        context = graph_context(request, name, machine, invokes, run)
        return HttpResponse(context["svg"])
    target = request.POST.get("next", "")
    if not url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}):
        target = reverse("console:workflow", args=[name])
    return redirect(target)


@readers_only
def child_machine_page(request: HttpRequest, name: str, invokes: str) -> HttpResponse:
    """A child Machine's own graph (reached from the state that invokes it), with its states' details."""
    loaded = workflows().find(name)
    if loaded is None or loaded.machine is None:
        raise Http404(f'no workflow "{name}"')
    machine = child_machine(loaded.machine, invokes)
    parts = [part for part in invokes.split("/") if part]
    trail = [
        (part, reverse("console:workflow", args=[name]) + "machines/" + "/".join(parts[: i + 1]) + "/")
        for i, part in enumerate(parts)
    ]
    context = {
        "name": name,
        "machine": machine,
        "trail": trail,
        "states": state_details(machine),
        "selected_state": request.GET.get("state", ""),
        "seats_text": machine.seats_text(machine.id),
        **graph_context(request, name, machine, invokes),
    }
    return render(request, "console/machine.html", context)
