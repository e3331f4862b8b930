"""`jr2 replay`: a run's journal re-run against the workflow's Machine (engine/core/journal/replay.py does the work),
read from this project's database or with --url from a server's API; and `jr2 fork`: a run started from the
Session another had after one of its journal entries (through a server's API)."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from engine.cli.client import Client, CliError, one_line, parse_json
from engine.cli.commands.runs import run_argument, server_arguments
from engine.cli.local import database_name, run_by_prefix
from engine.cli.output import Output
from engine.runtime.loader import load_workflows
from engine.runtime.registry import reload_workflows

__all__ = ["replay_arguments", "fork_arguments", "replay", "fork"]

#: What to do when the database cannot be read.
UNREADABLE = "; `jr2 up` migrates it, or use --url to read a server's"


def replay_arguments(parser: ArgumentParser) -> None:
    run_argument(parser)
    parser.add_argument(
        "--against-current",
        action="store_true",
        help="replay even when the workflow's shape changed since the run was written",
    )
    parser.add_argument(
        "--workflows",
        metavar="DIR",
        help="the workflows folder to read the Machine from (default: settings.JR2_WORKFLOWS)",
    )
    parser.add_argument(
        "--url",
        help="read the run and its journal from this server's API instead of the database ($JR2_URL is not used here)",
    )
    parser.add_argument("--token", help="with --url: an API token (default: $JR2_TOKEN)")


def fork_arguments(parser: ArgumentParser) -> None:
    run_argument(parser)
    parser.add_argument("--step", type=int, required=True, help="the journal entry to fork after (see `jr2 replay`)")
    parser.add_argument(
        "--context", metavar="JSON", help="the fork's context, a JSON object (@FILE reads a file, - reads stdin)"
    )
    parser.add_argument("--gate", help="a Gate open at that step, to answer differently")
    parser.add_argument("--event", help="with --gate: the event to send it")
    parser.add_argument("--input", metavar="JSON", help="with --gate: the event's input, a JSON object (default {})")
    parser.add_argument(
        "--restart",
        metavar="AGENT",
        action="append",
        help="restart this Agent's open Turn from the fork's context (its prompt built again); repeatable",
    )
    parser.add_argument("--restart-all", action="store_true", help="restart every open Turn from the fork's context")
    server_arguments(parser)


def replay(
    out: Output,
    run: str,
    against_current: bool = False,
    workflows: str | None = None,
    url: str | None = None,
    token: str | None = None,
    **options: Any,
) -> None:
    """Re-run the run's journal against the workflow's current Machine: "same (N steps)", exit 0; the first
    divergence in words, exit 1; a run whose Machine changed shape is not replayed without --against-current
    (exit 1)."""
    from engine.core.journal.replay import replay as replay_journal

    record = _source_api(run, url, token) if url else _source_db(run)
    try:
        found = load_workflows(workflows) if workflows else reload_workflows()
    except (FileNotFoundError, NotADirectoryError) as err:
        raise CliError(f"jr2 replay: {err}") from err
    name, run_id = record["workflow"], record["id"]
    loaded = found.find(name)
    if loaded is None:
        raise CliError(
            f'jr2 replay: run {run_id} is a run of workflow "{name}", which is not in {found.folder} '
            f"(workflows: {', '.join(found.names()) or 'none'})"
        )
    if loaded.machine is None:
        raise CliError(f"jr2 replay: {loaded.message()}")
    machine = loaded.machine
    recorded = str(record.get("digest") or "")
    changed = recorded != machine.digest
    journal = record["journal"]
    shape = (
        f"its shape changed: the run's {recorded[:12]}, now {machine.digest[:12]}"
        if changed
        else f"the same shape {machine.digest[:12]}"
    )
    out.progress(
        f"jr2 replay: run {run_id} ({name}, {record.get('status')}, {len(journal)} journal entries) "
        f"against {loaded.path} ({shape})"
    )
    if changed and not against_current:
        out.line(
            f'run {run_id} was written under workflow "{name}" with shape {recorded[:12]}, but '
            f"{loaded.file} now has shape {machine.digest[:12]}: not replayed. Pass "
            "--against-current to replay it against the current Machine and see where it diverges"
        )
        raise SystemExit(1)
    try:
        report = replay_journal(machine, journal)
    except ValueError as err:
        raise CliError(f"jr2 replay: run {run_id}: {err}") from err
    out.line(report.message)
    if not report.same:
        raise SystemExit(1)


def _source_db(prefix: str) -> dict[str, Any]:
    from django.db import DatabaseError

    from engine.models import JournalEntry

    found = run_by_prefix(
        "replay", prefix, listed=lambda r: f"{r.id} ({r.workflow}, {r.status})", unreadable=UNREADABLE
    )
    try:
        journal = list(JournalEntry.objects.filter(run=found).order_by("seq").values("seq", "kind", "entry", "out"))
    except DatabaseError as err:
        raise CliError(
            f"jr2 replay: cannot read the runs in the database ({database_name()}): {one_line(str(err))}{UNREADABLE}"
        ) from err
    return {
        "id": found.id,
        "workflow": found.workflow,
        "status": found.status,
        "digest": found.digest,
        "journal": journal,
    }


def _source_api(prefix: str, url: str, token: str | None) -> dict[str, Any]:
    with Client.connect("replay", url, token) as api:
        run_id = api.resolve(prefix)
        body = api.get(f"/api/runs/{run_id}")
        journal: list[dict[str, Any]] = []
        while True:
            page = api.get(f"/api/runs/{run_id}/journal", after=journal[-1]["seq"] if journal else 0, limit=10000)
            entries = page.get("entries") or []
            journal.extend(entries)
            if not entries or journal[-1]["seq"] >= int(page.get("seq") or 0):
                break
    return {
        "id": run_id,
        "workflow": body["workflow"],
        "status": body.get("status"),
        "digest": body.get("digest"),
        "journal": journal,
    }


def fork(
    out: Output,
    run: str,
    step: int,
    context: str | None = None,
    gate: str | None = None,
    event: str | None = None,
    input: str | None = None,
    restart: list[str] | None = None,
    restart_all: bool = False,
    url: str | None = None,
    token: str | None = None,
    **options: Any,
) -> None:
    """POST /api/runs/<id>/fork; prints the new run as JSON."""
    body: dict[str, Any] = {"step": step}
    if context is not None:
        body["context"] = parse_json("fork", "--context", context)
        if not isinstance(body["context"], dict):
            raise CliError(f"jr2 fork: --context must be a JSON object; got {type(body['context']).__name__}")
    if (gate is None) != (event is None):
        raise CliError("jr2 fork: --gate and --event go together (the Gate to answer and the event to send it)")
    if gate is not None:
        params = parse_json("fork", "--input", input, default={})
        if not isinstance(params, dict):
            raise CliError(f"jr2 fork: --input must be a JSON object; got {type(params).__name__}")
        body["answer"] = {"gate": gate, "event": event, "input": params}
    elif input is not None:
        raise CliError("jr2 fork: --input is the input of a Gate answer: give --gate and --event too")
    if restart and restart_all:
        raise CliError("jr2 fork: give --restart AGENT or --restart-all, not both")
    if restart_all or restart:
        body["restart_turns"] = True if restart_all else list(restart or [])
    with Client.connect("fork", url, token) as api:
        run_id = api.resolve(run)
        out.json(api.post(f"/api/runs/{run_id}/fork", body))
