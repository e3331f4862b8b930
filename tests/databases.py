"""Databases for the servers the tests start as subprocesses."""
from __future__ import annotations

import os

__all__ = ["fresh_database_url"]


def fresh_database_url() -> str | None:
    """With DATABASE_URL set to PostgreSQL (the suite's PostgreSQL pass), a new empty database on that server for
    one live server, as its own SQLite file is otherwise; None on SQLite."""
    url = os.environ.get("DATABASE_URL", "")
    if not url.startswith(("postgres://", "postgresql://")):
        return None
    import uuid

    import psycopg

    name = f"jr2_e2e_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    return url.rsplit("/", 1)[0] + "/" + name
