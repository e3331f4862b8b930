"""A guard in the words its author wrote: a named guard by its name and params, an inline lambda by its own source
text, shortened. The graph, the state details, Mermaid export and the CLI all say a guard this one way.

    guard_text("ready")                                    # "ready"
    guard_text({"type": "over", "params": {"n": 2}})       # "over(n=2)"
    guard_text(lambda context: context["replies"] > 0)     # 'context["replies"] > 0'
    guard_text(and_(["a", not_("b")]))                     # "and(a, not(b))"

A lambda's text is read from its source file (`inspect`), parsed, and the body of the lambda whose code it is is
cut out as written (on one line); a lambda whose source cannot be read is `guard`.
"""

from __future__ import annotations

import ast
import functools
import inspect
import json
import textwrap
import types
from typing import Any

from engine.core.routes import SeatGuard, SentBy

__all__ = ["guard_text", "lambda_text", "MAX_TEXT", "ANONYMOUS"]

MAX_TEXT = 48  # characters of a lambda's body shown; longer ones end in "…"
ANONYMOUS = "guard"  # a lambda whose source is not there to read


def guard_text(guard: Any) -> str | None:
    """A guard as the author wrote it, None for no guard. The seat guard jr2 puts on every listed event's
    transitions is not the author's, so it is looked through."""
    while isinstance(guard, SeatGuard):
        guard = guard.guard
    if guard is None:
        return None
    if isinstance(guard, str):
        return guard
    if isinstance(guard, dict):
        name = str(guard.get("type") or ANONYMOUS)
        params = guard.get("params")
        return name if params is None else f"{name}({_params(params)})"
    if isinstance(guard, SentBy):
        return f"sent_by({guard.party_id})"
    kind = getattr(guard, "type", None)
    if kind in ("xstate.and", "xstate.or"):
        inner = ", ".join(guard_text(g) or ANONYMOUS for g in getattr(guard, "guards", ()))
        return f"{kind.removeprefix('xstate.')}({inner})"
    if kind == "xstate.not":
        return f"not({guard_text(getattr(guard, 'guard', None)) or ANONYMOUS})"
    if kind == "xstate.stateIn":
        return f"in({getattr(guard, 'state_value', '?')})"
    if isinstance(guard, types.LambdaType) and guard.__name__ == "<lambda>":
        return lambda_text(guard) or ANONYMOUS
    named: Any = getattr(guard, "__name__", None)
    return named if isinstance(named, str) else type(guard).__name__


def _params(params: Any) -> str:
    """`n=2, who="desk"`: each param's value as JSON (short and unambiguous); a callable as its name."""
    if callable(params):
        return lambda_text(params) or str(getattr(params, "__name__", "params"))
    if not isinstance(params, dict):
        return _value(params)
    return ", ".join(f"{key}={_value(value)}" for key, value in params.items())


def _value(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        return repr(value)


def lambda_text(fn: Any) -> str | None:
    """The body of a lambda, on one line and shortened to MAX_TEXT characters; None when its source is not
    there (a lambda made by `eval`, a file gone since) or more than one lambda of the same arguments share
    its line."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return None
    text = _body(code)
    if text is None:
        return None
    return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 1].rstrip() + "…"


@functools.lru_cache(maxsize=1024)
def _body(code: types.CodeType) -> str | None:
    try:
        lines, first = inspect.getsourcelines(code)
    except (OSError, TypeError):
        return None
    source = textwrap.dedent("".join(lines))
    parsed = _parse(source)
    if parsed is None:
        return None
    tree, text = parsed
    args = code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]
    found = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Lambda)
        and node.lineno + first - 1 == code.co_firstlineno
        and tuple(a.arg for a in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]) == args
    ]
    bodies = {" ".join((ast.get_source_segment(text, node.body) or "").split()) for node in found}
    if len(bodies) != 1:
        return None
    return bodies.pop() or None


def _parse(source: str) -> tuple[ast.AST, str] | None:
    """The source lines `inspect` gives for a lambda are its statement's, which may be a fragment (a dict entry
    ending in a comma, a line inside brackets): try them as they are, then as the inside of brackets (opened on
    the first line, so that line numbers stay)."""
    for attempt in (source, "(" + source + "\n)", "[" + source + "\n]", "{" + source + "\n}"):
        try:
            return ast.parse(attempt), attempt
        except SyntaxError:
            continue
    return None
