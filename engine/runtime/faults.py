"""Crash points, for the crash tests (tests/e2e/test_crash.py): the process dies where a real crash would hurt most.

`JR2_CRASH_AFTER_COMMIT=<journal kind>` in the environment kills the process right after a step that journaled an
entry of that kind is committed, before anyone is told: the run must come back from its journal alone. Nothing
here runs unless the variable is set.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterable

from engine.core.journal.entries import Entry

__all__ = ["CRASH_AFTER_COMMIT", "after_commit", "crash_now"]

#: The environment variable naming the journal kind after whose commit the process dies.
CRASH_AFTER_COMMIT = "JR2_CRASH_AFTER_COMMIT"


def after_commit(entries: Iterable[Entry]) -> None:
    """Called by the driver once a step's entries are committed: die if one is of the kind the variable names."""
    kind = os.environ.get(CRASH_AFTER_COMMIT, "")
    if kind and any(entry.kind == kind for entry in entries):
        crash_now()


def crash_now() -> None:
    """Die as a killed process does, with nothing flushed."""
    os.kill(os.getpid(), signal.SIGKILL)
