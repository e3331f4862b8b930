"""Databases for the servers the tests start as subprocesses: a fresh one per server, and reading it back."""

from __future__ import annotations

import atexit
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol

import pytest

__all__ = [
    "fresh_database_url",
    "migrated_database",
    "server_database",
    "all_rows",
    "on_postgres",
    "BROWSER_ON_SQLITE_PASS",
]

ROOT = Path(__file__).resolve().parents[1]


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


def fresh_database_url(template: str | None = None) -> str | None:
    """With DATABASE_URL set to PostgreSQL (the suite's PostgreSQL pass), a new database on that server for one
    live server, as its own SQLite file is otherwise: empty, or a copy of the database `template`; None on
    SQLite."""
    if not on_postgres():
        return None
    url = os.environ["DATABASE_URL"]
    import psycopg

    name = f"jr2_e2e_{uuid.uuid4().hex[:12]}"
    copied = f' TEMPLATE "{template}"' if template else ""
    with psycopg.connect(url, autocommit=True) as connection:
        for wait in (0.05, 0.1, 0.2, 0.4, 0.8, 0):
            try:
                connection.execute(f'CREATE DATABASE "{name}"{copied}')
                break
            except psycopg.errors.ObjectInUse:
                # the template's last connection (its migrate) may take a moment to end on the server's side
                if not wait:
                    raise
                time.sleep(wait)
    return url.rsplit("/", 1)[0] + "/" + name


def migrated_database(sqlite_path: Path) -> str | None:
    """A database with every migration applied, for one live server: on the PostgreSQL pass, the URL of a new
    database copied from one migrated once for the session; on SQLite, a copy of a migrated file written at
    `sqlite_path` (None). A server then starts without migrating (about 1.2 s each on a quiet machine, which
    the suite's many servers would spend again and again); `jr2 up`'s own migrate is tested on an empty database
    (tests/engine/test_check_command.py)."""
    template = _migrated_template()
    if on_postgres():
        return fresh_database_url(template)
    if not sqlite_path.exists():
        shutil.copyfile(template, sqlite_path)
    return None


_TEMPLATE: list[str] = []


def _migrated_template() -> str:
    """The session's migrated database: a PostgreSQL database's name, or a SQLite file's path; made on first
    use, dropped at exit."""
    if _TEMPLATE:
        return _TEMPLATE[0]
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "JR2_SQLITE_PATH")}
    if on_postgres():
        url = fresh_database_url()
        assert url is not None
        env["DATABASE_URL"] = url
        made = url.rsplit("/", 1)[1]
        atexit.register(_drop, made)
    else:
        folder = tempfile.mkdtemp(prefix="jr2-test-migrated-")
        atexit.register(shutil.rmtree, folder, True)
        made = str(Path(folder) / "db.sqlite3")
        env["JR2_SQLITE_PATH"] = made
    subprocess.run([sys.executable, str(ROOT / "manage.py"), "migrate", "-v", "0"], cwd=ROOT, env=env, check=True)
    if not on_postgres():
        with sqlite3.connect(made) as lite:  # everything in the file itself, none of it left in its WAL
            lite.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    _TEMPLATE.append(made)
    return made


def _drop(name: str) -> None:
    import psycopg

    with psycopg.connect(os.environ["DATABASE_URL"], autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{name}"')


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
