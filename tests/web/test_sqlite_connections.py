"""The SQLite backend keeps the connections Django closes after each request and gives them to the next ones
(jr2/sqlite/base.py): on real files, that a kept connection is the one reused, with the settings' PRAGMAs, that it
sees what others committed since, and that none is kept inside a transaction, past IDLE_KEPT, or for a file made
again under the same name."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.db import connections

from jr2.settings import SQLITE_OPTIONS
from jr2.sqlite.base import IDLE_KEPT, DatabaseWrapper

pytestmark = pytest.mark.django_db  # the suite refuses database access elsewhere


def settings_for(path: Path) -> dict[str, Any]:
    """The settings jr2/settings.py gives a SQLite database, at `path`."""
    settings: dict[str, Any] = {"ENGINE": "jr2.sqlite", "NAME": str(path), "OPTIONS": dict(SQLITE_OPTIONS)}
    return dict(connections.configure_settings({"default": settings})["default"])


@pytest.fixture
def database(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "sub" / "db.sqlite3"
    yield path
    for connection in [opened(path) for _ in range(IDLE_KEPT)]:
        connection.connection.close()  # what the test left kept, closed for good


def opened(path: Path) -> DatabaseWrapper:
    wrapper = DatabaseWrapper(settings_for(path), alias="pooled")
    wrapper.ensure_connection()
    return wrapper


def test_a_closed_connection_is_the_next_ones_with_its_pragmas_and_the_folder_is_made(database: Path) -> None:
    first = opened(database)
    assert database.parent.is_dir(), "the database's folder is made on the first connection"
    raw = first.connection
    first.close()
    assert first.connection is None
    second = opened(database)
    assert second.connection is raw, "the closed connection was kept and given to the next one"
    with second.cursor() as cursor:
        cursor.execute("PRAGMA journal_mode")
        assert cursor.fetchone()[0] == "wal"
        cursor.execute("PRAGMA foreign_keys")
        assert cursor.fetchone()[0] == 1
    second.close()


def test_a_kept_connection_reads_what_another_committed_after_it_was_kept(database: Path) -> None:
    writer = opened(database)
    with writer.cursor() as cursor:
        cursor.execute("CREATE TABLE notes (text TEXT)")
        cursor.execute("INSERT INTO notes VALUES ('one')")
    reader = opened(database)
    with reader.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM notes")
        assert cursor.fetchone()[0] == 1
    kept = reader.connection
    reader.close()
    with writer.cursor() as cursor:
        cursor.execute("INSERT INTO notes VALUES ('two')")
    again = opened(database)
    assert again.connection is kept
    with again.cursor() as cursor:
        cursor.execute("SELECT text FROM notes ORDER BY rowid")
        assert [row[0] for row in cursor.fetchall()] == ["one", "two"]
    again.close()
    writer.close()


def test_a_connection_closed_inside_a_transaction_is_closed_for_good(database: Path) -> None:
    wrapper = opened(database)
    raw = wrapper.connection
    raw.execute("BEGIN IMMEDIATE")
    raw.execute("CREATE TABLE half (x)")
    wrapper.close()
    with pytest.raises(sqlite3.ProgrammingError):
        raw.execute("SELECT 1")
    fresh = opened(database)
    assert fresh.connection is not raw
    with fresh.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM sqlite_master WHERE name = 'half'")
        assert cursor.fetchone()[0] == 0, "what the unfinished transaction did was rolled back"
    fresh.close()


def test_no_more_than_idle_kept_are_kept(database: Path) -> None:
    many = [opened(database) for _ in range(IDLE_KEPT + 3)]
    raws = [wrapper.connection for wrapper in many]
    for wrapper in many:
        wrapper.close()
    closed = 0
    for raw in raws:
        try:
            raw.execute("SELECT 1")
        except sqlite3.ProgrammingError:
            closed += 1
    assert closed == 3


def test_a_file_made_again_under_the_same_name_gets_a_connection_of_its_own(database: Path) -> None:
    old = opened(database)
    with old.cursor() as cursor:
        cursor.execute("CREATE TABLE old_table (x)")
    stale = old.connection
    old.close()
    for leftover in database.parent.glob(database.name + "*"):
        leftover.unlink()
    with sqlite3.connect(database) as made:
        made.execute("CREATE TABLE new_table (x)")
    made.close()
    new = opened(database)
    assert new.connection is not stale
    with new.cursor() as cursor:
        cursor.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        assert [row[0] for row in cursor.fetchall()] == ["new_table"]
    with pytest.raises(sqlite3.ProgrammingError):
        stale.execute("SELECT 1")
    new.close()
