"""What a model reads in a Turn (SPEC.md 4, "The Turn protocol with a model"), as pure text builders.

- The system prompt: the Agent's instructions, then a short fixed briefing about its seat, never about its task.
- The user message: the state's prompt, then the Allowed picks, last (models obey what they read last).
- Every answer to a pick, and every re-prompt, ends with the Allowed picks again.

The host sends these; the Session decides when (TurnStarted, PickAnswered, AllowedChanged, Reprompted).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable
from typing import Any

__all__ = [
    "BRIEFING",
    "WORKSPACE_BRIEFING",
    "system_prompt",
    "user_message",
    "allowed_line",
    "answer_message",
    "ended_message",
    "reprompt_message",
    "allowed_changed_message",
]

BRIEFING = (
    "You act only by calling tools. Each tool is an event of the workflow that runs you; a call is a pick, and the "
    "workflow decides what it does. Call one tool at a time and wait for its answer. Only the tools listed as "
    "allowed can be picked now; the list is given at the end of each message."
)


#: Added to the system prompt of an Agent with a workspace (the runtime adds it: the Session never sees workspaces).
WORKSPACE_BRIEFING = (
    "You also have a workspace: a folder of files for this run, with four more tools, workspace_list, "
    "workspace_read, workspace_search and workspace_write. They are not picks: they never move the workflow, and "
    "you may call them at any time in your Turn. Paths are relative to the top of the workspace."
)


def allowed_line(allowed: Iterable[str]) -> str:
    names = list(allowed)
    if not names:
        return "Allowed picks now: none. Wait: work you started is not finished."
    return "Allowed picks now: " + ", ".join(names) + "."


@functools.lru_cache(maxsize=256)
def system_prompt(instructions: str) -> str:
    """The Agent's instructions, then the fixed briefing about its seat: one string for every Turn of the same
    instructions (each waiting run's Turn held a copy of its own)."""
    return f"{instructions.rstrip()}\n\n{BRIEFING}"


def user_message(prompt: str, allowed: Iterable[str], notices: Iterable[Any] = ()) -> str:
    """The state's prompt (after any notices kept for this conversation), then the Allowed picks, last."""
    parts = [f"Notice from your earlier work: {_text(n)}" for n in notices]
    parts.append(prompt.rstrip())
    parts.append(allowed_line(allowed))
    return "\n\n".join(p for p in parts if p)


def answer_message(answer: Any, allowed: Iterable[str]) -> str:
    """The answer to a pick, then the Allowed picks read after its route."""
    body = "The pick was taken." if answer is None else _text(answer)
    return f"{body}\n\n{allowed_line(allowed)}"


def ended_message(answer: Any) -> str:
    """The answer to a pick that ended the Turn: nothing more is allowed in this Turn."""
    body = "The pick was taken." if answer is None else _text(answer)
    return f"{body}\n\nThis pick ended your Turn: the workflow decides the next step. Make no more calls."


def reprompt_message(allowed: Iterable[str]) -> str:
    """For a reply that ended without a pick while the state still waits."""
    return f"Your reply ended without a pick, and the workflow is still waiting for one.\n\n{allowed_line(allowed)}"


def allowed_changed_message(allowed: Iterable[str]) -> str:
    """When the Allowed picks change while the Agent works (a Gate, a timer, another party moved the Machine)."""
    return f"The workflow moved while you worked.\n\n{allowed_line(allowed)}"


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
