"""The audit trail: every Gate answer, claim, cancel, seat change and one-tap link use, newest first, filterable by
user, workflow and time. The Console's `/audit/` page, its CSV, `GET /api/audit` and `jr2 audit` all read it here.

    rows = audit(AuditFilter(user="ann", workflow="notes", since=..., until=...))   # [AuditRow, ...]
    csv_text(rows)

The records are read from where they are kept already: the journal (`gate`, `claim` and `cancel` entries carry who
and by which door) and the seats' rows (taken, given back). Another part adds its own records with
`add_source(fn)`: a function of an `AuditFilter` that returns `AuditRow`s (one-tap link uses are added so).
"""

from __future__ import annotations

import csv
import datetime as dt
import io
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from django.db.models import Q
from django.utils.dateparse import parse_date, parse_datetime

from engine.core.journal.entries import Entry, JournalError
from engine.models import GateLinkUse, JournalEntry, Seat

__all__ = ["AuditFilter", "AuditRow", "audit", "add_source", "csv_text", "read_filter", "LIMIT", "COLUMNS"]

#: The most rows one read returns (the newest).
LIMIT = 1000
COLUMNS = ("at", "user", "action", "workflow", "run", "target", "door", "detail")


@dataclass(frozen=True)
class AuditFilter:
    """Which records: by this user (username), of this workflow, at or after `since`, before `until`."""

    user: str = ""
    workflow: str = ""
    since: dt.datetime | None = None
    until: dt.datetime | None = None
    limit: int = LIMIT


@dataclass(frozen=True)
class AuditRow:
    """One thing a person did: when, who, what (answer, claim, release, break, cancel, seat taken, seat given back,
    link used), in which workflow and run, to which Gate or seat, by which door, and its words."""

    at: dt.datetime
    user: str
    action: str
    workflow: str
    run: str
    target: str
    door: str
    detail: str

    def to_json(self) -> dict[str, str]:
        return {name: self.at.isoformat() if name == "at" else str(getattr(self, name)) for name in COLUMNS}


Source = Callable[[AuditFilter], Iterable[AuditRow]]
_SOURCES: list[Source] = []


def add_source(source: Source) -> Source:
    """Add a kind of record to the trail (usable as a decorator); a source applies the filter itself."""
    if source not in _SOURCES:
        _SOURCES.append(source)
    return source


#: The query parameters a filter is read from.
PARAMETERS = ("user", "workflow", "since", "until")


def read_filter(params: Mapping[str, str]) -> tuple[AuditFilter, list[str]]:
    """A filter from a query (`since`/`until`: an ISO 8601 date or time, UTC unless it says), and the errors, each
    naming its parameter."""
    errors: list[str] = []
    moments: dict[str, dt.datetime | None] = {}
    for name in ("since", "until"):
        text = (params.get(name) or "").strip()
        moments[name] = None
        if not text:
            continue
        moment = parse_datetime(text)
        if moment is None and (day := parse_date(text)) is not None:
            moment = dt.datetime.combine(day, dt.time())
        if moment is None:
            errors.append(f"{name}: {text[:40]!r} is not a date or time (2026-12-02 or 2026-12-02T08:00)")
            continue
        moments[name] = moment if moment.tzinfo else moment.replace(tzinfo=dt.UTC)
    texts = {name: (params.get(name) or "").strip() for name in ("user", "workflow")}
    for name, text in texts.items():
        if len(text) > 200:
            errors.append(f"{name}: longer than 200 characters")
            texts[name] = ""
    return AuditFilter(texts["user"], texts["workflow"], moments["since"], moments["until"]), errors


def audit(which: AuditFilter) -> list[AuditRow]:
    """The records that match, newest first, at most `which.limit`."""
    rows = [row for source in _SOURCES for row in source(which)]
    rows.sort(key=lambda row: row.at, reverse=True)
    return rows[: which.limit]


def csv_text(rows: Iterable[AuditRow]) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(COLUMNS)
    for row in rows:
        data = row.to_json()
        writer.writerow([_cell(data[name]) for name in COLUMNS])
    return out.getvalue()


def _cell(text: str) -> str:
    """A cell a spreadsheet will not run as a formula (CSV injection)."""
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def _timed(rows: Q, which: AuditFilter, field: str) -> Q:
    if which.since is not None:
        rows &= Q(**{f"{field}__gte": which.since})
    if which.until is not None:
        rows &= Q(**{f"{field}__lt": which.until})
    return rows


@add_source
def _journal(which: AuditFilter) -> list[AuditRow]:
    """Gate answers, claims and cancels, from the journal."""
    where = _timed(Q(kind__in=("gate", "claim", "cancel")), which, "at")
    if which.user:
        where &= Q(entry__by=which.user)
    if which.workflow:
        where &= Q(run__workflow=which.workflow)
    out = []
    for row in JournalEntry.objects.filter(where).select_related("run").order_by("-at", "-id")[: which.limit]:
        data = row.entry
        try:
            words = Entry.from_json(data).describe()
        except JournalError:
            words = row.kind
        action = {"gate": "answer", "cancel": "cancel"}.get(row.kind) or str(data.get("action") or "claim")
        out.append(
            AuditRow(
                row.at,
                str(data.get("by") or ""),
                action,
                row.run.workflow,
                row.run_id,
                str(data.get("gate") or ""),
                str(data.get("door") or ""),
                words,
            )
        )
    return out


@add_source
def _seats(which: AuditFilter) -> list[AuditRow]:
    """Seats taken and given back."""
    where = Q()
    if which.user:
        where &= Q(user__username=which.user)
    if which.workflow:
        where &= Q(run__workflow=which.workflow)
    taken = _timed(Q(), which, "taken_at")
    given = _timed(Q(given_back_at__isnull=False), which, "given_back_at")
    out = []
    for seat in Seat.objects.filter(where & (taken | given)).select_related("run", "user")[: which.limit]:
        name = seat.user.get_username()
        moments = [("seat taken", seat.taken_at, "took")]
        if seat.given_back_at is not None:
            moments.append(("seat given back", seat.given_back_at, "gave back"))
        for action, at, verb in moments:
            if (which.since is None or at >= which.since) and (which.until is None or at < which.until):
                out.append(
                    AuditRow(
                        at,
                        name,
                        action,
                        seat.run.workflow,
                        seat.run_id,
                        seat.agent,
                        "console",
                        f"{name} {verb} the seat of {seat.agent}",
                    )
                )
    return out


@add_source
def _link_uses(which: AuditFilter) -> list[AuditRow]:
    """Every use of a one-tap link: opened, answered, or refused (then the link may be unknown)."""
    where = _timed(Q(), which, "at")
    if which.user:
        where &= Q(link__user__username=which.user)
    if which.workflow:
        where &= Q(link__record__workflow=which.workflow)
    out = []
    uses = GateLinkUse.objects.filter(where).select_related("link__user", "link__record").order_by("-at", "-id")
    for use in uses[: which.limit]:
        link = use.link
        name = link.user.get_username() if link is not None else ""
        record = link.record if link is not None else None
        gate = record.gate if record is not None else ""
        words = f"{name or 'someone'} {use.action} the one-tap link" + (f" of the Gate {gate}" if gate else "")
        if use.detail:
            words += f": {use.detail}"
        out.append(
            AuditRow(
                use.at,
                name,
                f"link {use.action}",
                record.workflow if record is not None else "",
                record.run_id if record is not None else "",
                gate,
                "link",
                words,
            )
        )
    return out
