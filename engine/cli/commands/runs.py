"""`jr2 run`, `runs`, `status`, `send` and `cancel`: against a running server's API (engine/cli/client.py: `--url`
or $JR2_URL, `--token` or $JR2_TOKEN). Wherever a run is named, its id or 4 or more of its first characters will
do. `run` and `status` exit by the run's status (engine/cli/text.py)."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any
from urllib.parse import quote, urlencode

from engine.cli.client import DEFAULT_URL, Client, CliError, parse_json
from engine.cli.follow import Follower
from engine.cli.output import Output
from engine.cli.text import exit_code, final, runs_table, status_lines

__all__ = [
    "server_arguments",
    "run_argument",
    "run_arguments",
    "runs_arguments",
    "status_arguments",
    "send_arguments",
    "cancel_arguments",
    "run",
    "runs",
    "status",
    "send",
    "cancel",
    "exit_by",
    "root_of",
]


def server_arguments(parser: ArgumentParser) -> None:
    parser.add_argument("--url", help=f"the jr2 server (default: $JR2_URL, else {DEFAULT_URL})")
    parser.add_argument("--token", help="an API token from `jr2 token create` (default: $JR2_TOKEN)")


def run_argument(parser: ArgumentParser) -> None:
    parser.add_argument("run", help="the run's id, or 4 or more of its first characters")


def run_arguments(parser: ArgumentParser) -> None:
    parser.add_argument("workflow", help="the Workflow's name (its file name without .py)")
    parser.add_argument(
        "--input",
        metavar="JSON",
        help="the run's input, validated against the door (@FILE reads a file, - reads stdin)",
    )
    parser.add_argument(
        "--detach", action="store_true", help="print the created run as JSON and exit 0 instead of following it"
    )
    parser.add_argument(
        "--play",
        metavar="AGENT[,AGENT...]",
        action="append",
        help="hold these Agents' seats for the token's user from the start, to play them from an MCP client "
        "(/mcp/runs/<run>/seats/<agent>/) or the Console; no model Turn starts for them",
    )
    server_arguments(parser)


def runs_arguments(parser: ArgumentParser) -> None:
    parser.add_argument("--workflow", help="only this Workflow's runs")
    parser.add_argument("--status", help="only runs with this status (comma-separated: running,waiting)")
    parser.add_argument("--page", type=int, default=1, help="the page, 50 runs each, newest first (default 1)")
    parser.add_argument("--json", action="store_true", help="print the API's page as JSON")
    server_arguments(parser)


def status_arguments(parser: ArgumentParser) -> None:
    run_argument(parser)
    parser.add_argument("--json", action="store_true", help="print the API's body for the run as JSON")
    server_arguments(parser)


def send_arguments(parser: ArgumentParser) -> None:
    run_argument(parser)
    parser.add_argument("--gate", required=True, help="the open Gate's id (see `jr2 status <run>`)")
    parser.add_argument("--event", required=True, help="an event the Gate accepts")
    parser.add_argument(
        "--input",
        metavar="JSON",
        help="the event's input, a JSON object (@FILE reads a file, - reads stdin; default {})",
    )
    server_arguments(parser)


def cancel_arguments(parser: ArgumentParser) -> None:
    run_argument(parser)
    server_arguments(parser)


def run(
    out: Output,
    workflow: str,
    input: str | None = None,
    detach: bool = False,
    url: str | None = None,
    token: str | None = None,
    play: list[str] | None = None,
    **options: Any,
) -> None:
    """Start a run (POST /api/workflows/<name>/runs with the --input JSON as the body), then follow it to its
    end, or with --detach print the created run and exit 0. `--play writer` holds the writer's seat for the token's
    user from the start (`?play=writer`)."""
    body = parse_json("run", "--input", input, default={})
    agents = [a.strip() for part in play or () for a in part.split(",") if a.strip()]
    query = f"?{urlencode({'play': ','.join(agents)})}" if agents else ""
    run_id = ""
    try:
        with Client.connect("run", url, token) as api:
            created = api.post(f"/api/workflows/{quote(workflow, safe='')}/runs{query}", body)
            run_id = str(created["id"])
            for agent in agents:
                out.progress(
                    f"jr2 run: the seat of {agent} is yours; play it from an MCP client at "
                    f"{api.url}/mcp/runs/{run_id}/seats/{quote(agent, safe='')}/ or in the Console"
                )
            if detach:
                out.json(created)
                return
            out.progress(
                f"jr2 run: started run {run_id} of {workflow}; following it (Ctrl-C stops following, the run goes on)"
            )
            try:
                followed = Follower(api, run_id, root_of(api, workflow), out.progress).follow()
            except CliError as err:
                raise CliError(f"{err.message} (run {run_id} goes on: `jr2 status {run_id}`)") from err
    except KeyboardInterrupt:
        if run_id:
            out.progress(f"jr2 run: stopped following run {run_id}; it goes on. Look again with `jr2 status {run_id}`")
        else:
            out.progress("jr2 run: interrupted")
        raise SystemExit(130) from None
    out.json(final(followed))
    exit_by(str(followed.get("status")))


def runs(
    out: Output,
    workflow: str | None = None,
    status: str | None = None,
    page: int = 1,
    json: bool = False,
    url: str | None = None,
    token: str | None = None,
    **options: Any,
) -> None:
    with Client.connect("runs", url, token) as api:
        found = api.get("/api/runs", workflow=workflow, status=status, page=page)
    if json:
        out.json(found)
        return
    for line in runs_table(found):
        out.line(line)


def status(
    out: Output, run: str, json: bool = False, url: str | None = None, token: str | None = None, **options: Any
) -> None:
    with Client.connect("status", url, token) as api:
        run_id = api.resolve(run)
        body = api.get(f"/api/runs/{run_id}")
        root = "" if json else root_of(api, str(body.get("workflow")))
    if json:
        out.json(body)
    else:
        for line in status_lines(body, root):
            out.line(line)
    exit_by(str(body.get("status")))


def send(
    out: Output,
    run: str,
    gate: str,
    event: str,
    input: str | None = None,
    url: str | None = None,
    token: str | None = None,
    **options: Any,
) -> None:
    params = parse_json("send", "--input", input, default={})
    if not isinstance(params, dict):
        raise CliError(
            f'jr2 send: --input must be a JSON object, like \'{{"text": "..."}}\'; got {type(params).__name__}'
        )
    if "type" in params:
        raise CliError('jr2 send: --input cannot hold "type": the event is named by --event')
    with Client.connect("send", url, token) as api:
        run_id = api.resolve(run)
        answer = api.post(f"/api/runs/{run_id}/gates/{quote(gate, safe='/')}/events", {"type": event, **params})
    out.json(answer)


def cancel(out: Output, run: str, url: str | None = None, token: str | None = None, **options: Any) -> None:
    with Client.connect("cancel", url, token) as api:
        run_id = api.resolve(run)
        answer = api.post(f"/api/runs/{run_id}/cancel")
    out.json(answer)


def root_of(api: Client, workflow: str) -> str:
    """The Machine's id, the root of state paths (a Workflow's Machine may be named apart from its file)."""
    try:
        return str(api.get(f"/api/workflows/{quote(workflow, safe='')}").get("machine") or workflow)
    except CliError:
        return workflow


def exit_by(status: str) -> None:
    """Exit with the code of the run's status (0 for done and for a live run)."""
    code = exit_code(status)
    if code:
        raise SystemExit(code)
