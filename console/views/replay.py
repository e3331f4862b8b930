"""The replay page: step through a run's journal (console/pages/replaying.py rebuilds each step)."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

from console.access import readers_only
from console.pages.replaying import replay_page
from engine.models import Run

__all__ = ["replay"]


@readers_only
def replay(request: HttpRequest, run_id: str) -> HttpResponse:
    """The graph, context, seats, Allowed picks and Turns as they were after a step (`?step=N`), and with
    `?rerun=1` the whole run replayed against the current Machine (no model, no Effect). An htmx request (a
    step link, the slider, play, ← →) gets the panes alone, which replace the page's."""
    run = Run.objects.filter(id=run_id).first()
    if run is None:
        raise Http404(f"no run {run_id}")
    page = replay_page(run, request.GET.get("step"), bool(request.GET.get("rerun")))
    if page is None:
        raise Http404(f"run {run_id} has no journal")
    if request.headers.get("HX-Request") == "true" and request.headers.get("HX-History-Restore-Request") != "true":
        return render(request, "console/replay/_panes.html", page)  # a step: the panes alone, swapped in place
    return render(request, "console/replay.html", page)
