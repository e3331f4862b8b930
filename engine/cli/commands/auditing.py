"""`jr2 audit`: the audit trail from a running server (GET /api/audit), as a table, as CSV (`--csv`) or as the
API's JSON (`--json`): every Gate answer, claim, cancel, seat change and one-tap link use, newest first."""

from __future__ import annotations

import csv
import io
from argparse import ArgumentParser
from typing import Any

from engine.cli.client import Client
from engine.cli.commands.runs import server_arguments
from engine.cli.output import Output

__all__ = ["audit_arguments", "audit"]

COLUMNS = ("at", "user", "action", "workflow", "run", "target", "door", "detail")


def audit_arguments(parser: ArgumentParser) -> None:
    parser.add_argument("--user", help="only what this user did (a username)")
    parser.add_argument("--workflow", help="only in this Workflow's runs")
    parser.add_argument("--since", help="only at or after this moment (ISO 8601: 2026-12-02 or 2026-12-02T08:00)")
    parser.add_argument("--until", help="only before this moment (ISO 8601)")
    shown = parser.add_mutually_exclusive_group()
    shown.add_argument("--csv", action="store_true", help="print CSV, as the Console's export")
    shown.add_argument("--json", action="store_true", help="print the API's JSON")
    server_arguments(parser)


def audit(
    out: Output,
    user: str | None = None,
    workflow: str | None = None,
    since: str | None = None,
    until: str | None = None,
    csv: bool = False,
    json: bool = False,
    url: str | None = None,
    token: str | None = None,
    **options: Any,
) -> None:
    with Client.connect("audit", url, token) as api:
        page = api.get("/api/audit", user=user, workflow=workflow, since=since, until=until)
    rows = page.get("results") or []
    if json:
        out.json(page)
    elif csv:
        out.line(_csv(rows).rstrip("\n"))
    elif not rows:
        out.line("nothing was done that matches")
    else:
        for row in rows:
            out.line(f"{row['at'][:19]}  {row['user'] or '-':<12} {row['action']:<16} {row['run']}  {row['detail']}")


def _csv(rows: list[dict[str, Any]]) -> str:
    text = io.StringIO()
    writer = csv.writer(text)
    writer.writerow(COLUMNS)
    for row in rows:
        writer.writerow(
            ["'" + v if v[:1] in ("=", "+", "-", "@") else v for v in (str(row.get(c, "")) for c in COLUMNS)]
        )
    return text.getvalue()
