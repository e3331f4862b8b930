"""Who may answer an open Gate now, checked the same way at every door (the API, the Console's forms, the CLI
through the API): its assignment (engine/runtime/assignment.py) and its claim (engine/runtime/claims.py), read
from the run's committed view. The run's driver checks the claim again when the answer arrives, so an answer that
raced a claim is still refused.

    refusal = answer_refusal(user, run.view, "review")   # None, or (403 | 409, words naming whom or who)
    door_of(request)                                     # "cli" for jr2's own client, else "api"
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from django.http import HttpRequest

from engine.core.words import clock_text
from engine.runtime.assignment import refusal
from engine.runtime.view import RunView

__all__ = ["answer_refusal", "reads_groups", "claim_refusal", "door_of", "is_operator", "OPERATOR_PERMISSION"]

#: Who may break another person's claim: the operators' permission (the group "operators" has it).
OPERATOR_PERMISSION = "engine.cancel_run"


def is_operator(user: Any) -> bool:
    return bool(user.has_perm(OPERATOR_PERMISSION))


def answer_refusal(user: Any, view: Mapping[str, Any] | None, gate_id: str) -> tuple[int, str] | None:
    """None when `user` (who may answer Gates) may answer the open Gate now; else the status and its words: 403
    naming whom it is assigned to, or 409 naming who holds its claim and until when. A Gate that is not open is
    for the caller's own 404."""
    run_view = RunView.of(view)
    gate = run_view.gate(gate_id)
    if gate is None:
        return None
    words = refusal(user, gate)
    if words is not None:
        return 403, words
    return claim_refusal(user, run_view, gate_id)


def reads_groups(user: Any, view: Mapping[str, Any] | None, gate_id: str) -> bool:
    """Whether `answer_refusal` reads the database for this Gate (the user's groups, for its assignment): else it
    decides from the view alone, and may run on the event loop."""
    gate = RunView.of(view).gate(gate_id)
    return gate is not None and gate.assign is not None and not getattr(user, "is_superuser", False)


def claim_refusal(user: Any, run_view: RunView, gate_id: str) -> tuple[int, str] | None:
    """409 when someone other than `user` holds the Gate's claim now."""
    held = run_view.claim(gate_id, time.time())
    if held is None or held.by == user.get_username():
        return None
    return 409, (
        f'Gate "{gate_id}" is claimed by {held.by} until {clock_text(held.until)}; only they may answer it until '
        "then (an operator may break the claim)"
    )


def door_of(request: HttpRequest) -> str:
    """Which door an API call came in by: `mcp` for a call an MCP server made (engine/web/mcp/api_calls.py marks
    it), `cli` for jr2's own command line (its User-Agent), else `api`."""
    marked = getattr(request, "jr2_door", None)
    if isinstance(marked, str):
        return marked
    agent = request.headers.get("User-Agent", "")
    return "cli" if agent.startswith("jr2-cli") else "api"
