"""The Console's home and workflow pages, the workflow's graph as SVG, and the start form.

Starting a run needs the runtime's permission (console/access.py); the door input is validated by the workflow's
own model, with each error at its field, and the host starts the run.
"""

from __future__ import annotations

from typing import Any

from asgiref.sync import sync_to_async
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

import engine
from console.access import can, needs, readers_only
from console.pages.costs import cost_section
from console.pages.folds import graph_context
from console.pages.forms import SchemaForm, check, schema_form
from console.pages.regions import live_counts, recent_runs
from console.pages.states import menus, state_details
from engine.models import Run
from engine.runtime import graph
from engine.runtime.errors import NO_HOST
from engine.runtime.exporting import graph_export
from engine.runtime.host import current_host
from engine.runtime.loader import Loaded
from engine.runtime.registry import workflows
from engine.web.hosting import ready_host

__all__ = ["home", "workflow", "workflow_graph", "workflow_graph_export", "start_run"]

#: The graph's exports: the file's extension -> its content type (`graph.svg` is `workflow_graph`).
EXPORTS = {
    "png": "image/png",
    "mmd": "text/vnd.mermaid; charset=utf-8",
    "dot": "text/vnd.graphviz; charset=utf-8",
}


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
        rows.append(
            {
                "name": loaded.name,
                "file": loaded.file,
                "loaded": machine is not None,
                "error": loaded.error,
                "where": loaded.where,
                "status": loaded.status,
                "machine": machine,
                "warnings": machine.warnings() if machine else [],
                "live": live.get(loaded.name, {}).get("runs", 0),
                "gates": live.get(loaded.name, {}).get("gates", 0),
            }
        )
    helpers = [f for f in found.files if f.helper and f.failed]
    return render(
        request,
        "console/home.html",
        {"engine_version": engine.__version__, "folder": found.folder, "workflows": rows, "broken_helpers": helpers},
    )


def _workflow(name: str) -> Loaded:
    loaded = workflows().find(name)
    if loaded is None:
        raise Http404(f'no workflow "{name}"')
    return loaded


@readers_only
def workflow(request: HttpRequest, name: str) -> HttpResponse:
    loaded = _workflow(name)
    return render(request, "console/workflow.html", _workflow_context(request, loaded))


def _workflow_context(
    request: HttpRequest, loaded: Loaded, form: SchemaForm | None = None, error: str = ""
) -> dict[str, Any]:
    machine = loaded.machine
    context: dict[str, Any] = {"loaded": loaded, "name": loaded.name, "machine": machine, "error": error}
    if machine is None:
        return context
    context.update(
        **live_counts(loaded.name),
        **graph_context(request, loaded.name, machine),
        seats_text=machine.seats_text(loaded.name),
        states=state_details(machine),
        selected_state=request.GET.get("state", ""),
        menus=menus(machine),
        warnings=machine.warnings(),
        form=form if form is not None else schema_form(machine.door),
        can_start=can(request.user, "start"),
        can_play=can(request.user, "play"),
        agents=sorted(machine.agents),
        runs=recent_runs(loaded.name),
    )
    context.update(
        cost_section(
            request.GET if request.method == "GET" else None,
            Run.objects.filter(workflow=loaded.name),
            machine,
            context["svg"],
            reverse("console:workflow", args=[loaded.name]),
        )
    )
    return context


@readers_only
def workflow_graph(request: HttpRequest, name: str) -> HttpResponse:
    machine = _workflow(name).machine
    if machine is None:
        raise Http404(f'workflow "{name}" did not load')
    return HttpResponse(graph.machine_svg(machine), content_type="image/svg+xml; charset=utf-8")


@readers_only
def workflow_graph_export(request: HttpRequest, name: str, fmt: str) -> HttpResponse:
    """The graph as PNG, Mermaid (`stateDiagram-v2`) or DOT, downloaded as `<workflow>.<fmt>`; any other extension
    is a 404 that names the ones there are."""
    if fmt not in EXPORTS:
        raise Http404(f'no graph format "{fmt}": the graph exports as graph.svg, graph.png, graph.mmd and graph.dot')
    machine = _workflow(name).machine
    if machine is None:
        raise Http404(f'workflow "{name}" did not load')
    body: bytes | str = graph_export(machine, {"mmd": "mermaid"}.get(fmt, fmt))
    response = HttpResponse(body, content_type=EXPORTS[fmt])
    response["Content-Disposition"] = f'attachment; filename="{name}.{fmt}"'
    return response


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
    error = "" if current_host() is not None else NO_HOST
    playing = request.POST.getlist("_play")
    if playing:
        await sync_to_async(needs)(user, "play")
    if values is not None and not error:
        host = await ready_host()
        seats = {agent: (user.pk, user.get_username()) for agent in playing}
        run_id = await host.start_run(name, values, user_id=user.pk, seats=seats)
        return redirect("console:run", run_id=run_id)
    context = await sync_to_async(_workflow_context)(request, loaded, form, error)
    return await sync_to_async(render)(request, "console/workflow.html", context, status=400)
