"""Databases for the servers the tests start as subprocesses: a fresh one per server, and reading it back."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol

import pytest

__all__ = ["fresh_database_url", "server_database", "all_rows", "on_postgres", "BROWSER_ON_SQLITE_PASS"]


def on_postgres() -> bool:
    """Whether this is the suite's PostgreSQL pass (`scripts/services run` sets DATABASE_URL)."""
    return os.environ.get("DATABASE_URL", "").startswith(("postgres://", "postgresql://"))


#: The mark of the Console's browser tests: the pages, their scripts and their live updates are the same on either
#: database, so they run in the SQLite pass only. The PostgreSQL pass reads the same pages through Django's test
#: client (tests/console/), and the fleet's browser tests watch live pages over PostgreSQL and Redis there.
BROWSER_ON_SQLITE_PASS = pytest.mark.skipif(
    on_postgres(), reason="a browser test: the same pages on either database; the SQLite pass runs it"
)


class _Server(Protocol):
    folder: Path
    env: dict[str, str]


class _Reader(Protocol):
    def execute(self, sql: str, params: tuple[Any, ...] = ...) -> Any: ...


def fresh_database_url() -> str | None:
    """With DATABASE_URL set to PostgreSQL (the suite's PostgreSQL pass), a new empty database on that server for
    one live server, as its own SQLite file is otherwise; None on SQLite."""
    if not on_postgres():
        return None
    url = os.environ["DATABASE_URL"]
    import uuid

    import psycopg

    name = f"jr2_e2e_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    return url.rsplit("/", 1)[0] + "/" + name


@contextmanager
def server_database(server: _Server) -> Iterator[_Reader]:
    """A connection to a live server's database, whichever it is (its SQLite file read-only, or its PostgreSQL
    database), for reading what the server wrote: `execute(sql)` is the same on both (parameters are spelt `?` on
    SQLite, `%s` on PostgreSQL)."""
    url = server.env.get("DATABASE_URL")
    if url:
        import psycopg

        with psycopg.connect(url, autocommit=True) as pg:
            yield pg
        return
    lite = sqlite3.connect(f"file:{server.folder / 'db.sqlite3'}?mode=ro", uri=True, timeout=30)
    try:
        yield lite
    finally:
        lite.close()


def all_rows(server: _Server, leave_out: Iterable[tuple[str, str]] = ()) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table of a live server's database, less the (table, column)s in `leave_out`, each
    table's rows in a stable order."""
    skip = set(leave_out)
    found: dict[str, list[tuple[Any, ...]]] = {}
    with server_database(server) as conn:
        if server.env.get("DATABASE_URL"):
            tables = [r[0] for r in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")]
            columns = {
                t: [
                    r[0]
                    for r in conn.execute(
                        "SELECT column_name FROM information_schema.columns WHERE table_schema = 'public' AND "
                        "table_name = %s ORDER BY ordinal_position",
                        (t,),
                    )
                ]
                for t in tables
            }
        else:
            tables = [
                r[0]
                for r in conn.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
                )
            ]
            columns = {t: [r[1] for r in conn.execute(f'PRAGMA table_info("{t}")')] for t in tables}
        for table in sorted(tables):
            quoted = ", ".join(f'"{c}"' for c in columns[table] if (table, c) not in skip)
            found[table] = sorted(conn.execute(f'SELECT {quoted} FROM "{table}"').fetchall(), key=repr)
    return found
