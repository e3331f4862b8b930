"""Calling user callables with only the keyword arguments they name.

Config callables (`lambda context: ...`, `def act(event, params): ...`) declare what they read; we inspect each
signature once and pass exactly those names. This keeps workflow code short and lets the engine add arguments later.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

__all__ = ["call_with", "accepts"]

_ALL = object()
_plans: dict[Any, Any] = {}


def _plan(fn: Callable[..., Any]) -> Any:
    try:
        return _plans[fn]
    except (KeyError, TypeError):
        pass
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        plan: Any = _ALL
    else:
        names: list[str] = []
        plan = None
        for p in sig.parameters.values():
            if p.kind is p.VAR_KEYWORD:
                plan = _ALL
                break
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
                names.append(p.name)
            elif p.kind is p.POSITIONAL_ONLY:
                raise TypeError(
                    f"{getattr(fn, '__qualname__', fn)!r} takes positional-only parameter {p.name!r}; the engine "
                    "passes arguments by keyword (context, event, input, params, self, ...)"
                )
        if plan is None:
            plan = tuple(names)
    try:
        _plans[fn] = plan
    except TypeError:
        pass
    return plan


def call_with(fn: Callable[..., Any], **available: Any) -> Any:
    """Call `fn` with the subset of `available` that its signature names."""
    plan = _plan(fn)
    if plan is _ALL:
        return fn(**available)
    kwargs = {}
    for name in plan:
        if name in available:
            kwargs[name] = available[name]
    return fn(**kwargs)


def accepts(fn: Callable[..., Any], name: str) -> bool:
    """Whether `fn` reads the argument `name` (used to tell which guards read the event)."""
    plan = _plan(fn)
    return plan is _ALL or name in plan
