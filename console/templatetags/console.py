"""Small template filters of the Console."""

from __future__ import annotations

import datetime as dt

from django import template
from django.utils import timezone
from django.utils.timesince import timesince

register = template.Library()


@register.filter
def ago(moment: dt.datetime | None) -> str:
    """ "just now" for the last minute, else Django's "3 minutes ago"."""
    if moment is None:
        return ""
    if timezone.now() - moment < dt.timedelta(minutes=1):
        return "just now"
    return f"{timesince(moment)} ago"


@register.filter
def waited(moment: dt.datetime | None) -> str:
    """How long something has waited: "under a minute", else Django's "3 minutes"."""
    if moment is None:
        return ""
    if timezone.now() - moment < dt.timedelta(minutes=1):
        return "under a minute"
    return timesince(moment)


def _due_moment(due: dt.datetime | float | int | None) -> dt.datetime | None:
    if isinstance(due, (int, float)) and not isinstance(due, bool):
        return dt.datetime.fromtimestamp(due / 1000, tz=dt.UTC)
    return due if isinstance(due, dt.datetime) else None


@register.filter
def due_text(due: dt.datetime | float | int | None) -> str:
    """A Gate's due time as words, counted from now: "due in 29:41", "due in 3 h 5 min", "overdue" (the timer has
    fired, the run moves on at its next step). static/console/due.js keeps it counting in the page."""
    moment = _due_moment(due)
    if moment is None:
        return ""
    left = int((moment - timezone.now()).total_seconds())
    if left <= 0:
        return "due now"
    hours, rest = divmod(left, 3600)
    minutes, seconds = divmod(rest, 60)
    if hours >= 24:
        return f"due in {hours // 24} d {hours % 24} h"
    if hours:
        return f"due in {hours} h {minutes} min"
    return f"due in {minutes}:{seconds:02d}"


@register.filter
def due_iso(due: dt.datetime | float | int | None) -> str:
    """The due time as ISO 8601, for `<time datetime>` (what due.js counts down to)."""
    moment = _due_moment(due)
    return moment.isoformat() if moment is not None else ""
