"""The runs list: one page of a search's runs (`runs_list`, read alike by the page and its live socket), and each
row: the run, and what the list says of it beyond its fields: a fork or an import, when it ended and how long it
took (for a live run, how long so far)."""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass
from typing import Any

from django.db.models import Count, Max, QuerySet, Window
from django.http import QueryDict
from django.template.loader import render_to_string
from django.utils import timezone

from console.pages.links import query_with
from engine.models import Run
from engine.web import search as run_search

__all__ = ["RunRow", "run_rows", "duration_text", "runs_list", "runs_fragment", "PAGE_SIZE"]

PAGE_SIZE = 25


@dataclass(frozen=True)
class RunRow:
    run: Run
    ended_at: dt.datetime | None  # the last journal entry's time, for a run that ended; None while it is live
    duration: str  # "4 min 12 s"; a live run's is so far ("so far" is the template's)
    live: bool

    def __getattr__(self, name: str) -> Any:
        return getattr(self.run, name)  # the template reads r.id, r.status... as before


def duration_text(seconds: float) -> str:
    """`0.4 s`, `12 s`, `4 min 12 s`, `3 h 5 min`, `2 d 4 h`: two units at most, as a list column needs."""
    if seconds < 10:
        return f"{max(seconds, 0):.1f} s"
    whole = int(seconds)
    days, rest = divmod(whole, 86_400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days} d {hours} h" if hours else f"{days} d"
    if hours:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    if minutes:
        return f"{minutes} min {secs} s" if secs else f"{minutes} min"
    return f"{secs} s"


def run_rows(runs: QuerySet[Run]) -> list[RunRow]:
    """The page's runs (already sliced, each annotated with `last_at`, its last journal entry's time) with their
    end time, from the journal (an import keeps its times)."""
    now = timezone.now()
    rows = []
    for run in runs:
        live = run.status in Run.LIVE
        last = getattr(run, "last_at", None) or run.updated_at
        ended = None if live else max(last, run.created_at)
        rows.append(RunRow(run, ended, duration_text(((ended or now) - run.created_at).total_seconds()), live))
    return rows


def runs_list(params: QueryDict) -> dict[str, Any]:
    """The list's part of the page for these parameters (the search's filters and `page`): its rows, the match
    count and the pages; the page past the last shows the last."""
    search = run_search.parse(params)
    rows = search.apply(Run.objects.all())
    # the count comes from the statement that reads the rows (a window over the whole search), so a run that starts
    # or ends meanwhile cannot make them disagree; a later page is first counted apart, to show the last page for
    # one past it
    counted = rows.annotate(last_at=Max("journal__at"), matched=Window(Count("id"))).order_by("-created_at", "id")
    try:
        page = max(int(params.get("page", "1")), 1)
    except ValueError:
        page = 1
    if page > 1:
        page = min(page, max(1, math.ceil(rows.count() / PAGE_SIZE)))
    shown = run_rows(counted[(page - 1) * PAGE_SIZE : page * PAGE_SIZE])
    count = shown[0].run.matched if shown else 0
    pages = max(1, math.ceil(count / PAGE_SIZE))
    return {
        "runs": shown,
        "count": count,
        "page": page,
        "pages": pages,
        "search": search,
        "search_active": search.active,
        "query": query_with(params, page=None),
    }


def runs_fragment(params: QueryDict) -> str:
    """The list and its match count as out-of-band HTML, for the live socket of `/runs/`."""
    return render_to_string("console/runs/_live.html", {**runs_list(params), "oob": True})
