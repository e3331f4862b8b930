"""The NUL character (U+0000) in a run's data.

Python and SQLite hold it in text; PostgreSQL holds it neither in `text` nor in `jsonb`. So that a run is written
the same on both, and nothing from outside can make a commit fail on one of them:

- what a party sends (a run's door, a pick's or a Gate answer's input) is refused when any of its text or keys
  holds it, with the place named, like any other invalid input (`nul_at`);
- text the runtime takes from the world (a model's reply, an Effect's result) has it replaced by U+FFFD, the
  replacement character, as undecodable bytes are (`without_nul`).
"""

from __future__ import annotations

from typing import Any

__all__ = ["NUL", "NUL_REFUSED", "nul_at", "without_nul"]

NUL = "\x00"
#: Why such an input is refused, in words.
NUL_REFUSED = "text may not contain the NUL character (\\u0000)"


def nul_at(value: Any, loc: tuple[str | int, ...] = ()) -> tuple[str | int, ...] | None:
    """Where in a JSON-like value the first text holding NUL is (a key counts as its value's place), or None."""
    if isinstance(value, str):
        return loc if NUL in value else None
    if isinstance(value, dict):
        for key, item in value.items():
            here = (*loc, key if isinstance(key, (str, int)) else str(key))
            if isinstance(key, str) and NUL in key:
                return here
            found = nul_at(item, here)
            if found is not None:
                return found
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            found = nul_at(item, (*loc, index))
            if found is not None:
                return found
    return None


def without_nul(value: Any) -> Any:
    """`value` with NUL replaced by U+FFFD in every text and key; the same object when it holds none."""
    if nul_at(value) is None:
        return value
    if isinstance(value, str):
        return value.replace(NUL, "\ufffd")
    if isinstance(value, dict):
        return {without_nul(k): without_nul(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return tuple(without_nul(v) for v in value)
    return [without_nul(v) for v in value]
