"""`jr2 check`, `jr2 up`, `jr2 web` and `jr2 worker`: load every workflow and say what is wrong with each, then (for
the servers) migrate and serve the Console and the API, drive the runs, or both (engine/runtime/serve.py)."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management import call_command
from django.core.management.base import CommandError

from engine.cli.commands.accounts import first_user_link
from engine.cli.output import Output
from engine.runtime.loader import Loaded, Workflows, load_workflows
from engine.runtime.registry import reload_workflows

__all__ = ["check_arguments", "up_arguments", "worker_arguments", "check", "up", "web", "worker"]


def check_arguments(parser: ArgumentParser) -> None:
    parser.add_argument(
        "--workflows",
        metavar="DIR",
        help="the workflows folder (default: settings.JR2_WORKFLOWS, i.e. $JR2_WORKFLOWS or <project>/workflows)",
    )
    parser.add_argument(
        "--tracebacks",
        action="store_true",
        help="print the whole traceback of each Workflow that is refused or fails to import",
    )


def up_arguments(parser: ArgumentParser) -> None:
    parser.add_argument("addrport", nargs="?", help="address and port to serve on (default 127.0.0.1:8000)")
    parser.add_argument("--port", type=int, help="the port to serve on (default 8000)")
    parser.add_argument(
        "--debug",
        action="store_true",
        help="Django's debug pages (as JR2_DEBUG=1); never on a server others can reach: they show the settings",
    )


def worker_arguments(parser: ArgumentParser) -> None:
    del parser  # settings come from the environment: DATABASE_URL, REDIS_URL, JR2_HOST_ID, JR2_LEASE_SECONDS...


# -- jr2 check -------------------------------------------------------------------------------------------------


def check(
    out: Output,
    workflows: str | None = None,
    tracebacks: bool = False,
    verbosity: int = 1,
    raise_on_failure: bool = True,
    **options: Any,
) -> None:
    try:
        found = load_workflows(workflows) if workflows else reload_workflows()
    except (FileNotFoundError, NotADirectoryError) as err:
        raise CommandError(f"jr2 check: {err}") from err
    count = len(found.workflows)
    out.line(f"jr2 check: {count} workflow{'s' if count != 1 else ''} in {found.folder}")
    show_tracebacks = tracebacks or verbosity >= 2
    for loaded in found.files:
        if loaded.status == "ok":
            if verbosity >= 1:
                _write_ok(out, loaded)
        elif loaded.failed:
            _write_failed(out, loaded, show_tracebacks)
        elif verbosity >= 1:
            out.line("")
            out.line(loaded.message())
    out.line("")
    out.line(summary(found))
    out.stdout.flush()
    if found.failures and raise_on_failure:
        lines = "\n".join(f"  {f.message()}" for f in found.failures)
        failed = [f for f in found.failures if not f.helper]
        helpers = len(found.failures) - len(failed)
        what = f"{len(failed)} of {count} workflow{'s' if count != 1 else ''}"
        if helpers:
            what += f" and {helpers} helper module{'s' if helpers != 1 else ''}"
        raise CommandError(f"jr2 check failed: {what} did not load:\n{lines}")


def _write_ok(out: Output, loaded: Loaded) -> None:
    machine = loaded.machine
    assert machine is not None
    warnings = machine.warnings()
    named = "" if machine.id == loaded.name else f' (machine "{machine.id}")'
    verdict = f"ok, {len(warnings)} warning{'s' if len(warnings) != 1 else ''}" if warnings else "ok"
    out.line("")
    out.line(f'{loaded.file}: workflow "{loaded.name}"{named}: ' + out.style.SUCCESS(verdict))
    out.line(machine.seats_text(loaded.name))
    for warning in warnings:
        out.line(out.style.WARNING(f"  warning [{warning.code}]: {warning.message}"))


def _write_failed(out: Output, loaded: Loaded, show_traceback: bool) -> None:
    out.line("")
    what = {"refused": "REFUSED", "import-failed": "IMPORT FAILED", "invalid": "NOT VALID"}[loaded.status]
    who = "helper module" if loaded.helper else f'workflow "{loaded.name}"'
    out.line(f"{loaded.file}: {who}: " + out.style.ERROR(what))
    where = f" ({loaded.where})" if loaded.where else ""
    out.line(f"  {loaded.error}{where}")
    if show_traceback and loaded.traceback:
        out.line("  " + loaded.traceback.rstrip().replace("\n", "\n  "))


def summary(found: Workflows) -> str:
    """The check's last line: how many workflows loaded, were refused, failed to import or are not valid."""
    by = {
        status: sum(1 for f in found.files if f.status == status and not f.helper)
        for status in ("ok", "refused", "import-failed", "invalid", "not-a-workflow")
    }
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
        others.append(f"{by['not-a-workflow']} module{'s' if by['not-a-workflow'] != 1 else ''} without `machine`")
    if helpers:
        others.append(
            f"{len(helpers)} helper module{'s' if len(helpers) != 1 else ''} (`_` prefix)"
            + (f", {broken_helpers} failed to import" if broken_helpers else "")
        )
    if others:
        line += "; not workflows: " + ", ".join(others)
    return line


# -- jr2 up, web, worker ---------------------------------------------------------------------------------------


def up(
    out: Output,
    addrport: str | None = None,
    port: int | None = None,
    verbosity: int = 1,
    role: str = "up",
    debug: bool = False,
    **options: Any,
) -> None:
    """What `check` does (seats of every workflow included), then migrate, then serve the Console and the API
    with daphne while this process's host drives the runs (live ones are taken up again)."""
    from django.conf import settings

    from engine.runtime.serve import serve

    if debug:  # the console script sets JR2_DEBUG before the settings load; `manage.py jr2 up --debug` lands here
        settings.DEBUG = True

    address, default_port = "127.0.0.1", 8000
    if addrport:
        host_part, _, port_part = addrport.rpartition(":")
        address = host_part or address
        try:
            default_port = int(port_part)
        except ValueError:
            raise CommandError(f"jr2 {role}: {addrport!r} is not ADDRESS:PORT (e.g. 127.0.0.1:8000)") from None
    _prepare(out, verbosity, role, address, port or default_port)
    serve(address, port or default_port, say=out.say, role=role)


def web(out: Output, **options: Any) -> None:
    """`jr2 up` without driving runs: many of these can serve one database beside `jr2 worker` processes."""
    up(out, role="web", **options)


def worker(out: Output, verbosity: int = 1, **options: Any) -> None:
    """Check, migrate, then drive runs until SIGTERM (see engine/runtime/serve.py `work`)."""
    from engine.runtime.serve import work

    _prepare(out, verbosity, "worker")
    work(say=out.say)


def _prepare(out: Output, verbosity: int, role: str, address: str = "127.0.0.1", port: int = 8000) -> None:
    """What every server process does first: check the workflows (seats printed) and JR2_MODEL_OVERRIDE,
    migrate, and say what will play the Agents and how to log in (the first start makes the first user)."""
    from engine.runtime.players import check_model_overrides, model_overrides, offline_notice
    from engine.runtime.providers import DEFAULT_PROVIDERS
    from engine.runtime.providers._config import setting_dict
    from engine.runtime.registry import workflows

    check(out, verbosity=verbosity, workflows=None, raise_on_failure=False)
    declared = {
        f"{name}.{slot}": agent.model
        for name, machine in workflows().machines.items()
        for slot, agent in machine.agents.items()
    }
    problems = check_model_overrides(declared, setting_dict("JR2_PROVIDERS", DEFAULT_PROVIDERS))
    if problems:
        raise CommandError(f"jr2 {role}: " + "; ".join(problems))
    call_command("migrate", interactive=False, verbosity=max(0, verbosity - 1))
    overrides = model_overrides()
    models = {key: overrides.get(key, model) for key, model in declared.items()}
    for key in sorted(overrides):
        out.line(f"JR2_MODEL_OVERRIDE: {key} plays {overrides[key]} (declared {declared[key]})")
    for line in offline_notice(models):
        out.line(out.style.WARNING(line))
    login = first_user_link(role, address, port)
    if login is not None:
        out.line(out.style.SUCCESS(login) if login.startswith("jr2 up: log in") else out.style.WARNING(login))
    out.stdout.flush()
