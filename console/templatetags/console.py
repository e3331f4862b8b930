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
