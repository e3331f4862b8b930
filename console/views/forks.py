"""Console pages for a run's time and its relatives: the timeline, forking from a step, comparing two runs, and
exporting and importing runs. Thin views: the timeline and the comparison are computed in console/timeline.py and
console/compare.py, a fork is made by the host (`Host.fork_run`), a file is read by engine/web/exchange.py."""
from __future__ import annotations

import json
from typing import Any

from asgiref.sync import sync_to_async
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from engine.web.exchange import ExchangeError, export_run, import_run
from engine.models import JournalEntry, Run
from engine.core.journal.replay import describe
from engine.runtime.host import HostError, current_host
from engine.core.session import SessionError

from console.access import can, needs, readers_only
from console.compare import compare_runs
from console.replaying import session_at
from console.runview import machine_of
from console.timeline import timeline_of

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
    return render(request, "console/timeline.html", {"run": run,
                                                     "timeline": timeline_of(run, machine_of(run.workflow))})


# -- forking ------------------------------------------------------------------------------------------------------

@require_http_methods(["GET", "POST"])
@readers_only
async def fork(request: HttpRequest, run_id: str) -> HttpResponse:
    """GET: the run as it was after a step (`?step=N`, by default its last), with the fork form: its context to
    edit, and the Gates open then to answer differently. POST: the host makes the fork; a refusal comes back on
    the form in its words."""
    user = await request.auser()
    source = request.POST if request.method == "POST" else request.GET
    page = await sync_to_async(_fork_page)(run_id, source.get("step", ""))
    page["can_fork"] = await sync_to_async(can)(user, "start")
    if request.method == "GET":
        return await sync_to_async(render)(request, "console/fork.html", page)
    await sync_to_async(needs)(user, "start")
    page["context_text"] = request.POST.get("context", page.get("context_text", ""))
    page["answer"] = request.POST.get("answer", "")
    page["answer_input"] = request.POST.get("answer_input", "{}")
    errors: list[str] = list(page.get("errors", []))
    context, answer = _fork_inputs(request.POST, page, errors)
    host = current_host()
    if host is None:
        errors.append("no host drives runs in this server process (start it with `jr2 up`)")
    if not errors and host is not None:
        await host.ready.wait()
        try:
            fork_id = await host.fork_run(run_id, page["step"], context=context, answer=answer, user_id=user.pk)
        except HostError as err:
            errors.append(str(err))
        else:
            return redirect("console:run", run_id=fork_id)
    page["errors"] = errors
    return await sync_to_async(render)(request, "console/fork.html", page, status=400)


def _fork_page(run_id: str, step_text: str) -> dict[str, Any]:
    run = _run_or_404(run_id)
    last = run.seq
    try:
        step = min(max(int(step_text), 1), last) if step_text else last
    except ValueError:
        step = last
    entry = JournalEntry.objects.filter(run=run, seq=step).values_list("entry", flat=True).first() or {}
    page: dict[str, Any] = {"run": run, "step": step, "last": last, "words": describe(entry), "errors": [],
                            "gates": [], "context_text": "", "answer": "", "answer_input": "{}"}
    machine = machine_of(run.workflow)
    if machine is None or machine.digest != run.digest:
        page["errors"].append(f'the workflow "{run.workflow}" ' + ("does not load here" if machine is None else
                              "changed shape since this run was written") + ", so the run cannot be forked")
        return page
    try:
        session = session_at(run, machine, step)
    except SessionError as err:
        page["errors"].append(f"this step cannot be rebuilt on the workflow: {err}")
        return page
    page.update(
        status=session.status, active=session.active_paths, original_context=session.context,
        context_text=json.dumps(session.context, indent=2, ensure_ascii=False, sort_keys=True, default=str),
        gates=[{"id": gate.id, "path": gate.path, "events": [
            {"value": f"{gate.id}|{event}", "event": event,
             "fields": ", ".join(machine.events[event].input.model_fields) if event in machine.events else ""}
            for event in gate.accepts]} for gate in session.gates])
    if session.status != "active":
        page["errors"].append(f"after step {step} the run had already ended ({session.status}); pick an earlier "
                              "step")
    return page


def _fork_inputs(post: Any, page: dict[str, Any], errors: list[str]) -> tuple[Any, Any]:
    """The edited context (None when unchanged) and the Gate answer (None when none was chosen), or the reasons
    they are not valid, in `errors`."""
    context = None
    try:
        parsed = json.loads(post.get("context", "") or "null")
    except ValueError as err:
        errors.append(f"the context is not JSON: {err}")
    else:
        if parsed is not None and parsed != page.get("original_context"):
            context = parsed
    answer = None
    chosen = post.get("answer", "")
    if chosen:
        gate, _, event = chosen.partition("|")
        try:
            params = json.loads(post.get("answer_input", "") or "{}")
        except ValueError as err:
            errors.append(f"the Gate answer's input is not JSON: {err}")
        else:
            if not isinstance(params, dict):
                errors.append(f"the Gate answer's input must be a JSON object; got {type(params).__name__}")
            else:
                answer = (gate, event, params)
    return context, answer


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

