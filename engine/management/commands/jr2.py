"""`jr2 <subcommand>` (also `python manage.py jr2 <subcommand>`): the command line of SPEC.md 7.

    jr2 check [--workflows DIR] [--tracebacks]
        Load every workflow (engine.runtime.loader), apply the refusals, print each Workflow's seats and warnings and a
        summary. Exit 1 when any Workflow is refused or fails to import; warnings alone do not fail the check.

    jr2 up [ADDR:PORT] [--port N]
        What check does, then migrate the database and serve the Console and the API (default 127.0.0.1:8000).

    jr2 token create <username> [--name N] [--create-user] | list [<username>] | revoke <prefix>
        API tokens, on this project's database. A new token is printed once, on stdout.

Against a running server (engine/cli/client.py: `--url` or $JR2_URL, default http://127.0.0.1:8000; `--token` or
$JR2_TOKEN). Wherever a run is named, its id or 4 or more of its first characters will do (resolved with
`GET /api/runs?prefix=`; none or several matches is an error that lists them):

    jr2 run <workflow> [--input JSON] [--detach]
        Start a run (the --input JSON is the door input; `@FILE` reads a file, `-` stdin) and follow it: one line
        per change on stderr (picks with their outcome, Gate answers, Effects starting and finishing, the state as
        dotted paths, Turns starting and ending, each Gate that opens with the `jr2 send` command that answers it,
        the status), polling every 0.25 s; at the end the run's status JSON (id, workflow, status, output, reason)
        on stdout. Exit by status. Ctrl-C stops following (exit 130); the run goes on. --detach prints the created
        run as JSON and exits 0.
    jr2 runs [--workflow W] [--status S] [--page N] [--json]
        A table of runs, newest first (id, workflow, status, open Gates, age); --json prints the API's page.
    jr2 status <run> [--json]
        The run's status, state, open Gates with their `jr2 send` commands, Turns with their Allowed picks, running
        Effects, output or reason; --json prints the API's body. Exit by status.
    jr2 send <run> --gate G --event E [--input JSON]
        Deliver an event (its input a JSON object) to an open Gate; prints the API's answer as JSON.
    jr2 cancel <run> [--reason TEXT]
        Cancel a live run (the reason is journaled and shown); prints the API's answer as JSON.
    jr2 audit [--user U] [--workflow W] [--since T] [--until T] [--csv | --json]
        The audit trail (operators): every Gate answer, claim, cancel, seat change and one-tap link use.

Replaying reads this project's database and workflows folder, like `check` (engine/core/journal/replay.py does the
work):

    jr2 replay <run> [--against-current] [--workflows DIR] [--url URL [--token T]]
        Re-run the run's journal (picks, Gate answers, Effect results, time) against the workflow's Machine without
        calling any model or Effect. Prints "same (N steps)" (exit 0), or the first step where it diverges in
        words (exit 1): "step 7: writer picked done {notes: ...}: now unmoved: not allowed in
        notes.writing.drafting (allowed now: ask)". A run whose Machine's shape digest differs from the
        workflow's now is not replayed unless --against-current is given (exit 1, naming both digests). --url
        reads the run and its journal through a server's API instead of the database ($JR2_URL is not used here).

Scenarios (engine/core/scenarios.py) are runs written down as inputs and expectations, next to each workflow:

    jr2 test [WORKFLOW ...] [--workflows DIR] [--junit FILE] [--update] [--schema]
        Replay every scenario in workflows/<workflow>.scenarios/*.json against the current Machine, calling no
        model and running no Effect: one line per scenario, "ok (N steps)" or its first divergence in the words
        of `jr2 replay`, then a summary. Exit 1 on any divergence or bad file (named with its field). --junit
        writes JUnit XML; --update rewrites the expectations; --schema prints the file format's JSON schema.
    jr2 scenario save <run> <name> [--description D] [--force] [--workflows DIR] [--url URL [--token T]]
        Write a finished run as workflows/<workflow>.scenarios/<name>.json: its picks, Gate answers, Effect
        results, time passing and faults become the inputs; the expectations are what the Machine comes to.

Forks go through a server's API; export and import read and write this project's database (or a server's API
with --url):

    jr2 fork <run> --step N [--context JSON] [--gate G --event E [--input JSON]]
        Start a run from the Session the run had after journal entry N, its context replaced by --context (an
        object keeping the keys and JSON types of the context then) and/or the Gate G answered with E (with
        neither, the fork goes on as it is: its Agents are asked again); prints the new run as JSON. The run
        itself never changes.
    jr2 graph <workflow> [--format svg|png|mermaid|dot] [-o FILE] [--workflows DIR]
        The Workflow's graph as the Console draws it, read from the workflows folder (no server): SVG (default),
        PNG (to a file or a redirected stdout), Mermaid `stateDiagram-v2` or graphviz's DOT source.
    jr2 export <run> [-o FILE] [--schema] [--url URL [--token T]]
        The run as one JSON file (format jr2.run, version 1: the run, its journal, snapshots, Turns, messages, model
        calls and Effects) on stdout or in FILE; --schema prints the format's JSON schema instead.
    jr2 import <file> [--url URL [--token T]]
        Read an export in, read-only (marked imported: never hosted, resumed, answered or cancelled), in one
        transaction; a bad file is refused naming each problem and changes nothing (exit 2). Prints the run's id.

A stdio MCP server that relays to a server's MCP endpoints (for clients that start servers as processes):

    jr2 mcp seat <run> <agent> | gates | ops [--url URL] [--token T]
        Serve /mcp/runs/<run>/seats/<agent>/, /mcp/gates/ or /mcp/ over stdin and stdout.

Exit codes: 0 done (and, for run/status, a live run: running or waiting), 1 failed (replay: diverged or not
replayed), 2 usage and API errors, 3 cancelled, 4 drifted, 130 interrupted. Every API error is one line on
stderr, `jr2 <command>: <HTTP status>: <the API's detail>`; a server that does not answer is named with its URL
and how to start it (`jr2 up`).

The work is done in engine/cli/commands/ (one module per family of subcommands); this command parses the
arguments and calls it. To add a subcommand: write it and its arguments there, declare it in SUBCOMMANDS and add its
`handle_<name>` here (a `-` in the name becomes `_`); a command raises `CliError` for a one-line error and an exit
code.
"""

from __future__ import annotations

import os
import textwrap
from argparse import ArgumentParser, RawDescriptionHelpFormatter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.core.management.base import BaseCommand

from engine import __version__
from engine.cli.client import CliError
from engine.cli.commands import (
    accounts,
    auditing,
    exchange,
    graphing,
    init,
    mcp,
    replaying,
    runs,
    serving,
    testing,
    tokens,
)
from engine.cli.output import Output
from engine.web import exchange as run_files


@dataclass(frozen=True)
class Subcommand:
    name: str
    help: str
    arguments: Callable[[ArgumentParser], None]
    epilog: str | None = None


EXIT_BY_STATUS = (
    "exit codes: 0 done, or still running or waiting; 1 failed; 3 cancelled; 4 drifted; 2 usage or API error"
)


SUBCOMMANDS = [
    Subcommand(
        "init",
        "make a project folder: a workflow commented as a tutorial, its scripted stand-in, a .gitignore, a README",
        init.init_arguments,
        "It never overwrites a file: one that exists is named, and nothing is written (exit 1).",
    ),
    Subcommand(
        "check",
        "load every workflow, apply the refusals, print seats and warnings; exit 1 on any refusal",
        serving.check_arguments,
    ),
    Subcommand(
        "up",
        "check, print the seats, migrate, then serve the Console and the API and drive the runs",
        serving.up_arguments,
    ),
    Subcommand(
        "web",
        "serve the Console and the API, driving no run: `jr2 worker` processes on the same database "
        "(and Redis) drive them",
        serving.up_arguments,
    ),
    Subcommand(
        "worker",
        "drive runs (Turns, Effects, timers) with no pages: claims new runs and those of dead "
        "workers; drains on SIGTERM",
        serving.worker_arguments,
    ),
    Subcommand("token", "create, list and revoke API tokens", tokens.token_arguments),
    Subcommand(
        "login-link",
        "print a one-time link that logs a user in (15 minutes, once)",
        accounts.login_link_arguments,
    ),
    Subcommand(
        "run",
        "start a run of a Workflow with its input and follow it to its end",
        runs.run_arguments,
        "Progress lines go to stderr, one per change (picks, Gate answers, Effects, the state, Turns, Gates "
        "with the `jr2 send` command that answers them, the status); the run's final status JSON goes to "
        "stdout. Ctrl-C stops following (exit 130) and the run goes on.\n\n" + EXIT_BY_STATUS,
    ),
    Subcommand("runs", "list the runs: id, workflow, status, open Gates, age", runs.runs_arguments),
    Subcommand(
        "status", "show one run: its state, open Gates, Turns, output or failure", runs.status_arguments, EXIT_BY_STATUS
    ),
    Subcommand("send", "deliver an event to a run's open Gate", runs.send_arguments),
    Subcommand("cancel", "cancel a run (--reason says why)", runs.cancel_arguments),
    Subcommand(
        "audit",
        "print the audit trail: every Gate answer, claim, cancel, seat change and one-tap link use",
        auditing.audit_arguments,
    ),
    Subcommand(
        "replay",
        "re-run a run's journal against the workflow's Machine: same, or where it diverges",
        replaying.replay_arguments,
        'No model or Effect is called: the journal holds what they answered. Prints "same (N steps)" '
        "(exit 0) or the first step where the run diverges (exit 1). A run written under another shape of "
        "the Machine is replayed only with --against-current (else exit 1). Usage errors exit 2.",
    ),
    Subcommand(
        "test",
        "replay every scenario of the workflows against the current Machines: ok, or the first divergence",
        testing.test_arguments,
        "Scenarios are workflows/<workflow>.scenarios/<name>.json. No model or Effect is called. One line per "
        "scenario, then a summary; exit 1 on any divergence or file that is not a scenario, 2 on usage errors. "
        "--update rewrites the expectations to what the Machines come to now; --junit FILE writes JUnit XML.",
    ),
    Subcommand(
        "scenario",
        "save a finished run as a scenario next to its workflow, for `jr2 test`",
        testing.scenario_arguments,
    ),
    Subcommand(
        "fork",
        "start a run from a step of another, with its context edited or a Gate answered differently",
        replaying.fork_arguments,
    ),
    Subcommand(
        "graph",
        "draw a Workflow's graph as SVG, PNG, Mermaid (stateDiagram-v2) or DOT, from the workflows folder",
        graphing.graph_arguments,
        "The same drawing as the Console's workflow page: guards as written, the Machine's own events from a "
        '"from any state" box. A PNG goes to -o FILE or a redirected stdout, never to a terminal.',
    ),
    Subcommand(
        "export",
        "write a run as one JSON file: journal, snapshots, Turns, messages, model calls, Effects",
        exchange.export_arguments,
    ),
    Subcommand(
        "import", "read a run exported elsewhere, read-only; a bad file changes nothing", exchange.import_arguments
    ),
    Subcommand(
        "mcp",
        "serve a server's MCP endpoints over stdio: an Agent's seat, the Gates, or the runs operations",
        mcp.mcp_arguments,
        "For MCP clients that start their servers as processes (Claude Desktop, Claude Code). Every request is "
        "relayed to --url/$JR2_URL with --token/$JR2_TOKEN; stdout carries only MCP.",
    ),
]


class Command(BaseCommand):
    help = "jr2: check workflows, run the Console, start, inspect and answer runs. `jr2 <subcommand> --help`."
    requires_system_checks: list[str] = []  # `check` needs no database; `up` will run Django's checks itself
    requires_migrations_checks = False

    _prog: str | None = None

    def get_version(self) -> str:
        """`jr2 --version` is jr2's version (Django's own command would print Django's)."""
        return f"jr2 {__version__}"

    def create_parser(self, prog_name: str, subcommand: str, **kwargs: Any) -> Any:
        # The console script (jr2/cli.py) passes argv[0] "jr2": its usage reads `jr2 check`, not `jr2 jr2 check`.
        self._prog = "jr2" if os.path.basename(prog_name) == "jr2" else None
        return super().create_parser(prog_name, subcommand, **kwargs)

    def add_arguments(self, parser: Any) -> None:
        if self._prog:
            parser.prog = self._prog  # before add_subparsers, which derives each subcommand's prog from it
        subparsers = parser.add_subparsers(
            dest="subcommand", metavar="<subcommand>", required=True, title="subcommands"
        )
        for sub in SUBCOMMANDS:
            epilog = "\n\n".join(textwrap.fill(p, 79) for p in sub.epilog.split("\n\n")) if sub.epilog else None
            sub.arguments(
                subparsers.add_parser(
                    sub.name,
                    help=sub.help,
                    description=sub.help,
                    epilog=epilog,
                    formatter_class=RawDescriptionHelpFormatter,
                )
            )

    def handle(self, *args: Any, subcommand: str, **options: Any) -> None:
        self.out = Output(self.stdout, self.stderr, self.style)
        try:
            getattr(self, "handle_" + subcommand.replace("-", "_"))(**options)
        except CliError as err:
            self.stderr.write(err.message)
            raise SystemExit(err.code) from None

    # -- each subcommand: engine/cli/commands/ ---------------------------------------------------------------

    def handle_init(self, directory: str, **options: Any) -> None:
        init.init(directory, say=self.out.line)

    def handle_login_link(self, **options: Any) -> None:
        accounts.login_link(self.out, **options)

    def handle_check(self, **options: Any) -> None:
        serving.check(self.out, **options)

    def handle_up(self, **options: Any) -> None:
        serving.up(self.out, **options)

    def handle_web(self, **options: Any) -> None:
        serving.web(self.out, **options)

    def handle_worker(self, **options: Any) -> None:
        serving.worker(self.out, **options)

    def handle_token(self, **options: Any) -> None:
        tokens.token(self.out, **options)

    def handle_run(self, **options: Any) -> None:
        runs.run(self.out, **options)

    def handle_runs(self, **options: Any) -> None:
        runs.runs(self.out, **options)

    def handle_status(self, **options: Any) -> None:
        runs.status(self.out, **options)

    def handle_send(self, **options: Any) -> None:
        runs.send(self.out, **options)

    def handle_audit(self, **options: Any) -> None:
        auditing.audit(self.out, **options)

    def handle_cancel(self, **options: Any) -> None:
        runs.cancel(self.out, **options)

    def handle_replay(self, **options: Any) -> None:
        replaying.replay(self.out, **options)

    def handle_test(self, **options: Any) -> None:
        testing.test(self.out, **options)

    def handle_scenario(self, **options: Any) -> None:
        testing.scenario(self.out, **options)

    def handle_fork(self, **options: Any) -> None:
        replaying.fork(self.out, **options)

    def handle_mcp(self, **options: Any) -> None:
        code = mcp.mcp(**options)
        if code:
            raise SystemExit(code)

    def handle_graph(self, **options: Any) -> None:
        graphing.graph(self.out, **options)

    def handle_export(self, **options: Any) -> None:
        exchange.export(self.out, run_files, **options)

    def handle_import(self, **options: Any) -> None:
        exchange.import_(self.out, run_files, **options)
