"""One row of the runs list: the run, and what the list says of it beyond its fields: a fork or an import, when it
ended and how long it took (for a live run, how long so far)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from django.db.models import Max, QuerySet
from django.utils import timezone

from engine.models import Run

__all__ = ["RunRow", "run_rows", "duration_text"]


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
    """The page's runs (already sliced) with their end time, from the journal (an import keeps its times)."""
    now = timezone.now()
    rows = []
    for run in runs.annotate(last_at=Max("journal__at")):
        live = run.status in Run.LIVE
        last = getattr(run, "last_at", None) or run.updated_at
        ended = None if live else max(last, run.created_at)
        rows.append(RunRow(run, ended, duration_text(((ended or now) - run.created_at).total_seconds()), live))
    return rows
