"""What every benchmark does at its end: keep its results as JSON and say which targets it missed."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["finish"]


def finish(results: dict[str, Any], path: Path, missed: Sequence[str] = (), strict: bool = False) -> int:
    """Write `results` to `path` (JSON), name the missed targets on stderr, and give the exit code: 1 only when
    a target was missed under --strict."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=2, default=str))
    if missed:
        print(f"\nmissed target: {', '.join(missed)}", file=sys.stderr)
        return 1 if strict else 0
    return 0
