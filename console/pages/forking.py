"""Forking a run from a step: the Session as it was after the step, rebuilt from the journal (console/pages/
replaying.py), and the fork form's inputs read back: the edited context, the open Turns to restart from it, and a
Gate answer typed into a form built from its event's schema (console/pages/forms.py), checked by the event's own
model. The host makes the fork (`Host.fork_run`)."""

from __future__ import annotations

import json
from typing import Any

from console.pages.forms import SchemaForm, check
from console.pages.replaying import session_at
from console.pages.runview import machine_of
from engine.core.journal.replay import describe
from engine.core.session import SessionError
from engine.models import JournalEntry, Run

__all__ = ["fork_page", "fork_inputs"]


def fork_page(run: Run, step_text: str, data: Any = None) -> dict[str, Any]:
    """The run as it was after step `step_text` (by default its last; out of range is the nearest step), with what
    the fork form shows: its context to edit, the open Turns it may restart, and the Gates open then, each event
    with its form (bound to `data`, a POST, when given); `errors` say why it cannot be forked."""
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
        "open_turns": [],
        "restart": [],
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
                "events": [_event_choice(machine, gate.id, event, data) for event in gate.accepts],
            }
            for gate in session.gates
        ],
        # A Turn open after the step keeps the prompt it was given, built from the context before any edit, unless
        # the fork restarts it (one with an outstanding pick cannot be: its answer belongs to its conversation).
        open_turns=[
            {
                "id": turn.id,
                "agent": turn.agent,
                "path": turn.path,
                "outstanding": turn.outstanding.event if turn.outstanding is not None else "",
            }
            for turn in session.turns
        ],
    )
    if session.status != "active":
        page["errors"].append(f"after step {step} the run had already ended ({session.status}); pick an earlier step")
    return page


def _event_choice(machine: Any, gate: str, event: str, data: Any) -> dict[str, Any]:
    """One event a Gate open after the step accepts, as the fork form offers it: its choice and its form, whose
    inputs are named `<gate>.<event>-<field>` so every event's form can sit on the one page."""
    definition = machine.gate_event(gate, event)
    model = definition.input if definition is not None else None
    form = SchemaForm(
        model.model_json_schema() if model is not None else {},
        data,
        prefix=f"{gate}.{event}",
        auto_id="fork-%s",
        use_required_attribute=False,  # only the chosen event's form is read, so the others may stay empty
    )
    return {"value": f"{gate}|{event}", "gate": gate, "event": event, "form": form, "model": model}


def fork_inputs(post: Any, page: dict[str, Any], errors: list[str]) -> tuple[Any, Any, list[str]]:
    """The edited context (None when unchanged), the Gate answer (None when none was chosen) and the Agents whose
    open Turn restarts, or the reasons they are not valid, in `errors`."""
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
        choices = {e["value"]: e for gate in page.get("gates", ()) for e in gate["events"]}
        choice = choices.get(chosen)
        if choice is None:
            offered = ", ".join(v.replace("|", " → ") for v in choices) or "none"
            errors.append(f"no open Gate takes the answer {chosen!r} after this step (open: {offered})")
        else:
            params = check(choice["form"], choice["model"])
            if params is None:
                errors.append(
                    f'the answer "{choice["event"]}" to Gate "{choice["gate"]}" is refused: '
                    + _problems(choice["form"])
                )
            else:
                answer = (choice["gate"], choice["event"], params)
    restart = [str(name) for name in post.getlist("restart")] if hasattr(post, "getlist") else []
    return context, answer, restart


def _problems(form: SchemaForm) -> str:
    """A form's errors in one line, each at its field's name."""
    return "; ".join(
        f"{name}: {' '.join(messages)}" if name != "__all__" else " ".join(messages)
        for name, messages in form.errors.items()
    )
