"""Django's SQLite backend, which makes the database's folder on its first connection: the project's `.jr2/`
appears when jr2 first needs its database, not when the settings are merely read (`jr2 init`, `jr2 --help`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.db.backends.sqlite3 import base


class DatabaseWrapper(base.DatabaseWrapper):
    def get_new_connection(self, conn_params: dict[str, Any]) -> Any:
        name = str(conn_params.get("database", ""))
        if name and name != ":memory:" and not name.startswith("file:"):
            Path(name).parent.mkdir(parents=True, exist_ok=True)
        return super().get_new_connection(conn_params)
