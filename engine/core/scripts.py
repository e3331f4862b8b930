"""Scripted models: deterministic stand-ins for a model, for tests and the offline demo.

    @engine.scripted("notes.writer")
    def write(turn):                      # turn: engine.runtime.providers.base.TurnView
        if not turn.answers:
            return ("ask", {"question": "Which tone?"})
        return ("done", {"notes": "..."})    # or None to end the reply without a pick

A script is used by `agent(model="script/<name>")`, and also, when its name is `<workflow>.<agent slot>`, as the
offline stand-in for that Agent when its real provider has no API key. Register scripts in any module of the
workflows folder; modules whose names start with `_` are imported for such registrations but are not workflows.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["Script", "scripted", "script_named", "scripts"]

Script = Callable[[Any], "tuple[str, dict[str, Any]] | None"]

_SCRIPTS: dict[str, Script] = {}


def scripted(name: str) -> Callable[[Script], Script]:
    """Register `fn` as the scripted model `script/<name>`. Registering a name again replaces it (a reload)."""
    if not isinstance(name, str) or not name.strip() or "/" in name:
        raise ValueError(f"scripted(name) takes a non-empty name without '/'; got {name!r}")

    def register(fn: Script) -> Script:
        if not callable(fn):
            raise TypeError(f"@scripted({name!r}) decorates a function of the Turn; got {fn!r}")
        _SCRIPTS[name] = fn
        return fn

    return register


def script_named(name: str) -> Script | None:
    return _SCRIPTS.get(name)


def scripts() -> dict[str, Script]:
    """Every registered script, by name."""
    return dict(_SCRIPTS)
