"""Runs search: filters read from a URL's query (the Console's runs page and the API's runs list share them), each a
database query over the records the runtime writes with every step (engine/runtime/index.py), never a scan of the
rows a page has loaded.

    ?workflow=notes&status=waiting&event=reply&not_agent=triager&text=login&after=2026-01-31

Each filter takes comma-separated values and matches a run that has any of them; its `not_` twin drops the runs
that have any of them. Different filters all apply. `text` is one phrase (commas included), matched case-
insensitively in the door input's and the output's values; `after` and `before` bound the start time (ISO dates or
times; without a zone, the server's). A state is named as the run pages show it (`notes.writing.asking`) or below
its Machine (`writing.asking`); a workflow or state no Workflow has and no run had is an error in words
(engine/web/search_names.py).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Q, QuerySet
from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime

from engine.models import GateRecord, Run, RunMark, RunText
from engine.web.search_names import STATE_FILTERS, state_match, unknown_names

__all__ = ["FILTERS", "Search", "parse"]

#: Each filter and what it matches, in the order the Console shows them.
FILTERS = {
    "workflow": "workflow",
    "status": "status",
    "in": "is in state",
    "passed": "passed through state",
    "event": "took event",
    "agent": "had a Turn of Agent",
    "gate": "waits at Gate",
    "text": "input or output contains",
}
TIMES = ("after", "before")
MAX_VALUES = 50
MAX_LENGTH = 300


@dataclass
class Search:
    """Parsed filters (name -> values, `not_<name>` for exclusions), the time bounds, and what was wrong."""

    values: dict[str, list[str]] = field(default_factory=dict)
    after: dt.datetime | None = None
    before: dt.datetime | None = None
    errors: list[str] = field(default_factory=list)

    @property
    def active(self) -> bool:
        return bool(self.values or self.after or self.before or self.errors)

    def apply(self, runs: QuerySet[Run]) -> QuerySet[Run]:
        """The runs that pass every filter (a search with errors matches none: nothing is guessed)."""
        if self.errors:
            return runs.none()
        for key, values in self.values.items():
            name = key.removeprefix("not_")
            match = _match(name, values)
            runs = runs.exclude(match) if key.startswith("not_") else runs.filter(match)
        if self.after is not None:
            runs = runs.filter(created_at__gte=self.after)
        if self.before is not None:
            runs = runs.filter(created_at__lt=self.before)
        return runs


def _match(name: str, values: list[str]) -> Q:
    if name == "workflow":
        return Q(workflow__in=values)
    if name == "status":
        return Q(status__in=values)
    if name == "gate":
        return Q(
            id__in=GateRecord.objects.filter(gate__in=values, closed_at=None).values("run_id"), status__in=Run.LIVE
        )
    if name == "text":
        needle = values[0].casefold()
        return Q(id__in=RunText.objects.filter(Q(input__contains=needle) | Q(output__contains=needle)).values("run_id"))
    if name in STATE_FILTERS:
        return state_match(name, values)
    return Q(id__in=RunMark.objects.filter(kind=name, name__in=values).values("run_id"))


def parse(params: Mapping[str, Any]) -> Search:
    """The filters of a query (a QueryDict or a plain mapping); each error names the parameter and the value."""
    search = Search()
    for name in FILTERS:
        for key in (name, f"not_{name}"):
            raw = str(params.get(key) or "").strip()
            if not raw:
                continue
            values = [raw] if name == "text" else list(dict.fromkeys(v.strip() for v in raw.split(",") if v.strip()))
            if len(values) > MAX_VALUES:
                search.errors.append(f"{key}: at most {MAX_VALUES} values, got {len(values)}")
                continue
            long = [v for v in values if len(v) > MAX_LENGTH]
            if long:
                search.errors.append(f"{key}: a value is longer than {MAX_LENGTH} characters ({long[0][:40]}…)")
                continue
            if name == "status":
                unknown = [v for v in values if v not in Run.Status.values]
                if unknown:
                    search.errors.append(
                        f"{key}: unknown status {', '.join(unknown)} (statuses: {', '.join(Run.Status.values)})"
                    )
                    continue
            if values:
                search.values[key] = values
    for key in TIMES:
        raw = str(params.get(key) or "").strip()
        if raw:
            moment = _moment(raw)
            if moment is None:
                search.errors.append(
                    f'{key}: "{raw[:40]}" is not a date or time (write 2026-01-31 or 2026-01-31T14:30)'
                )
            else:
                setattr(search, key, moment)
    if search.after and search.before and search.after >= search.before:
        search.errors.append("after must be earlier than before")
    search.errors.extend(unknown_names(search.values))
    return search


def _moment(raw: str) -> dt.datetime | None:
    try:
        moment = parse_datetime(raw)
        if moment is None:
            day = parse_date(raw)
            moment = dt.datetime.combine(day, dt.time()) if day is not None else None
    except ValueError:
        return None
    if moment is not None and timezone.is_naive(moment):
        moment = timezone.make_aware(moment)
    return moment
