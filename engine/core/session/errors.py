"""The Session's one exception."""

from __future__ import annotations

__all__ = ["SessionError"]


class SessionError(Exception):
    """A journal that does not replay, or a saved Session that does not restore: the entry and what differed."""
