"""Django's SQLite backend, which makes the database's folder on its first connection (the project's `.jr2/`
appears when jr2 first needs its database, not when the settings are merely read: `jr2 init`, `jr2 --help`), and
keeps a few closed connections open for the next request.

Under ASGI each request's database work runs on a thread of its own, so the settings keep no connection between
requests (CONN_MAX_AGE 0) and Django opens and closes one for every request: a new `sqlite3` connection, its forty
SQL functions registered, its PRAGMAs run: a quarter of the request threads' time under API reads. A SQLite
connection is a file handle, not a server's session: one that is closed outside any transaction is kept instead
(at most `IDLE_KEPT` per database file) and the next connection to that file takes it, as it was left, with the
same PRAGMAs and functions. One whose file was replaced since (a test database made again) is closed instead: the
kept connection holds its file open, so a new file at that name cannot have the old one's inode.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from pathlib import Path
from typing import Any

from django.db.backends.sqlite3 import base

__all__ = ["DatabaseWrapper", "IDLE_KEPT"]

#: Closed connections kept per database file: about as many as the requests a busy server runs at once (each kept
#: one holds its file open and the pages it has cached, up to SQLite's 2 MiB).
IDLE_KEPT = 16

_idle: dict[str, list[tuple[sqlite3.Connection, tuple[int, int, int]]]] = {}
_folders_made: set[str] = set()
_lock = threading.Lock()


def _file_of(name: str) -> tuple[int, int, int] | None:
    """The file's (device, inode) and this process, so that a kept connection is only given back to the same file,
    and never to a child process forked with it."""
    try:
        found = os.stat(name)
    except OSError:
        return None
    return (found.st_dev, found.st_ino, os.getpid())


class DatabaseWrapper(base.DatabaseWrapper):
    def get_new_connection(self, conn_params: dict[str, Any]) -> Any:
        name = str(conn_params.get("database", ""))
        if not name or name == ":memory:" or name.startswith("file:"):
            return super().get_new_connection(conn_params)
        file = _file_of(name)
        with _lock:
            kept = _idle.get(name)
            while kept:
                connection, its_file = kept.pop()
                if its_file == file:
                    connection.execute("PRAGMA foreign_keys = ON")  # as a new one has it, whatever its last user did
                    return connection
                connection.close()
            if name not in _folders_made:
                Path(name).parent.mkdir(parents=True, exist_ok=True)
                _folders_made.add(name)
        return super().get_new_connection(conn_params)

    def _close(self) -> None:
        connection = self.connection
        name = str(self.settings_dict.get("NAME", ""))
        if connection is None or self.is_in_memory_db() or name.startswith("file:") or connection.in_transaction:
            super()._close()
            return
        file = _file_of(name)
        with _lock:
            kept = _idle.setdefault(name, [])
            if file is not None and len(kept) < IDLE_KEPT:
                kept.append((connection, file))
                return
        super()._close()
