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

from engine.loader import Loaded, Workflows, load_workflows


def _check_arguments(parser: ArgumentParser) -> None:
    parser.add_argument("--workflows", metavar="DIR",
                        help="the workflows folder (default: settings.JR2_WORKFLOWS, i.e. $JR2_WORKFLOWS or "
                             "<project>/workflows)")
    parser.add_argument("--tracebacks", action="store_true",
                        help="print the whole traceback of each Workflow that is refused or fails to import")


def _up_arguments(parser: ArgumentParser) -> None:
    parser.add_argument("addrport", nargs="?", help="address and port of the Console (default 127.0.0.1:8000)")


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


@dataclass(frozen=True)
class Subcommand:
    name: str
    help: str
    arguments: Callable[[ArgumentParser], None]


SUBCOMMANDS = [
    Subcommand("check", "load every workflow, apply the refusals, print seats and warnings; exit 1 on any refusal",
               _check_arguments),
    Subcommand("up", "check, print the seats, migrate and start the Console", _up_arguments),
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
                     **options: Any) -> None:
        try:
            found = load_workflows(workflows)
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
        if found.failures:
            lines = "\n".join(f"  {f.message()}" for f in found.failures)
            failed = [f for f in found.failures if not f.helper]
            helpers = len(found.failures) - len(failed)
            what = f"{len(failed)} of {count} workflow{'s' if count != 1 else ''}"
            if helpers:
                what += f" and {helpers} helper module{'s' if helpers != 1 else ''}"
            raise CommandError(f"jr2 check failed: {what} did not load:\n{lines}")

    # -- jr2 up -------------------------------------------------------------------------------------------------

    def handle_up(self, addrport: str | None = None, verbosity: int = 1, **options: Any) -> None:
        """What `check` does (seats of every workflow included), then migrate, then serve the Console."""
        self.handle_check(verbosity=verbosity)
        call_command("migrate", interactive=False, verbosity=verbosity)
        self.stdout.write(f"jr2 up: the Console is at http://{addrport or '127.0.0.1:8000'}/")
        call_command("runserver", addrport or "127.0.0.1:8000", use_reloader=False)

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
