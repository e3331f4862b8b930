"""A small thread-safe least-recently-used cache, for what the Console draws again and again: the graphs, their
lit indexes, a run page's rendered regions, a timeline's journal walks.

    drawings: LRU[str, str] = LRU(128)
    svg = drawings.get(key)                  # None when absent; a hit becomes the newest
    svg = drawings.keep(key, drawn)          # the kept value (an equal key stored meanwhile wins), oldest dropped
    walk = walks.pop(key)                    # taken out while it is worked on, put back with `put`

Pages are drawn from Django's sync threads (sync_to_async), so every step holds one lock; the values are built
outside it. `functools.lru_cache` does not fit these: their keys are not the call's arguments (a render is kept by
commit time and viewer kind, a drawing by its DOT's hash) and some entries are taken out and put back.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Generic, TypeVar

__all__ = ["LRU"]

K = TypeVar("K")
V = TypeVar("V")


class LRU(Generic[K, V]):
    """At most `size` entries (a size changed later applies at the next store); the oldest used goes first."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        with self._lock:
            found = self._items.get(key)
            if found is not None:
                self._items.move_to_end(key)
            return found

    def put(self, key: K, value: V) -> V:
        """Store `value` (replacing what `key` held) as the newest entry."""
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            self._trim()
        return value

    def keep(self, key: K, value: V) -> V:
        """Store `value` unless `key` holds one already (a concurrent build of the same thing): either way, the
        stored one, so every caller shares one object."""
        with self._lock:
            kept = self._items.setdefault(key, value)
            self._items.move_to_end(key)
            self._trim()
            return kept

    def pop(self, key: K) -> V | None:
        with self._lock:
            return self._items.pop(key, None)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return key in self._items

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def _trim(self) -> None:
        while len(self._items) > self.size:
            self._items.popitem(last=False)
