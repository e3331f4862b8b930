"""Reading a big Machine: which of its compound states a user keeps collapsed on the graph, and its child Machines'
own graphs.

The choice is the user's, per workflow (and per child Machine of it), kept in their session (so it follows them from
page to page and run to run of that workflow, and needs no table): `{"<workflow>[/<invoke id>...]": [paths]}`.
Paths the Machine no longer has are dropped when read; a path that is not a collapsible state is refused when
written, and nothing is saved.

    POST /workflows/<name>/graph/folds/   toggle=<path> | set=1 (collapsed=<path> ...) | set=all | set=none
                                          [machine=<invoke id>/...] [run=<id>] [next=<this page>]

An htmx or script request gets the graph drawn anew (lit for `run`); a form post goes back to `next`.
"""
from __future__ import annotations

from typing import Any

from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from engine.models import Run
from engine.runtime.registry import workflows
from engine.core.workflow import Machine

from console import graph
from console.access import readers_only

__all__ = ["SESSION_KEY", "folds_for", "child_machine", "graph_context", "graph_folds", "child_machine_page"]

SESSION_KEY = "jr2.graph.folds"


def child_machine(machine: Machine, invokes: str) -> Machine:
    """The child Machine reached by invoke ids (`archive`, `review/inner`); Http404 naming the step that is not
    one."""
    found = machine
    walked: list[str] = []
    for invoke_id in [part for part in invokes.split("/") if part]:
        child = next((m for node in found.nodes for i, m in found.child_machines(node) if i == invoke_id), None)
        if child is None:
            where = f'"{"/".join(walked)}"' if walked else "the workflow"
            raise Http404(f'{where} invokes no child Machine with the id "{invoke_id}"')
        walked.append(invoke_id)
        found = child
    return found


def _key(name: str, invokes: str) -> str:
    return "/".join([name, *[part for part in invokes.split("/") if part]])


def folds_for(request: HttpRequest | None, name: str, machine: Machine, invokes: str = "") -> list[str]:
    """The states this user keeps collapsed on this Machine's graph (those it still has)."""
    if request is None or not hasattr(request, "session"):
        return []
    kept = request.session.get(SESSION_KEY, {}).get(_key(name, invokes), [])
    allowed = set(graph.collapsible(machine))
    return [path for path in kept if path in allowed]


def graph_context(request: HttpRequest | None, name: str, machine: Machine, invokes: str = "",
                  run: Run | None = None) -> dict[str, Any]:
    """What the graph panel (templates/console/graph/_panel.html) needs: the drawing with this user's folds, lit for
    `run` when given, and the addresses its controls use."""
    folds = folds_for(request, name, machine, invokes)
    svg = graph.machine_svg(machine, folds)
    if run is not None:
        view = run.view or {}
        svg = graph.lit_svg(svg, view.get("active", []), view.get("visited", []))
    here = f"{invokes.strip('/')}/" if invokes.strip("/") else ""
    return {"svg": svg, "folds": folds, "collapsible": graph.collapsible(machine), "graph_machine": invokes,
            "folds_url": reverse("console:graph-folds", args=[name]),
            "machine_base": reverse("console:workflow", args=[name]) + "machines/" + here,
            "graph_run": run.id if run is not None else ""}


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
            return HttpResponseBadRequest(f'"{toggle[:200]}" is not a state with states inside in '
                                          f'Machine "{machine.id}", so it cannot be collapsed')
        current ^= {toggle}
    elif chosen in ("all", "none"):
        current = set(allowed) if chosen == "all" else set()
    elif chosen == "1":
        asked = request.POST.getlist("collapsed")
        wrong = [path for path in asked if path not in allowed]
        if wrong:
            return HttpResponseBadRequest(f'not states with states inside in Machine "{machine.id}", so they cannot '
                                          f'be collapsed: {", ".join(p[:200] for p in wrong)}')
        current = set(asked)
    else:
        return HttpResponseBadRequest("say what to collapse: toggle=<state path>, or set=1 with collapsed=<state "
                                      "path> for each, or set=all, or set=none")
    run = None
    if request.POST.get("run"):
        run = Run.objects.filter(id=request.POST["run"], workflow=name).first()
        if run is None:
            return HttpResponseBadRequest(f'workflow "{name}" has no run {request.POST["run"][:40]}')
    stored = dict(request.session.get(SESSION_KEY, {}))
    stored[_key(name, invokes)] = [path for path in allowed if path in current]
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
    from console.views import _state_details

    loaded = workflows().find(name)
    if loaded is None or loaded.machine is None:
        raise Http404(f'no workflow "{name}"')
    machine = child_machine(loaded.machine, invokes)
    parts = [part for part in invokes.split("/") if part]
    trail = [(part, reverse("console:workflow", args=[name]) + "machines/" + "/".join(parts[:i + 1]) + "/")
             for i, part in enumerate(parts)]
    context = {"name": name, "machine": machine, "trail": trail, "states": _state_details(machine),
               "seats_text": machine.seats_text(machine.id), **graph_context(request, name, machine, invokes)}
    return render(request, "console/machine.html", context)
