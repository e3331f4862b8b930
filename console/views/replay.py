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
    `?rerun=1` the whole run replayed against the current Machine (no model, no Effect)."""
    run = Run.objects.filter(id=run_id).first()
    if run is None:
        raise Http404(f"no run {run_id}")
    page = replay_page(run, request.GET.get("step"), bool(request.GET.get("rerun")))
    if page is None:
        raise Http404(f"run {run_id} has no journal")
    return render(request, "console/replay.html", page)
