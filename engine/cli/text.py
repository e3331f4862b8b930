"""What the command line prints about runs, from the API's JSON: status exit codes, state paths, the command that
answers a Gate, `jr2 status`'s view and `jr2 runs`' table. Pure functions, no I/O."""

from __future__ import annotations

import datetime as dt
import json
import shlex
from collections.abc import Mapping
from typing import Any

from engine.core.journal.replay import brief, state_paths

__all__ = [
    "EXIT_CODES",
    "LIVE",
    "exit_code",
    "final",
    "state_line",
    "example_input",
    "send_command",
    "gate_lines",
    "status_lines",
    "runs_table",
    "age",
]

#: `jr2 run` and `jr2 status` exit with the run's status: done 0, failed 1, cancelled 3, drifted 4; a live run
#: (running, waiting) 0. Usage and API errors exit 2.
EXIT_CODES = {"done": 0, "running": 0, "waiting": 0, "failed": 1, "cancelled": 3, "drifted": 4}
LIVE = ("running", "waiting")


def exit_code(status: str) -> int:
    return EXIT_CODES.get(status, 2)


def final(run: Mapping[str, Any]) -> dict[str, Any]:
    """The run's status JSON that `jr2 run` prints at the end."""
    return {
        "id": run.get("id"),
        "workflow": run.get("workflow"),
        "status": run.get("status"),
        "output": run.get("output"),
        "reason": run.get("reason") or "",
    }


def state_line(root: str, value: Any) -> str:
    """The state value as dotted paths from the Machine's root, one per active region."""
    return ", ".join(state_paths(root, value)) if value is not None else "(none)"


def example_input(schema: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """An input to fill in, from an event's JSON schema: each required field (every field when none is required)
    with a placeholder of its type ("..." for text, "a|b" for a choice); None when the event takes no input."""
    properties = (schema or {}).get("properties") or {}
    if not properties:
        return None
    required = [name for name in (schema or {}).get("required", []) if name in properties] or list(properties)
    return {name: _placeholder(properties[name]) for name in required}


def _placeholder(prop: Mapping[str, Any]) -> Any:
    if "enum" in prop:
        return "|".join(str(v) for v in prop["enum"])
    if "const" in prop:
        return prop["const"]
    kind = prop.get("type")
    if kind is None and prop.get("anyOf"):
        kinds = [p.get("type") for p in prop["anyOf"] if isinstance(p, Mapping) and p.get("type") != "null"]
        kind = kinds[0] if kinds else None
    return {"string": "...", "integer": 0, "number": 0, "boolean": False, "array": [], "object": {}}.get(
        str(kind), "..."
    )


def send_command(run_id: str, gate: str, event: str, schema: Mapping[str, Any] | None) -> str:
    """The exact `jr2 send` command that answers a Gate with `event`, its input filled with placeholders."""
    parts = ["jr2", "send", run_id, "--gate", shlex.quote(gate), "--event", shlex.quote(event)]
    example = example_input(schema)
    if example is not None:
        parts += ["--input", shlex.quote(json.dumps(example, ensure_ascii=False))]
    return " ".join(parts)


def gate_lines(run_id: str, gate: Mapping[str, Any], opened: bool = True) -> list[str]:
    """An open Gate, what it shows (`meta`), and one `jr2 send` command per event it accepts."""
    meta = gate.get("meta") or {}
    shown = f" ({brief(meta, width=80, total=240)[1:-1]})" if meta else ""
    events = gate.get("events") or []
    head = f"Gate {gate.get('id')}{' is open' if opened else ''}{shown}"
    if not events:
        return [f"{head}; it accepts no event"]
    lines = [f"{head}; answer it with:"]
    for event in events:
        lines.append("  " + send_command(run_id, str(gate.get("id")), str(event.get("type")), event.get("schema")))
    return lines


def status_lines(run: Mapping[str, Any], root: str) -> list[str]:
    """`jr2 status`: the run's status, state, open Gates with their commands, Turns with their Allowed picks,
    running Effects, and its output or reason."""
    run_id = str(run.get("id"))
    scripted = " (scripted Agents)" if run.get("scripted") else ""
    lines = [
        f"run {run_id}: workflow {run.get('workflow')}, {run.get('status')}{scripted}",
        f"  started {run.get('created_at')}, last step {run.get('seq')} at {run.get('updated_at')}",
        f"state: {state_line(root, run.get('value'))}",
    ]
    for gate in run.get("gates") or []:
        lines.extend(gate_lines(run_id, gate, opened=True))
    for turn in run.get("turns") or []:
        outstanding = turn.get("outstanding")
        if outstanding:
            doing = f"waiting on its pick {outstanding.get('event')} ({outstanding.get('pick')})"
        else:
            doing = "allowed picks: " + (", ".join(turn.get("allowed") or []) or "none now")
        model = f" [{turn.get('model')}]" if turn.get("model") else ""
        lines.append(f"Turn {turn.get('id')}: {turn.get('agent')} in {turn.get('state')}{model}: {doing}")
    for effect in run.get("effects") or []:
        lines.append(f"Effect {effect.get('id')}: {effect.get('slot')} ({effect.get('kind')}) running")
    if run.get("next_due") is not None and run.get("status") in LIVE:
        due = dt.datetime.fromtimestamp(float(run["next_due"]) / 1000, tz=dt.UTC)
        lines.append(f"next timer due at {due.isoformat(timespec='seconds')}")
    if run.get("output") is not None:
        lines.append("output: " + json.dumps(run["output"], ensure_ascii=False))
    if run.get("reason"):
        lines.append(f"reason: {run['reason']}")
    return lines


def runs_table(page: Mapping[str, Any], now: dt.datetime | None = None) -> list[str]:
    """`jr2 runs`: id, workflow, status, open Gates and age, newest first; the page when there are several."""
    rows = page.get("results") or []
    if not rows:
        return ["no runs" + (" on this page" if page.get("count") else "")]
    now = now or dt.datetime.now(dt.UTC)
    table = [("ID", "WORKFLOW", "STATUS", "GATES", "AGE")]
    table += [
        (
            str(r.get("id")),
            str(r.get("workflow")),
            str(r.get("status")),
            str(r.get("open_gates", 0)),
            age(str(r.get("created_at")), now),
        )
        for r in rows
    ]
    widths = [max(len(row[i]) for row in table) for i in range(5)]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in table]
    if page.get("pages", 1) > 1:
        lines.append(f"page {page.get('page')} of {page.get('pages')} ({page.get('count')} runs); --page N for another")
    return lines


def age(created_at: str, now: dt.datetime) -> str:
    """How long ago: 42s, 5m, 3h, 2d."""
    try:
        then = dt.datetime.fromisoformat(created_at)
    except ValueError:
        return "?"
    if then.tzinfo is None:
        then = then.replace(tzinfo=dt.UTC)
    seconds = max(0, int((now - then).total_seconds()))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"
