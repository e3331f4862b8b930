"""`jr2 <subcommand>` (also `python manage.py jr2 <subcommand>`): the command line of SPEC.md 7.

    jr2 check [--workflows DIR] [--tracebacks]
        Load every workflow (engine.loader), apply the refusals, print each Workflow's seats and warnings and a
        summary. Exit 1 when any Workflow is refused or fails to import; warnings alone do not fail the check.

    jr2 up [ADDR:PORT]
        What check does, then migrate the database and serve the Console (default 127.0.0.1:8000).

`run`, `runs`, `status`, `send`, `cancel` and `replay` are declared with the arguments SPEC.md 7 gives them
and say they are not implemented yet (exit 2). To add one: fill in its arguments in SUBCOMMANDS and write
`handle_<name>` (a `-` in the name becomes `_`).
"""
from __future__ import annotations

import os
from argparse import ArgumentParser
from dataclasses import dataclass
from typing import Any, Callable

from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from engine import __version__
from engine.loader import Loaded, Workflows, load_workflows
from engine.registry import reload_workflows


def _check_arguments(parser: ArgumentParser) -> None:
    parser.add_argument("--workflows", metavar="DIR",
                        help="the workflows folder (default: settings.JR2_WORKFLOWS, i.e. $JR2_WORKFLOWS or "
                             "<project>/workflows)")
    parser.add_argument("--tracebacks", action="store_true",
                        help="print the whole traceback of each Workflow that is refused or fails to import")


def _up_arguments(parser: ArgumentParser) -> None:
    parser.add_argument("addrport", nargs="?", help="address and port to serve on (default 127.0.0.1:8000)")
    parser.add_argument("--port", type=int, help="the port to serve on (default 8000)")


def _run_arguments(parser: ArgumentParser) -> None:
    parser.add_argument("workflow", help="the Workflow's name (its file name without .py)")
    parser.add_argument("--input", metavar="JSON", help="the run's input, validated against the door")


def _run_id(parser: ArgumentParser) -> None:
    parser.add_argument("run", help="the run's id")


def _send_arguments(parser: ArgumentParser) -> None:
    _run_id(parser)
    parser.add_argument("--gate", required=True, help="the open Gate's id")
    parser.add_argument("--event", required=True, help="an event the Gate accepts")
    parser.add_argument("--input", metavar="JSON", help="the event's input")


def _no_arguments(parser: ArgumentParser) -> None:
    pass


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


SUBCOMMANDS = [
    Subcommand("check", "load every workflow, apply the refusals, print seats and warnings; exit 1 on any refusal",
               _check_arguments),
    Subcommand("up", "check, print the seats, migrate, then serve the Console and the API and drive the runs",
               _up_arguments),
    Subcommand("token", "create, list and revoke API tokens", _token_arguments),
    Subcommand("run", "start a run of a Workflow with its input", _run_arguments),
    Subcommand("runs", "list the runs", _no_arguments),
    Subcommand("status", "show one run: its state, open Gates, output or failure", _run_id),
    Subcommand("send", "deliver an event to a run's open Gate", _send_arguments),
    Subcommand("cancel", "cancel a run", _run_id),
    Subcommand("replay", "step through a run's journal", _run_id),
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
            sub.arguments(subparsers.add_parser(sub.name, help=sub.help, description=sub.help))

    def handle(self, *args: Any, subcommand: str, **options: Any) -> None:
        handler = getattr(self, "handle_" + subcommand.replace("-", "_"), None)
        if handler is None:
            ready = ", ".join(s.name for s in SUBCOMMANDS if hasattr(self, "handle_" + s.name.replace("-", "_")))
            raise CommandError(f"jr2 {subcommand} is not implemented yet (implemented: {ready})", returncode=2)
        handler(**options)

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
                  **options: Any) -> None:
        """What `check` does (seats of every workflow included), then migrate, then serve the Console and the API
        with daphne while this process's host drives the runs (live ones are taken up again)."""
        from engine.registry import workflows
        from engine.runtime.players import offline_notice
        from engine.runtime.serve import serve

        address, default_port = "127.0.0.1", 8000
        if addrport:
            host_part, _, port_part = addrport.rpartition(":")
            address = host_part or address
            try:
                default_port = int(port_part)
            except ValueError:
                raise CommandError(f"jr2 up: {addrport!r} is not ADDRESS:PORT (e.g. 127.0.0.1:8000)") from None
        self.handle_check(verbosity=verbosity, workflows=None, raise_on_failure=False)
        call_command("migrate", interactive=False, verbosity=max(0, verbosity - 1))
        models = {f"{name}.{slot}": agent.model for name, machine in workflows().machines.items()
                  for slot, agent in machine.agents.items()}
        for line in offline_notice(models):
            self.stdout.write(self.style.WARNING(line))
        self.stdout.flush()
        serve(address, port or default_port, say=self._say)

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
