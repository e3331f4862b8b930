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
    jr2 cancel <run>
        Cancel a live run; prints the API's answer as JSON.

Replaying reads this project's database and workflows folder, like `check` (engine/core/journal/replay.py does the work):

    jr2 replay <run> [--against-current] [--workflows DIR] [--url URL [--token T]]
        Re-run the run's journal (picks, Gate answers, Effect results, time) against the workflow's Machine without
        calling any model or Effect. Prints "same (N steps)" (exit 0), or the first step where it diverges in
        words (exit 1): "step 7: writer picked done {notes: ...}: now unmoved: not allowed in
        notes.writing.drafting (allowed now: ask)". A run whose Machine's shape digest differs from the
        workflow's now is not replayed unless --against-current is given (exit 1, naming both digests). --url
        reads the run and its journal through a server's API instead of the database ($JR2_URL is not used here).

Forks go through a server's API; export and import read and write this project's database (or a server's API
with --url):

    jr2 fork <run> --step N [--context JSON] [--gate G --event E [--input JSON]]
        Start a run from the Session the run had after journal entry N, its context replaced by --context (an
        object keeping the keys and JSON types of the context then) and/or the Gate G answered with E (with
        neither, the fork goes on as it is: its Agents are asked again); prints the new run as JSON. The run
        itself never changes.
    jr2 export <run> [-o FILE] [--schema] [--url URL [--token T]]
        The run as one JSON file (format jr2.run, version 1: the run, its journal, snapshots, Turns, messages, model
        calls and Effects) on stdout or in FILE; --schema prints the format's JSON schema instead.
    jr2 import <file> [--url URL [--token T]]
        Read an export in, read-only (marked imported: never hosted, resumed, answered or cancelled), in one
        transaction; a bad file is refused naming each problem and changes nothing (exit 2). Prints the run's id.

Exit codes: 0 done (and, for run/status, a live run: running or waiting), 1 failed (replay: diverged or not
replayed), 2 usage and API errors, 3 cancelled, 4 drifted, 130 interrupted. Every API error is one line on
stderr, `jr2 <command>: <HTTP status>: <the API's detail>`; a server that does not answer is named with its URL
and how to start it (`jr2 up`).

To add a subcommand: declare it in SUBCOMMANDS with its arguments and write `handle_<name>` (a `-` in the name
becomes `_`); a handler raises `CliError` for a one-line error and an exit code.
"""
from __future__ import annotations

import os
import textwrap
from argparse import ArgumentParser, RawDescriptionHelpFormatter
from dataclasses import dataclass
from json import dumps as json_dumps
from typing import Any, Callable
from urllib.parse import quote

from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from engine import __version__
from engine.cli.client import DEFAULT_URL, Client, CliError, one_line, parse_json
from engine.cli.follow import Follower
from engine.cli.text import exit_code, final, runs_table, status_lines
from engine.runtime.loader import Loaded, Workflows, load_workflows
from engine.runtime.registry import reload_workflows


def _check_arguments(parser: ArgumentParser) -> None:
    parser.add_argument("--workflows", metavar="DIR",
                        help="the workflows folder (default: settings.JR2_WORKFLOWS, i.e. $JR2_WORKFLOWS or "
                             "<project>/workflows)")
    parser.add_argument("--tracebacks", action="store_true",
                        help="print the whole traceback of each Workflow that is refused or fails to import")


def _up_arguments(parser: ArgumentParser) -> None:
    parser.add_argument("addrport", nargs="?", help="address and port to serve on (default 127.0.0.1:8000)")
    parser.add_argument("--port", type=int, help="the port to serve on (default 8000)")


def _worker_arguments(parser: ArgumentParser) -> None:
    del parser  # settings come from the environment: DATABASE_URL, REDIS_URL, JR2_HOST_ID, JR2_LEASE_SECONDS...


def _server_arguments(parser: ArgumentParser) -> None:
    parser.add_argument("--url", help=f"the jr2 server (default: $JR2_URL, else {DEFAULT_URL})")
    parser.add_argument("--token", help="an API token from `jr2 token create` (default: $JR2_TOKEN)")


def _run_arguments(parser: ArgumentParser) -> None:
    parser.add_argument("workflow", help="the Workflow's name (its file name without .py)")
    parser.add_argument("--input", metavar="JSON",
                        help="the run's input, validated against the door (@FILE reads a file, - reads stdin)")
    parser.add_argument("--detach", action="store_true",
                        help="print the created run as JSON and exit 0 instead of following it")
    _server_arguments(parser)


def _runs_arguments(parser: ArgumentParser) -> None:
    parser.add_argument("--workflow", help="only this Workflow's runs")
    parser.add_argument("--status", help="only runs with this status (comma-separated: running,waiting)")
    parser.add_argument("--page", type=int, default=1, help="the page, 50 runs each, newest first (default 1)")
    parser.add_argument("--json", action="store_true", help="print the API's page as JSON")
    _server_arguments(parser)


def _run_id(parser: ArgumentParser) -> None:
    parser.add_argument("run", help="the run's id, or 4 or more of its first characters")


def _status_arguments(parser: ArgumentParser) -> None:
    _run_id(parser)
    parser.add_argument("--json", action="store_true", help="print the API's body for the run as JSON")
    _server_arguments(parser)


def _send_arguments(parser: ArgumentParser) -> None:
    _run_id(parser)
    parser.add_argument("--gate", required=True, help="the open Gate's id (see `jr2 status <run>`)")
    parser.add_argument("--event", required=True, help="an event the Gate accepts")
    parser.add_argument("--input", metavar="JSON",
                        help="the event's input, a JSON object (@FILE reads a file, - reads stdin; default {})")
    _server_arguments(parser)


def _cancel_arguments(parser: ArgumentParser) -> None:
    _run_id(parser)
    _server_arguments(parser)


def _replay_arguments(parser: ArgumentParser) -> None:
    _run_id(parser)
    parser.add_argument("--against-current", action="store_true",
                        help="replay even when the workflow's shape changed since the run was written")
    parser.add_argument("--workflows", metavar="DIR",
                        help="the workflows folder to read the Machine from (default: settings.JR2_WORKFLOWS)")
    parser.add_argument("--url", help="read the run and its journal from this server's API instead of the "
                                      "database ($JR2_URL is not used here)")
    parser.add_argument("--token", help="with --url: an API token (default: $JR2_TOKEN)")


def _fork_arguments(parser: ArgumentParser) -> None:
    _run_id(parser)
    parser.add_argument("--step", type=int, required=True, help="the journal entry to fork after (see `jr2 replay`)")
    parser.add_argument("--context", metavar="JSON",
                        help="the fork's context, a JSON object (@FILE reads a file, - reads stdin)")
    parser.add_argument("--gate", help="a Gate open at that step, to answer differently")
    parser.add_argument("--event", help="with --gate: the event to send it")
    parser.add_argument("--input", metavar="JSON", help="with --gate: the event's input, a JSON object (default {})")
    _server_arguments(parser)


def _export_arguments(parser: ArgumentParser) -> None:
    parser.add_argument("run", nargs="?", help="the run's id, or 4 or more of its first characters")
    parser.add_argument("-o", "--output", metavar="FILE", help="write the export here instead of stdout")
    parser.add_argument("--schema", action="store_true", help="print the export format's JSON schema")
    parser.add_argument("--url", help="read the run from this server's API instead of the database")
    parser.add_argument("--token", help="with --url: an API token (default: $JR2_TOKEN)")


def _import_arguments(parser: ArgumentParser) -> None:
    parser.add_argument("file", help="a file written by `jr2 export` (- reads stdin)")
    parser.add_argument("--url", help="import through this server's API instead of into the database")
    parser.add_argument("--token", help="with --url: an API token (default: $JR2_TOKEN)")


def _token_arguments(parser: ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", metavar="<action>", required=True)
    create = actions.add_parser("create", help="create a token for a user and print it once")
    create.add_argument("username")
    create.add_argument("--name", default="", help="a label to tell this token apart")
    create.add_argument("--create-user", action="store_true",
                        help="create the user if it does not exist, with the permissions to start runs, answer Gates "
                             "and cancel runs")
    listing = actions.add_parser("list", help="list a user's tokens (never the keys)")
    listing.add_argument("username", nargs="?")
    revoke = actions.add_parser("revoke", help="revoke a token by its prefix (see `jr2 token list`)")
    revoke.add_argument("prefix")


@dataclass(frozen=True)
class Subcommand:
    name: str
    help: str
    arguments: Callable[[ArgumentParser], None]
    epilog: str | None = None


EXIT_BY_STATUS = ("exit codes: 0 done, or still running or waiting; 1 failed; 3 cancelled; 4 drifted; 2 usage or "
                  "API error")


SUBCOMMANDS = [
    Subcommand("check", "load every workflow, apply the refusals, print seats and warnings; exit 1 on any refusal",
               _check_arguments),
    Subcommand("up", "check, print the seats, migrate, then serve the Console and the API and drive the runs",
               _up_arguments),
    Subcommand("web", "serve the Console and the API, driving no run: `jr2 worker` processes on the same database "
                      "(and Redis) drive them", _up_arguments),
    Subcommand("worker", "drive runs (Turns, Effects, timers) with no pages: claims new runs and those of dead "
                         "workers; drains on SIGTERM", _worker_arguments),
    Subcommand("token", "create, list and revoke API tokens", _token_arguments),
    Subcommand("run", "start a run of a Workflow with its input and follow it to its end", _run_arguments,
               "Progress lines go to stderr, one per change (picks, Gate answers, Effects, the state, Turns, Gates "
               "with the `jr2 send` command that answers them, the status); the run's final status JSON goes to "
               "stdout. Ctrl-C stops following (exit 130) and the run goes on.\n\n" + EXIT_BY_STATUS),
    Subcommand("runs", "list the runs: id, workflow, status, open Gates, age", _runs_arguments),
    Subcommand("status", "show one run: its state, open Gates, Turns, output or failure", _status_arguments,
               EXIT_BY_STATUS),
    Subcommand("send", "deliver an event to a run's open Gate", _send_arguments),
    Subcommand("cancel", "cancel a run", _cancel_arguments),
    Subcommand("replay", "re-run a run's journal against the workflow's Machine: same, or where it diverges",
               _replay_arguments,
               "No model or Effect is called: the journal holds what they answered. Prints \"same (N steps)\" "
               "(exit 0) or the first step where the run diverges (exit 1). A run written under another shape of "
               "the Machine is replayed only with --against-current (else exit 1). Usage errors exit 2."),
    Subcommand("fork", "start a run from a step of another, with its context edited or a Gate answered differently",
               _fork_arguments),
    Subcommand("export", "write a run as one JSON file: journal, snapshots, Turns, messages, model calls, Effects",
               _export_arguments),
    Subcommand("import", "read a run exported elsewhere, read-only; a bad file changes nothing", _import_arguments),
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
        subparsers = parser.add_subparsers(dest="subcommand", metavar="<subcommand>", required=True,
                                           title="subcommands")
        for sub in SUBCOMMANDS:
            epilog = "\n\n".join(textwrap.fill(p, 79) for p in sub.epilog.split("\n\n")) if sub.epilog else None
            sub.arguments(subparsers.add_parser(sub.name, help=sub.help, description=sub.help, epilog=epilog,
                                                formatter_class=RawDescriptionHelpFormatter))

    def handle(self, *args: Any, subcommand: str, **options: Any) -> None:
        try:
            getattr(self, "handle_" + subcommand.replace("-", "_"))(**options)
        except CliError as err:
            self.stderr.write(err.message)
            raise SystemExit(err.code) from None

    # -- jr2 check ---------------------------------------------------------------------------------------------

    def handle_check(self, workflows: str | None = None, tracebacks: bool = False, verbosity: int = 1,
                     raise_on_failure: bool = True, **options: Any) -> None:
        try:
            found = load_workflows(workflows) if workflows else reload_workflows()
        except (FileNotFoundError, NotADirectoryError) as err:
            raise CommandError(f"jr2 check: {err}") from err
        count = len(found.workflows)
        self.stdout.write(f"jr2 check: {count} workflow{'s' if count != 1 else ''} in {found.folder}")
        show_tracebacks = tracebacks or verbosity >= 2
        for loaded in found.files:
            if loaded.status == "ok":
                if verbosity >= 1:
                    self._write_ok(loaded)
            elif loaded.failed:
                self._write_failed(loaded, show_tracebacks)
            elif verbosity >= 1:
                self.stdout.write("")
                self.stdout.write(loaded.message())
        self.stdout.write("")
        self.stdout.write(self._summary(found))
        self.stdout.flush()
        if found.failures and raise_on_failure:
            lines = "\n".join(f"  {f.message()}" for f in found.failures)
            failed = [f for f in found.failures if not f.helper]
            helpers = len(found.failures) - len(failed)
            what = f"{len(failed)} of {count} workflow{'s' if count != 1 else ''}"
            if helpers:
                what += f" and {helpers} helper module{'s' if helpers != 1 else ''}"
            raise CommandError(f"jr2 check failed: {what} did not load:\n{lines}")

    # -- jr2 up -------------------------------------------------------------------------------------------------

    def handle_up(self, addrport: str | None = None, port: int | None = None, verbosity: int = 1,
                  role: str = "up", **options: Any) -> None:
        """What `check` does (seats of every workflow included), then migrate, then serve the Console and the API
        with daphne while this process's host drives the runs (live ones are taken up again)."""
        from engine.runtime.serve import serve

        address, default_port = "127.0.0.1", 8000
        if addrport:
            host_part, _, port_part = addrport.rpartition(":")
            address = host_part or address
            try:
                default_port = int(port_part)
            except ValueError:
                raise CommandError(f"jr2 {role}: {addrport!r} is not ADDRESS:PORT (e.g. 127.0.0.1:8000)") from None
        self._prepare(verbosity, role)
        serve(address, port or default_port, say=self._say, role=role)

    def handle_web(self, **options: Any) -> None:
        """`jr2 up` without driving runs: many of these can serve one database beside `jr2 worker` processes."""
        self.handle_up(role="web", **options)

    def handle_worker(self, verbosity: int = 1, **options: Any) -> None:
        """Check, migrate, then drive runs until SIGTERM (see engine/runtime/serve.py `work`)."""
        from engine.runtime.serve import work

        self._prepare(verbosity, "worker")
        work(say=self._say)

    def _prepare(self, verbosity: int, role: str) -> None:
        """What every server process does first: check the workflows (seats printed) and JR2_MODEL_OVERRIDE,
        migrate, and say what will play the Agents and whether anyone can log in."""
        from engine.runtime.providers import DEFAULT_PROVIDERS
        from engine.runtime.providers._config import setting_dict
        from engine.runtime.registry import workflows
        from engine.runtime.players import check_model_overrides, model_overrides, offline_notice

        self.handle_check(verbosity=verbosity, workflows=None, raise_on_failure=False)
        declared = {f"{name}.{slot}": agent.model for name, machine in workflows().machines.items()
                    for slot, agent in machine.agents.items()}
        problems = check_model_overrides(declared, setting_dict("JR2_PROVIDERS", DEFAULT_PROVIDERS))
        if problems:
            raise CommandError(f"jr2 {role}: " + "; ".join(problems))
        call_command("migrate", interactive=False, verbosity=max(0, verbosity - 1))
        overrides = model_overrides()
        models = {key: overrides.get(key, model) for key, model in declared.items()}
        for key in sorted(overrides):
            self.stdout.write(f"JR2_MODEL_OVERRIDE: {key} plays {overrides[key]} (declared {declared[key]})")
        for line in offline_notice(models):
            self.stdout.write(self.style.WARNING(line))
        from django.contrib.auth import get_user_model
        if not get_user_model().objects.exists():
            self.stdout.write(self.style.WARNING(
                "jr2: no Console user yet: create one with `python manage.py createsuperuser` (a superuser may "
                "do everything; others get the groups gate-answerers or operators in /admin/), or set "
                "JR2_CONSOLE_OPEN_READS=1 to let anyone read the Console"))
        self.stdout.flush()

    def _say(self, line: str) -> None:
        self.stdout.write(line)
        self.stdout.flush()

    # -- jr2 token ------------------------------------------------------------------------------------------------

    def handle_token(self, action: str, username: str | None = None, name: str = "", create_user: bool = False,
                     prefix: str = "", **options: Any) -> None:
        from django.contrib.auth import get_user_model
        from django.contrib.auth.models import Permission
        from django.utils import timezone

        from engine.models import ApiToken

        users = get_user_model()
        if action == "create":
            user = users.objects.filter(username=username).first()
            if user is None and not create_user:
                raise CommandError(f'jr2 token: no user "{username}"; create one with `python manage.py '
                                   f"createsuperuser`, or pass --create-user")
            if user is None:
                user = users.objects.create_user(username=username)
                user.user_permissions.add(*Permission.objects.filter(
                    content_type__app_label="engine", codename__in=("start_run", "answer_gate", "cancel_run")))
                self.stderr.write(f'jr2 token: created user "{username}" with the permissions to start runs, answer '
                                  "Gates and cancel runs")
            _, key = ApiToken.issue(user, name)
            self.stderr.write(f'jr2 token: a new token for "{username}" (shown once; keep it secret):')
            self.stdout.write(key)
        elif action == "list":
            tokens = ApiToken.objects.select_related("user").order_by("-created_at")
            if username:
                tokens = tokens.filter(user__username=username)
            for token in tokens:
                state = f"revoked {token.revoked_at:%Y-%m-%d}" if token.revoked_at else "active"
                used = f"last used {token.last_used_at:%Y-%m-%d %H:%M}" if token.last_used_at else "never used"
                self.stdout.write(f"{token.prefix}…  {token.user.username:<16} {state:<18} {used}  {token.name}")
        else:
            found = ApiToken.objects.filter(prefix__startswith=prefix, revoked_at__isnull=True)
            if found.count() != 1:
                raise CommandError(f"jr2 token revoke: {found.count()} active tokens start with {prefix!r}; give a "
                                   "longer prefix (see `jr2 token list`)")
            found.update(revoked_at=timezone.now())
            self.stdout.write(f"jr2 token: revoked {prefix}…")

    # -- jr2 run, runs, status, send, cancel: against a running server ----------------------------------------

    def handle_run(self, workflow: str, input: str | None = None, detach: bool = False, url: str | None = None,
                   token: str | None = None, **options: Any) -> None:
        """Start a run (POST /api/workflows/<name>/runs with the --input JSON as the body), then follow it to its
        end, or with --detach print the created run and exit 0."""
        body = parse_json("run", "--input", input, default={})
        run_id = ""
        try:
            with Client.connect("run", url, token) as api:
                created = api.post(f"/api/workflows/{quote(workflow, safe='')}/runs", body)
                run_id = str(created["id"])
                if detach:
                    self._json(created)
                    return
                self._progress(f"jr2 run: started run {run_id} of {workflow}; following it (Ctrl-C stops following, "
                               "the run goes on)")
                try:
                    run = Follower(api, run_id, self._root(api, workflow), self._progress).follow()
                except CliError as err:
                    raise CliError(f"{err.message} (run {run_id} goes on: `jr2 status {run_id}`)") from err
        except KeyboardInterrupt:
            if run_id:
                self._progress(f"jr2 run: stopped following run {run_id}; it goes on. Look again with "
                               f"`jr2 status {run_id}`")
            else:
                self._progress("jr2 run: interrupted")
            raise SystemExit(130) from None
        self._json(final(run))
        self._exit_by(str(run.get("status")))

    def handle_runs(self, workflow: str | None = None, status: str | None = None, page: int = 1,
                    json: bool = False, url: str | None = None, token: str | None = None, **options: Any) -> None:
        with Client.connect("runs", url, token) as api:
            found = api.get("/api/runs", workflow=workflow, status=status, page=page)
        if json:
            self._json(found)
            return
        for line in runs_table(found):
            self.stdout.write(line)

    def handle_status(self, run: str, json: bool = False, url: str | None = None, token: str | None = None,
                      **options: Any) -> None:
        with Client.connect("status", url, token) as api:
            run_id = api.resolve(run)
            body = api.get(f"/api/runs/{run_id}")
            root = "" if json else self._root(api, str(body.get("workflow")))
        if json:
            self._json(body)
        else:
            for line in status_lines(body, root):
                self.stdout.write(line)
        self._exit_by(str(body.get("status")))

    def handle_send(self, run: str, gate: str, event: str, input: str | None = None, url: str | None = None,
                    token: str | None = None, **options: Any) -> None:
        params = parse_json("send", "--input", input, default={})
        if not isinstance(params, dict):
            raise CliError(f"jr2 send: --input must be a JSON object, like '{{\"text\": \"...\"}}'; got "
                           f"{type(params).__name__}")
        if "type" in params:
            raise CliError('jr2 send: --input cannot hold "type": the event is named by --event')
        with Client.connect("send", url, token) as api:
            run_id = api.resolve(run)
            answer = api.post(f"/api/runs/{run_id}/gates/{quote(gate, safe='/')}/events", {"type": event, **params})
        self._json(answer)

    def handle_cancel(self, run: str, url: str | None = None, token: str | None = None, **options: Any) -> None:
        with Client.connect("cancel", url, token) as api:
            run_id = api.resolve(run)
            answer = api.post(f"/api/runs/{run_id}/cancel")
        self._json(answer)

    def _root(self, api: Client, workflow: str) -> str:
        """The Machine's id, the root of state paths (a Workflow's Machine may be named apart from its file)."""
        try:
            return str(api.get(f"/api/workflows/{quote(workflow, safe='')}").get("machine") or workflow)
        except CliError:
            return workflow

    def _json(self, value: Any) -> None:
        self.stdout.write(json_dumps(value, indent=2, ensure_ascii=False))
        self.stdout.flush()

    def _progress(self, line: str) -> None:
        self.stderr.write(line, style_func=lambda text: text)
        self.stderr.flush()

    @staticmethod
    def _exit_by(status: str) -> None:
        code = exit_code(status)
        if code:
            raise SystemExit(code)

    # -- jr2 replay ---------------------------------------------------------------------------------------------

    def handle_replay(self, run: str, against_current: bool = False, workflows: str | None = None,
                      url: str | None = None, token: str | None = None, **options: Any) -> None:
        """Re-run the run's journal against the workflow's current Machine (engine.core.journal.replay): "same (N steps)",
        exit 0; the first divergence in words, exit 1; a run whose Machine changed shape is not replayed without
        --against-current (exit 1)."""
        from engine.core.journal.replay import replay

        record = self._replay_source_api(run, url, token) if url else self._replay_source_db(run)
        try:
            found = load_workflows(workflows) if workflows else reload_workflows()
        except (FileNotFoundError, NotADirectoryError) as err:
            raise CliError(f"jr2 replay: {err}") from err
        name, run_id = record["workflow"], record["id"]
        loaded = found.find(name)
        if loaded is None:
            raise CliError(f'jr2 replay: run {run_id} is a run of workflow "{name}", which is not in {found.folder} '
                           f"(workflows: {', '.join(found.names()) or 'none'})")
        if loaded.machine is None:
            raise CliError(f"jr2 replay: {loaded.message()}")
        machine = loaded.machine
        recorded = str(record.get("digest") or "")
        changed = recorded != machine.digest
        journal = record["journal"]
        shape = (f"its shape changed: the run's {recorded[:12]}, now {machine.digest[:12]}" if changed
                 else f"the same shape {machine.digest[:12]}")
        self._progress(f"jr2 replay: run {run_id} ({name}, {record.get('status')}, {len(journal)} journal entries) "
                       f"against {loaded.path} ({shape})")
        if changed and not against_current:
            self.stdout.write(f'run {run_id} was written under workflow "{name}" with shape {recorded[:12]}, but '
                              f"{loaded.file} now has shape {machine.digest[:12]}: not replayed. Pass "
                              "--against-current to replay it against the current Machine and see where it diverges")
            raise SystemExit(1)
        try:
            report = replay(machine, journal)
        except ValueError as err:
            raise CliError(f"jr2 replay: run {run_id}: {err}") from err
        self.stdout.write(report.message)
        if not report.same:
            raise SystemExit(1)

    def _replay_source_db(self, prefix: str) -> dict[str, Any]:
        from django.db import DatabaseError

        from engine.models import JournalEntry, Run

        if len(prefix) < 4:
            raise CliError(f"jr2 replay: a run id or a prefix of at least 4 characters is needed; got {prefix!r}")
        try:
            runs = list(Run.objects.filter(id__startswith=prefix).order_by("-created_at")[:20])
            if len(runs) != 1 and not any(r.id == prefix for r in runs):
                if not runs:
                    raise CliError(f"jr2 replay: no run id starts with {prefix!r} in the database "
                                   f"({_database_name()})")
                listed = ", ".join(f"{r.id} ({r.workflow}, {r.status})" for r in runs)
                raise CliError(f"jr2 replay: {len(runs)} runs start with {prefix!r}: {listed}; give more characters")
            found = next((r for r in runs if r.id == prefix), runs[0])
            journal = list(JournalEntry.objects.filter(run=found).order_by("seq").values("seq", "kind", "entry",
                                                                                          "out"))
        except DatabaseError as err:
            raise CliError(f"jr2 replay: cannot read the runs in the database ({_database_name()}): "
                           f"{one_line(str(err))}; `jr2 up` migrates it, or use --url to read a server's") from err
        return {"id": found.id, "workflow": found.workflow, "status": found.status, "digest": found.digest,
                "journal": journal}

    def _replay_source_api(self, prefix: str, url: str, token: str | None) -> dict[str, Any]:
        with Client.connect("replay", url, token) as api:
            run_id = api.resolve(prefix)
            body = api.get(f"/api/runs/{run_id}")
            journal: list[dict[str, Any]] = []
            while True:
                page = api.get(f"/api/runs/{run_id}/journal", after=journal[-1]["seq"] if journal else 0,
                               limit=10000)
                entries = page.get("entries") or []
                journal.extend(entries)
                if not entries or journal[-1]["seq"] >= int(page.get("seq") or 0):
                    break
        return {"id": run_id, "workflow": body["workflow"], "status": body.get("status"),
                "digest": body.get("digest"), "journal": journal}

    # -- jr2 fork, export, import ----------------------------------------------------------------------------------

    def handle_fork(self, run: str, step: int, context: str | None = None, gate: str | None = None,
                    event: str | None = None, input: str | None = None, url: str | None = None,
                    token: str | None = None, **options: Any) -> None:
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
        with Client.connect("fork", url, token) as api:
            run_id = api.resolve(run)
            self._json(api.post(f"/api/runs/{run_id}/fork", body))

    def handle_export(self, run: str | None = None, output: str | None = None, schema: bool = False,
                      url: str | None = None, token: str | None = None, **options: Any) -> None:
        """The run as one JSON file (engine/web/exchange.py), from the database or with --url from a server's API."""
        from engine.web import exchange

        if schema:
            data: Any = exchange.schema()
        elif run is None:
            raise CliError("jr2 export: name the run to export (or give --schema)")
        elif url:
            with Client.connect("export", url, token) as api:
                data = api.get(f"/api/runs/{api.resolve(run)}/export")
        else:
            data = exchange.export_run(self._one_run("export", run))
        text = json_dumps(data, indent=1, ensure_ascii=False)
        if output is None:
            self.stdout.write(text)
            return
        try:
            with open(output, "w", encoding="utf-8") as f:
                f.write(text + "\n")
        except OSError as err:
            raise CliError(f"jr2 export: cannot write {output}: {err.strerror or err}") from err
        self._progress(f"jr2 export: run {data['run']['id']} ({len(data['journal'])} journal entries) written to "
                       f"{output}" if not schema else f"jr2 export: the schema written to {output}")

    def handle_import(self, file: str, url: str | None = None, token: str | None = None, **options: Any) -> None:
        """Read an export in, read-only, in one transaction; prints the run's id."""
        from django.db import DatabaseError

        from engine.web.exchange import ExchangeError, import_run

        data = parse_json("import", "file", file if file == "-" else "@" + file)
        if url:
            with Client.connect("import", url, token) as api:
                created = api.post("/api/runs/import", data)
            self.stdout.write(str(created["id"]))
            return
        try:
            run = import_run(data)
        except ExchangeError as err:
            raise CliError(f"jr2 import: {file}: {err}") from err
        except DatabaseError as err:
            raise CliError(f"jr2 import: cannot write to the database ({_database_name()}): {one_line(str(err))}; "
                           "`jr2 up` migrates it") from err
        kept = "" if run.id == run.imported_from else f" (its id {run.imported_from} is taken here)"
        self._progress(f"jr2 import: run {run.id} of {run.workflow} ({run.status}, {run.seq} journal entries) "
                       f"imported read-only{kept}")
        self.stdout.write(run.id)

    def _one_run(self, command: str, prefix: str) -> str:
        """The id of the one run in the database whose id starts with `prefix`."""
        from django.db import DatabaseError

        from engine.models import Run

        if len(prefix) < 4:
            raise CliError(f"jr2 {command}: a run id or a prefix of at least 4 characters is needed; got {prefix!r}")
        try:
            ids = list(Run.objects.filter(id__startswith=prefix).order_by("-created_at").values_list("id", flat=True)[
                :20])
        except DatabaseError as err:
            raise CliError(f"jr2 {command}: cannot read the runs in the database ({_database_name()}): "
                           f"{one_line(str(err))}") from err
        if prefix in ids:
            return prefix
        if len(ids) != 1:
            raise CliError(f"jr2 {command}: no run id starts with {prefix!r} in the database ({_database_name()})"
                           if not ids else f"jr2 {command}: {len(ids)} runs start with {prefix!r}: {', '.join(ids)}; "
                                           "give more characters")
        return ids[0]

    def _write_ok(self, loaded: Loaded) -> None:
        machine = loaded.machine
        assert machine is not None
        warnings = machine.warnings()
        named = "" if machine.id == loaded.name else f' (machine "{machine.id}")'
        verdict = f"ok, {len(warnings)} warning{'s' if len(warnings) != 1 else ''}" if warnings else "ok"
        self.stdout.write("")
        self.stdout.write(f'{loaded.file}: workflow "{loaded.name}"{named}: ' + self.style.SUCCESS(verdict))
        self.stdout.write(machine.seats_text(loaded.name))
        for warning in warnings:
            self.stdout.write(self.style.WARNING(f"  warning [{warning.code}]: {warning.message}"))

    def _write_failed(self, loaded: Loaded, show_traceback: bool) -> None:
        self.stdout.write("")
        what = {"refused": "REFUSED", "import-failed": "IMPORT FAILED", "invalid": "NOT VALID"}[loaded.status]
        who = "helper module" if loaded.helper else f'workflow "{loaded.name}"'
        self.stdout.write(f"{loaded.file}: {who}: " + self.style.ERROR(what))
        where = f" ({loaded.where})" if loaded.where else ""
        self.stdout.write(f"  {loaded.error}{where}")
        if show_traceback and loaded.traceback:
            self.stdout.write("  " + loaded.traceback.rstrip().replace("\n", "\n  "))

    @staticmethod
    def _summary(found: Workflows) -> str:
        by = {status: sum(1 for f in found.files if f.status == status and not f.helper)
              for status in ("ok", "refused", "import-failed", "invalid", "not-a-workflow")}
        helpers = [f for f in found.files if f.helper]
        broken_helpers = sum(1 for f in helpers if f.failed)
        warnings = sum(len(m.warnings()) for m in found.machines.values())
        count = len(found.workflows)
        parts = [f"{by['ok']} ok ({warnings} warning{'s' if warnings != 1 else ''})"]
        if by["refused"]:
            parts.append(f"{by['refused']} refused")
        if by["import-failed"]:
            parts.append(f"{by['import-failed']} failed to import")
        if by["invalid"]:
            parts.append(f"{by['invalid']} not valid")
        line = f"summary: {count} workflow{'s' if count != 1 else ''}: " + ", ".join(parts)
        others = []
        if by["not-a-workflow"]:
            others.append(f"{by['not-a-workflow']} module{'s' if by['not-a-workflow'] != 1 else ''} without "
                          "`machine`")
        if helpers:
            others.append(f"{len(helpers)} helper module{'s' if len(helpers) != 1 else ''} (`_` prefix)"
                          + (f", {broken_helpers} failed to import" if broken_helpers else ""))
        if others:
            line += "; not workflows: " + ", ".join(others)
        return line


def _database_name() -> str:
    from django.db import connection
    return str(connection.settings_dict.get("NAME"))
