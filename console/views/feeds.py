"""The run page's older history, a page at a time (console/pages/feeds.py), and its deep links to one step.

    GET /runs/<id>/steps/?before=<seq>[&after=<seq>]       older steps, newest first, as <li> items
    GET /runs/<id>/turns/?before=<pk>[&after=<pk>]         older Turns, as <article> cards
    GET /runs/<id>/turns/<pk>/lines/?before=<seq>          earlier lines of one long Turn
    GET /runs/<id>/?step=<seq>                             the run page with that step loaded and marked

The fragments end with a loader for the next older page (htmx loads it when it scrolls into view), so the browser
holds only what the user scrolled through.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest
from django.template.loader import render_to_string

from console.access import readers_only
from console.pages.feeds import cursor, step_page, steps_around, turn_lines, turn_page
from engine.models import Run, TurnRecord

__all__ = ["run_steps", "run_turns", "turn_lines_view", "deep_link"]


def _range(request: HttpRequest, need_before: bool = False) -> tuple[int | None, int]:
    before = cursor(request.GET.get("before"), "before")
    after = cursor(request.GET.get("after"), "after") or 0
    if need_before and before is None:
        raise ValueError("before is needed: the seq of the oldest line shown")
    if before is not None and before <= after:
        raise ValueError(f"before ({before}) must be above after ({after})")
    return before, after


def _run_exists(run_id: str) -> None:
    if not Run.objects.filter(id=run_id).exists():
        raise Http404(f"no run {run_id}")


def _run_feed(
    request: HttpRequest, run_id: str, page: Callable[[str, int | None, int], Any], template: str
) -> HttpResponse:
    """One page of a run's feed (`page(run, before, after)`) drawn with its loader, or a 400 naming the bad cursor."""
    _run_exists(run_id)
    try:
        before, after = _range(request)
    except ValueError as err:
        return HttpResponseBadRequest(str(err))
    return HttpResponse(
        render_to_string(
            template, {"feed": page(run_id, before, after), "run": {"id": run_id}, "loader": True}, request
        )
    )


@readers_only
def run_steps(request: HttpRequest, run_id: str) -> HttpResponse:
    return _run_feed(request, run_id, step_page, "console/feeds/_steps.html")


@readers_only
def run_turns(request: HttpRequest, run_id: str) -> HttpResponse:
    return _run_feed(request, run_id, turn_page, "console/feeds/_turns.html")


@readers_only
def turn_lines_view(request: HttpRequest, run_id: str, turn_pk: int) -> HttpResponse:
    if not TurnRecord.objects.filter(run_id=run_id, pk=turn_pk).exists():
        raise Http404(f"run {run_id} has no Turn {turn_pk}")
    try:
        before, _ = _range(request, need_before=True)
    except ValueError as err:
        return HttpResponseBadRequest(str(err))
    assert before is not None
    lines, earlier, hidden = turn_lines(turn_pk, before)
    context = {"lines": lines, "earlier": earlier, "hidden": hidden, "turn_pk": turn_pk, "run": {"id": run_id}}
    html = render_to_string("console/feeds/_earlier.html", context, request)
    return HttpResponse(html + render_to_string("console/feeds/_lines.html", context, request))


def deep_link(request: HttpRequest, page: Any) -> dict[str, Any]:
    """`?step=N`: the step's page besides the head (with a loader for the steps between), the step to mark, or
    why N is not a step of this run (the page opens as without it)."""
    raw = request.GET.get("step")
    if raw is None:
        return {}
    last = page.run.seq
    try:
        step = cursor(raw, "step")
    except ValueError as err:
        return {"step_error": f"{err}; this run's steps are 1 to {last}"}
    if step is None or not 1 <= step <= last:
        return {"step_error": f"there is no step {raw} in this run: its steps are 1 to {last}"}
    head = page.feeds.steps
    around = steps_around(page.run.id, step, head)
    out: dict[str, Any] = {"step_target": step, "around": around}
    if around is not None and around.steps and head.steps and around.steps[0].seq + 1 < head.steps[-1].seq:
        out["step_gap"] = (head.steps[-1].seq, around.steps[0].seq)
    return out
