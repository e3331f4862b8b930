"""A run's trace and span ids, derived from the run and its journal, never drawn at random: a run taken over by
another worker, or resumed after a crash, goes on in the same trace, and a span emitted twice (the step before a
crash, told again after) keeps its id, so a tracing tool keeps one copy."""

from __future__ import annotations

import hashlib

__all__ = ["trace_id", "span_id"]


def trace_id(run_id: str) -> int:
    """The 128-bit trace id of a run."""
    return _nonzero(hashlib.sha256(f"jr2 trace\0{run_id}".encode()).digest()[:16])


def span_id(run_id: str, key: str) -> int:
    """The 64-bit id of a run's span named by `key` (e.g. `run`, `turn turn-3`, `state notes.writing @1`)."""
    return _nonzero(hashlib.sha256(f"jr2 span\0{run_id}\0{key}".encode()).digest()[:8])


def _nonzero(digest: bytes) -> int:
    value = int.from_bytes(digest, "big")
    return value or 1
