"""The run page's "Save as scenario": a finished run written as `workflows/<workflow>.scenarios/<name>.json`
(engine/runtime/scenario_files.py makes it, as `jr2 scenario save` does), or downloaded as that file. Its recorded
picks, Gate answers and Effect results become the inputs; the expectations are what the current Machine comes to."""

from __future__ import annotations

from typing import Any

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_http_methods

from console.access import can, needs, readers_only
from engine.core.scenarios import Scenario
from engine.models import JournalEntry, Run
from engine.runtime.loader import Loaded
from engine.runtime.registry import workflows
from engine.runtime.scenario_files import check_name, run_scenario, scenario_folder, write_scenario

__all__ = ["save_scenario"]


def _made(run: Run, description: str) -> tuple[Loaded, Scenario]:
    journal = list(JournalEntry.objects.filter(run=run).order_by("seq").values("seq", "kind", "entry", "out"))
    return run_scenario(workflows(), run.id, run.workflow, run.status, journal, description)


@require_http_methods(["GET", "POST"])
@readers_only
def save_scenario(request: HttpRequest, run_id: str) -> HttpResponse:
    """GET: the form and the scenario the run makes (`?download=1&name=N`: the file itself). POST: the file written
    next to the workflow; a refusal (an unfinished run, a bad or taken name) comes back on the form in words."""
    run = Run.objects.filter(id=run_id).first()
    if run is None:
        raise Http404(f"no run {run_id}")
    source = request.POST if request.method == "POST" else request.GET
    name = source.get("name", "").strip()
    description = source.get("description", "").strip()
    page: dict[str, Any] = {
        "run": run,
        "name": name,
        "description": description,
        "can_save": can(request.user, "start"),
    }
    try:
        loaded, scenario = _made(run, description)
    except ValueError as err:
        page["error"] = str(err)
        return render(request, "console/scenario.html", page, status=400 if request.method == "POST" else 200)
    page.update(folder=scenario_folder(loaded), preview=scenario.to_text())
    if request.method == "GET" and request.GET.get("download"):
        filename = name if name and _valid(name) else f"run-{run.id}"
        response = HttpResponse(scenario.to_text(), content_type="application/json; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="{filename}.json"'
        return response
    if request.method == "GET":
        return render(request, "console/scenario.html", page)
    needs(request.user, "start")
    overwrite = request.POST.get("overwrite") == "on"
    try:
        page["saved"] = write_scenario(page["folder"], check_name(name), scenario, overwrite=overwrite)
    except FileExistsError as err:
        page["error"] = f"{err}: tick Overwrite to replace it"
    except (ValueError, OSError) as err:
        page["error"] = str(err)
    return render(request, "console/scenario.html", page, status=400 if "error" in page else 200)


def _valid(name: str) -> bool:
    try:
        check_name(name)
    except ValueError:
        return False
    return True
