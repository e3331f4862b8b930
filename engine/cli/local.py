"""The command line's reads of this project's own database (`jr2 replay`, `jr2 export` without --url): a run named
by its id or a prefix of it, as `Client.resolve` names one through the API."""

from __future__ import annotations

from collections.abc import Callable

from engine.cli.client import CliError, one_line
from engine.models import Run

__all__ = ["run_by_prefix", "database_name"]


def database_name() -> str:
    from django.db import connection

    return str(connection.settings_dict.get("NAME"))


def run_by_prefix(
    command: str, prefix: str, listed: Callable[[Run], str] = lambda run: run.id, unreadable: str = ""
) -> Run:
    """The one run whose id is `prefix`, or else the only one whose id starts with it (4 characters at least).
    Each failure is a CliError naming `command`: none or several runs (several are listed, each by `listed`), or a
    database that cannot be read (`unreadable` added to the words: what to do about it)."""
    from django.db import DatabaseError

    if len(prefix) < 4:
        raise CliError(f"jr2 {command}: a run id or a prefix of at least 4 characters is needed; got {prefix!r}")
    try:
        runs = list(Run.objects.filter(id__startswith=prefix).order_by("-created_at")[:20])
    except DatabaseError as err:
        raise CliError(
            f"jr2 {command}: cannot read the runs in the database ({database_name()}): {one_line(str(err))}{unreadable}"
        ) from err
    exact = next((run for run in runs if run.id == prefix), None)
    if exact is not None:
        return exact
    if not runs:
        raise CliError(f"jr2 {command}: no run id starts with {prefix!r} in the database ({database_name()})")
    if len(runs) > 1:
        raise CliError(
            f"jr2 {command}: {len(runs)} runs start with {prefix!r}: {', '.join(map(listed, runs))}; give "
            "more characters"
        )
    return runs[0]
