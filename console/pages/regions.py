"""The live regions of the run page and of the workflow page, rendered from their templates as out-of-band HTML
(htmx swaps each element by its id). The page views send them after a form's answer, the live consumers after
each commit (console/consumers/), so a page and its live fragments always agree.

A run's regions are rendered once per commit and kind of viewer (what they may do, which seats they hold) and
kept a while: 500 open pages of a run cost a render or two a commit.
"""

from __future__ import annotations

from typing import Any

from django.http import QueryDict
from django.template.loader import render_to_string
from django.urls import reverse

from console.access import can
from console.pages.costs import cost_section
from console.pages.runview import machine_of, run_page
from engine.models import Run
from engine.runtime.cache import LRU

__all__ = [
    "REGIONS",
    "Regions",
    "permission_flags",
    "render_regions",
    "run_regions",
    "live_counts",
    "recent_runs",
    "workflow_stats",
    "run_costs",
]

REGIONS: tuple[str, ...] = ("_status", "_lit", "_context", "_gates", "_inputs", "_seats", "_now", "_output", "_turns")
REGIONS += ("_summary", "_steps")  # the history's size and newest steps (console/pages/feeds.py)
Regions = dict[str, str]

CACHE_SIZE = 256
_cache: LRU[tuple[Any, ...], Regions] = LRU(CACHE_SIZE)


def permission_flags(user: Any) -> tuple[bool, ...]:
    """What a viewer may do on a run page, which decides what its regions show."""
    return (can(user, "answer"), can(user, "cancel"), can(user, "play"))


def render_regions(run_id: str | Run, user: Any) -> tuple[Regions | None, str, tuple[str, ...]]:
    """Every region of the run page for this viewer, the commit time it shows, and the seats the viewer holds.
    Renders are shared: the same commit, permissions and seats are rendered once. `run_id` may be the Run row,
    read once for all the viewers of a commit."""
    page = run_page(run_id, user)
    if page is None:
        return None, "", ()
    key = (page.run.id, page.run.updated_at.isoformat(), *permission_flags(user), page.held, page.inputs_key)
    found = _cache.get(key)
    if found is not None:
        return found, key[1], page.held
    regions = {
        name: render_to_string(f"console/run/{name}.html", {"page": page, "run": page.run, "oob": True})
        for name in REGIONS
    }
    return _cache.put(key, regions), key[1], page.held


def run_regions(run_id: str, user: Any) -> str | None:
    """Every region of the run page as out-of-band HTML (an htmx form's answer brings the page up to date too)."""
    regions, _, _ = render_regions(run_id, user)
    return None if regions is None else "".join(regions.values())


def run_costs(run_id: str | Run, params: QueryDict) -> str:
    """A run's section "Cost and time per state" as out-of-band HTML, sorted as the page asked (`params`: the
    page's own; the graph's heat is drawn with the page, only the table follows). `run_id` may be the Run row."""
    run = run_id if isinstance(run_id, Run) else Run.objects.filter(id=run_id).first()
    if run is None:
        return ""
    section = cost_section(params, run, machine_of(run.workflow), "", reverse("console:run", args=[run.id]))
    return render_to_string("console/_costs.html", {**section, "run": run, "oob": True})


def live_counts(workflow: str) -> dict[str, int]:
    """A workflow's live runs and their open Gates, as the workflow page shows them."""
    views = list(Run.objects.filter(workflow=workflow, status__in=Run.LIVE).values_list("view", flat=True))
    return {"live_runs": len(views), "open_gates": sum(len((view or {}).get("gates", [])) for view in views)}


def recent_runs(workflow: str) -> list[Run]:
    """The workflow page's "Recent runs": its ten newest."""
    return list(Run.objects.filter(workflow=workflow).order_by("-created_at", "id")[:10])


def workflow_stats(workflow: str) -> str:
    """The workflow page's live parts as out-of-band HTML: its counts and its recent runs."""
    context = {**live_counts(workflow), "name": workflow, "runs": recent_runs(workflow), "oob": True}
    return render_to_string("console/_workflow_stats.html", context) + render_to_string(
        "console/_recent_runs.html", context
    )
