"""Console pages for a run's time and its relatives: the timeline, forking from a step, comparing two runs, and
exporting and importing runs. Thin views: the timeline, the fork form and the comparison are computed in
console/pages/ (timeline.py, forking.py, compare.py), a fork is made by the host (`Host.fork_run`), a file is read by
engine/web/exchange.py."""

from __future__ import annotations

import json
from typing import Any

from asgiref.sync import sync_to_async
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from console.access import can, needs, readers_only
from console.pages.compare import compare_runs
from console.pages.forking import fork_inputs, fork_page
from console.pages.runview import machine_of
from console.pages.timeline import timeline_of
from engine.models import Run
from engine.runtime.errors import NO_HOST, HostError
from engine.runtime.host import current_host
from engine.web.exchange import ExchangeError, export_run, import_run
from engine.web.hosting import ready_host

__all__ = ["timeline", "fork", "compare", "export", "import_runs", "MAX_IMPORT_BYTES"]

#: The largest file the import form takes.
MAX_IMPORT_BYTES = 50 * 1024 * 1024


def _run_or_404(run_id: str) -> Run:
    run = Run.objects.filter(id=run_id).first()
    if run is None:
        raise Http404(f"no run {run_id}")
    return run


# -- the timeline ---------------------------------------------------------------------------------------------


@readers_only
def timeline(request: HttpRequest, run_id: str) -> HttpResponse:
    run = _run_or_404(run_id)
    return render(
        request, "console/timeline.html", {"run": run, "timeline": timeline_of(run, machine_of(run.workflow))}
    )


# -- forking ------------------------------------------------------------------------------------------------------


@require_http_methods(["GET", "POST"])
@readers_only
async def fork(request: HttpRequest, run_id: str) -> HttpResponse:
    """GET: the run as it was after a step (`?step=N`, by default its last), with the fork form: its context to
    edit, the open Turns to restart from the edit, and the Gates open then to answer differently (a form per
    event, from its schema). POST: the host makes the fork; a refusal comes back on the form in its words."""
    user = await request.auser()
    posted = request.POST if request.method == "POST" else None
    step = (posted or request.GET).get("step", "")
    page = await sync_to_async(lambda: fork_page(_run_or_404(run_id), step, posted))()
    page["can_fork"] = await sync_to_async(can)(user, "start")
    if request.method == "GET":
        return await sync_to_async(render)(request, "console/fork.html", page)
    await sync_to_async(needs)(user, "start")
    page["context_text"] = request.POST.get("context", page.get("context_text", ""))
    page["answer"] = request.POST.get("answer", "")
    errors: list[str] = list(page.get("errors", []))
    context, answer, restart = fork_inputs(request.POST, page, errors)
    page["restart"] = restart
    if current_host() is None:
        errors.append(NO_HOST)
    if not errors:
        try:
            host = await ready_host()
            fork_id = await host.fork_run(
                run_id, page["step"], context=context, answer=answer, restart=restart, user_id=user.pk
            )
        except HostError as err:
            errors.append(str(err))
        else:
            return redirect("console:run", run_id=fork_id)
    page["errors"] = errors
    return await sync_to_async(render)(request, "console/fork.html", page, status=400)


# -- comparing ----------------------------------------------------------------------------------------------------


@readers_only
def compare(request: HttpRequest) -> HttpResponse:
    a, b = request.GET.get("a", "").strip(), request.GET.get("b", "").strip()
    page: dict[str, Any] = {"a": a, "b": b}
    if a and b:
        runs = {run.id: run for run in Run.objects.filter(id__in=[a, b]).select_related("parent")}
        missing = [name for name in (a, b) if name not in runs]
        if missing:
            page["error"] = f"no run {' and no run '.join(missing)}"
            return render(request, "console/compare.html", page, status=404)
        page.update(run_a=runs[a], run_b=runs[b], comparison=compare_runs(runs[a], runs[b]))
    elif a or b:
        page["error"] = "name two runs to compare: ?a=<run id>&b=<run id>"
    return render(request, "console/compare.html", page)


# -- export and import --------------------------------------------------------------------------------------------


@readers_only
def export(request: HttpRequest, run_id: str) -> HttpResponse:
    _run_or_404(run_id)
    response = JsonResponse(export_run(run_id), json_dumps_params={"indent": 1, "ensure_ascii": False})
    response["Content-Disposition"] = f'attachment; filename="jr2-run-{run_id}.json"'
    return response


@require_http_methods(["GET", "POST"])
@readers_only
def import_runs(request: HttpRequest) -> HttpResponse:
    """GET: the form; POST: the file read in, read-only, or refused in words with nothing changed."""
    page: dict[str, Any] = {"can_import": can(request.user, "start")}
    if request.method != "POST":
        return render(request, "console/import.html", page)
    needs(request.user, "start")
    upload = request.FILES.get("file")
    if upload is None:
        page["error"] = "choose a file written by Export (or `jr2 export`)"
    elif upload.size is not None and upload.size > MAX_IMPORT_BYTES:
        page["error"] = f"the file is {upload.size} bytes; the import form takes up to {MAX_IMPORT_BYTES}"
    else:
        try:
            data = json.loads(upload.read())
        except (ValueError, UnicodeDecodeError) as err:
            page["error"] = f"{upload.name} is not JSON: {err}"
        else:
            try:
                run = import_run(data, user_id=request.user.pk)
            except ExchangeError as err:
                page["error"], page["errors"] = f"{upload.name}: {err}", err.errors
            else:
                return redirect("console:run", run_id=run.id)
    return render(request, "console/import.html", page, status=400)
