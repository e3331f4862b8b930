"""A live `jr2 up` for the security tests, with a user per role and a workflow that hands its input to a command
Effect's argv; helpers to log in through the real login form (with its CSRF token) and to read a form's fields."""

from __future__ import annotations

import re
from collections.abc import Iterator

import httpx
import pytest

from tests.databases import server_database
from tests.live_server import LiveServer, served

PASSWORD = "a long test password"
#: username -> groups: the roles of docs/console.md ("Who may do what").
ROLES = {"observer": [], "answerer": ["gate-answerers"], "operator": ["operators"]}

#: A workflow whose door input goes, as one argument, to a command Effect; the command prints its argv back.
ECHO = '''"""Echo: the door's text goes to a command Effect as one argument (no shell)."""
import sys

from pydantic import BaseModel

from engine import assign, effect, jr2_setup


class Door(BaseModel):
    text: str


machine = jr2_setup(events=[], actors={
    "echo": effect.command([sys.executable, "-c", "import json, sys; print(json.dumps(sys.argv[1:]))"]),
}).create_machine({
    "id": "echo",
    "input": Door,
    "context": lambda input: {"text": input.text, "printed": ""},
    "initial": "running",
    "states": {
        "running": {"invoke": {"src": "echo", "input": lambda context: {"args": [context["text"]]},
                               "onDone": {"target": "printed",
                                          "actions": assign(printed=lambda event: event.output["stdout"])}}},
        "printed": {"type": "final"},
    },
    "output": lambda context: {"printed": context["printed"]},
})
'''


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    with served(
        tmp_path_factory.mktemp("security"),
        {"JR2_LEASE_SECONDS": "15"},
        files={"echo.py": ECHO},
        users=ROLES,
        password=PASSWORD,
    ) as server:
        yield server


def csrf_of(html: str) -> str:
    found = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html)
    assert found, "the page has no CSRF token"
    return found.group(1)


def log_in(server: LiveServer, username: str) -> httpx.Client:
    """A client logged in through the login form, as a browser does (CSRF cookie and token, then the POST)."""
    client = httpx.Client(base_url=server.url, timeout=30)
    page = client.get("/accounts/login/")
    done = client.post(
        "/accounts/login/",
        data={"username": username, "password": PASSWORD, "csrfmiddlewaretoken": csrf_of(page.text), "next": "/"},
        headers={"Referer": f"{server.url}/accounts/login/"},
    )
    assert done.status_code == 302 and done.headers["location"] == "/", (done.status_code, done.text[:300])
    return client


def database_rows(
    server: LiveServer, tables: tuple[str, ...] = ("engine_run", "engine_journalentry", "engine_seat")
) -> dict[str, int]:
    """How many rows the tables that an action changes hold, and the runs' statuses and seqs."""
    with server_database(server) as conn:
        found: dict[str, object] = {t: conn.execute(f'SELECT COUNT(*) FROM "{t}"').fetchone()[0] for t in tables}
        found["runs"] = conn.execute("SELECT id, status, seq FROM engine_run ORDER BY id").fetchall()
    return found  # type: ignore[return-value]
