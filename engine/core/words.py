"""Words a person reads, made one way everywhere: a duration, a pydantic validation error, an error value.

Each of these was written several times with small differences (a duration cut over to seconds at 1 s in one
place and at 10 s in another); one function each keeps every page, command and replay saying the same thing.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

__all__ = [
    "DOORS",
    "door_words",
    "clock_text",
    "brief",
    "duration_text",
    "validation_lines",
    "validation_text",
    "error_text",
    "exception_text",
]

#: (unit, how many ms it holds, the largest value shown in it before the next unit)
_UNITS = (("ms", 1.0, 1000.0), ("s", 1000.0, 60.0), ("min", 60_000.0, 120.0), ("h", 3_600_000.0, float("inf")))


def duration_text(ms: float | None) -> str:
    """A duration or latency in three significant figures, in the largest unit it fills: `0.4 ms`, `125 ms`,
    `1.33 s`, `12.5 s`, `2.5 min`, `3 h`; `—` for none. Seconds up to a minute, minutes up to two hours."""
    if ms is None:
        return "—"
    value = max(0.0, float(ms))
    for unit, size, limit in _UNITS:
        shown = float(f"{value / size:.3g}")
        if shown < limit:
            return f"{shown:g} {unit}"
    raise AssertionError("the last unit has no limit")


#: The doors an answer or a cancel comes in by, and their words: what the journal's `door` holds.
DOORS: dict[str, str] = {
    "console": "in the Console",
    "api": "through the API",
    "cli": "from the CLI",
    "mcp": "over MCP",
    "link": "by a one-tap link",
}


def door_words(door: str | None) -> str:
    """Which door an input came in by, in words: `through the API`; an unknown door by its name."""
    return DOORS.get(door or "", f"by {door}" if door else "by an unknown door")


def clock_text(seconds: float | None) -> str:
    """A moment (seconds since the epoch) as people read it, in UTC: `2026-12-02 07:15 UTC`; `—` for none."""
    if seconds is None:
        return "—"
    return dt.datetime.fromtimestamp(float(seconds), tz=dt.UTC).strftime("%Y-%m-%d %H:%M UTC")


def validation_lines(err: ValidationError, whole: str = "(input)") -> list[str]:
    """Each problem of a pydantic error, naming its field: `text: Input should be a valid string`; `whole` names
    the value itself when a problem is not about one field."""
    return [f"{'.'.join(str(p) for p in e['loc']) or whole}: {e['msg']}" for e in err.errors()]


def validation_text(err: ValidationError, whole: str = "(input)") -> str:
    """A pydantic error on one line (`validation_lines` joined)."""
    return "; ".join(validation_lines(err, whole))


def exception_text(err: BaseException) -> str:
    """An exception of the workflow's code in words: the statechart wraps a guard's or an action's error, so name
    the original."""
    cause = err.__cause__ if err.__cause__ is not None else err
    return f"{type(cause).__name__}: {cause}"


def error_text(error: Any) -> str:
    """An error value as a run records it (an Effect's or a child's error: a dict with a message or reason, an
    exception, a text, or any JSON) in words."""
    if isinstance(error, Mapping):
        for key in ("message", "reason"):
            if error.get(key):
                return str(error[key])
    if isinstance(error, BaseException):
        return exception_text(error)
    return error if isinstance(error, str) else json.dumps(error, default=str)


def brief(value: Any, width: int = 40, total: int = 160) -> str:
    """A value on one short line: `{notes: "## What's new…", count: 2}`; strings cut at `width` characters."""
    if isinstance(value, Mapping):
        text = "{" + ", ".join(f"{key}: {_short(item, width)}" for key, item in value.items()) + "}"
    else:
        text = _short(value, width)
    if len(text) <= total:
        return text
    return text[: total - 2] + "…}" if text.startswith("{") else text[: total - 1] + "…"


def _short(value: Any, width: int = 40) -> str:
    if isinstance(value, str):
        cut = value if len(value) <= width else value[:width] + "…"
        return json.dumps(cut, ensure_ascii=False)
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= width else text[:width] + "…"
