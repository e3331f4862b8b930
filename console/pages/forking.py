"""Forking a run from a step: the Session as it was after the step, rebuilt from the journal (console/pages/
replaying.py), and the fork form's inputs read back. The host makes the fork (`Host.fork_run`)."""

from __future__ import annotations

import json
from typing import Any

from console.pages.replaying import session_at
from console.pages.runview import machine_of
from engine.core.journal.replay import describe
from engine.core.session import SessionError
from engine.models import JournalEntry, Run

__all__ = ["fork_page", "fork_inputs"]


def fork_page(run: Run, step_text: str) -> dict[str, Any]:
    """The run as it was after step `step_text` (by default its last; out of range is the nearest step), with what
    the fork form shows: its context to edit and the Gates open then; `errors` say why it cannot be forked."""
    last = run.seq
    try:
        step = min(max(int(step_text), 1), last) if step_text else last
    except ValueError:
        step = last
    entry = JournalEntry.objects.filter(run=run, seq=step).values_list("entry", flat=True).first() or {}
    page: dict[str, Any] = {
        "run": run,
        "step": step,
        "last": last,
        "words": describe(entry),
        "errors": [],
        "gates": [],
        "context_text": "",
        "answer": "",
        "answer_input": "{}",
        "open_turns": [],
    }
    machine = machine_of(run.workflow)
    if machine is None or machine.digest != run.digest:
        page["errors"].append(
            f'the workflow "{run.workflow}" '
            + ("does not load here" if machine is None else "changed shape since this run was written")
            + ", so the run cannot be forked"
        )
        return page
    try:
        session = session_at(run, machine, step)
    except SessionError as err:
        page["errors"].append(f"this step cannot be rebuilt on the workflow: {err}")
        return page
    page.update(
        status=session.status,
        active=session.active_paths,
        original_context=session.context,
        context_text=json.dumps(session.context, indent=2, ensure_ascii=False, sort_keys=True, default=str),
        gates=[
            {
                "id": gate.id,
                "path": gate.path,
                "events": [
                    {
                        "value": f"{gate.id}|{event}",
                        "event": event,
                        "fields": ", ".join(machine.events[event].input.model_fields)
                        if event in machine.events
                        else "",
                    }
                    for event in gate.accepts
                ],
            }
            for gate in session.gates
        ],
        # A Turn open after the step keeps the prompt it was given, built from the context before any edit.
        open_turns=[{"id": turn.id, "agent": turn.agent, "path": turn.path} for turn in session.turns],
    )
    if session.status != "active":
        page["errors"].append(f"after step {step} the run had already ended ({session.status}); pick an earlier step")
    return page


def fork_inputs(post: Any, page: dict[str, Any], errors: list[str]) -> tuple[Any, Any]:
    """The edited context (None when unchanged) and the Gate answer (None when none was chosen), or the reasons
    they are not valid, in `errors`."""
    context = None
    try:
        parsed = json.loads(post.get("context", "") or "null")
    except ValueError as err:
        errors.append(f"the context is not JSON: {err}")
    else:
        if parsed is not None and parsed != page.get("original_context"):
            context = parsed
    answer = None
    chosen = post.get("answer", "")
    if chosen:
        gate, _, event = chosen.partition("|")
        try:
            params = json.loads(post.get("answer_input", "") or "{}")
        except ValueError as err:
            errors.append(f"the Gate answer's input is not JSON: {err}")
        else:
            if not isinstance(params, dict):
                errors.append(f"the Gate answer's input must be a JSON object; got {type(params).__name__}")
            else:
                answer = (gate, event, params)
    return context, answer
