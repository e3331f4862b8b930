"""The workflows this process serves, loaded once and shared: the host drives runs of these very Machines and the
API and Console describe them, so all of them agree on one import of the workflows folder."""

from __future__ import annotations

import threading

from engine.runtime.loader import Workflows, load_workflows, workflows_folder

__all__ = ["workflows", "reload_workflows"]

_loaded: Workflows | None = None
_lock = threading.Lock()


def workflows() -> Workflows:
    """The workflows folder as first loaded by this process (loaded again only if the configured folder is another
    one, as in tests that point JR2_WORKFLOWS elsewhere)."""
    global _loaded
    with _lock:
        if _loaded is None or _loaded.folder != workflows_folder():
            _loaded = load_workflows()
        return _loaded


def reload_workflows() -> Workflows:
    """Load the folder again (tests, or after files changed); runs already hosted keep their Machines."""
    global _loaded
    with _lock:
        _loaded = load_workflows()
        return _loaded
