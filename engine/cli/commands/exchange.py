"""`jr2 export` and `jr2 import`: a run as one JSON file (format jr2.run), out of and into this project's database,
or with --url a server's API.

The file format is engine/web/exchange.py's. engine.cli sits beside engine.web in the layers and imports none of
it, so the management command hands the format in (`files`: that module, or anything with its four names).
"""

from __future__ import annotations

from argparse import ArgumentParser
from json import dumps as json_dumps
from typing import Any, Protocol

from engine.cli.client import Client, CliError, one_line, parse_json
from engine.cli.local import database_name, run_by_prefix
from engine.cli.output import Output
from engine.models import Run

__all__ = ["RunFiles", "export_arguments", "import_arguments", "export", "import_"]


class RunFiles(Protocol):
    @property
    def ExchangeError(self) -> type[ValueError]: ...

    def schema(self) -> dict[str, Any]: ...

    def export_run(self, run_id: str) -> dict[str, Any]: ...

    def import_run(self, data: Any, user_id: int | None = None) -> Run: ...


def export_arguments(parser: ArgumentParser) -> None:
    parser.add_argument("run", nargs="?", help="the run's id, or 4 or more of its first characters")
    parser.add_argument("-o", "--output", metavar="FILE", help="write the export here instead of stdout")
    parser.add_argument("--schema", action="store_true", help="print the export format's JSON schema")
    parser.add_argument("--url", help="read the run from this server's API instead of the database")
    parser.add_argument("--token", help="with --url: an API token (default: $JR2_TOKEN)")


def import_arguments(parser: ArgumentParser) -> None:
    parser.add_argument("file", help="a file written by `jr2 export` (- reads stdin)")
    parser.add_argument("--url", help="import through this server's API instead of into the database")
    parser.add_argument("--token", help="with --url: an API token (default: $JR2_TOKEN)")


def export(
    out: Output,
    files: RunFiles,
    run: str | None = None,
    output: str | None = None,
    schema: bool = False,
    url: str | None = None,
    token: str | None = None,
    **options: Any,
) -> None:
    """The run as one JSON file, from the database or with --url from a server's API; --schema: the format's."""
    if schema:
        data: Any = files.schema()
    elif run is None:
        raise CliError("jr2 export: name the run to export (or give --schema)")
    elif url:
        with Client.connect("export", url, token) as api:
            data = api.get(f"/api/runs/{api.resolve(run)}/export")
    else:
        data = files.export_run(run_by_prefix("export", run).id)
    text = json_dumps(data, indent=1, ensure_ascii=False)
    if output is None:
        out.line(text)
        return
    try:
        with open(output, "w", encoding="utf-8") as f:
            f.write(text + "\n")
    except OSError as err:
        raise CliError(f"jr2 export: cannot write {output}: {err.strerror or err}") from err
    out.progress(
        f"jr2 export: run {data['run']['id']} ({len(data['journal'])} journal entries) written to {output}"
        if not schema
        else f"jr2 export: the schema written to {output}"
    )


def import_(
    out: Output, files: RunFiles, file: str, url: str | None = None, token: str | None = None, **options: Any
) -> None:
    """Read an export in, read-only, in one transaction; prints the run's id."""
    from django.db import DatabaseError

    data = parse_json("import", "file", file if file == "-" else "@" + file)
    if url:
        with Client.connect("import", url, token) as api:
            created = api.post("/api/runs/import", data)
        out.line(str(created["id"]))
        return
    try:
        run = files.import_run(data)
    except files.ExchangeError as err:
        raise CliError(f"jr2 import: {file}: {err}") from err
    except DatabaseError as err:
        raise CliError(
            f"jr2 import: cannot write to the database ({database_name()}): {one_line(str(err))}; `jr2 up` migrates it"
        ) from err
    kept = "" if run.id == run.imported_from else f" (its id {run.imported_from} is taken here)"
    out.progress(
        f"jr2 import: run {run.id} of {run.workflow} ({run.status}, {run.seq} journal entries) imported read-only{kept}"
    )
    out.line(run.id)
