"""Real jr2 servers for the tests: `jr2 up` (or `jr2 web`) as a subprocess on a free port, with its own database and
a copy of the workflows folder, waited for until it answers, its users and API tokens made through the real
commands, its runs started and its Gates answered over HTTP, and stopped (or killed, as a crash) at the end.

One implementation for every test that needs a live server (tests/e2e, tests/security, tests/fleet and the
`jr2 up` test of tests/engine), so that a change to how a server starts or what it needs is made once."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import httpx

from tests.databases import migrated_database

__all__ = [
    "BIN",
    "ROOT",
    "LiveServer",
    "answered",
    "api_client",
    "copy_workflows",
    "free_port",
    "jr2_script",
    "kill_group",
    "listening",
    "make_server",
    "run_when",
    "served",
    "server_env",
    "spawn",
    "stop_group",
]

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
#: What a server must not inherit from the shell the tests run in: it gets its own database, URL, token and host.
NOT_INHERITED = ("ANTHROPIC_API_KEY", "DATABASE_URL", "JR2_URL", "JR2_TOKEN", "JR2_SCRIPTED", "JR2_HOST_ID")

T = TypeVar("T")


def free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on now (a URL on it is refused until a server takes it)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def listening(port: int) -> bool:
    """Something accepts connections on 127.0.0.1:`port` (an OSError if nothing does)."""
    with socket.create_connection(("127.0.0.1", port), timeout=0.2):
        return True


def jr2_script() -> str:
    """The installed `jr2` console script beside this interpreter: the tests run the command users run."""
    script = shutil.which("jr2", path=str(BIN))
    assert script, f"the jr2 console script is not installed in {BIN} (run `make install`)"
    return script


def copy_workflows(into: Path, files: Mapping[str, str] | None = None) -> Path:
    """A copy of the project's workflows/ folder at `into` (outside the project), plus `files` (name -> source)
    written into it; `into`."""
    shutil.copytree(ROOT / "workflows", into, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for name, source in (files or {}).items():
        (into / name).write_text(source)
    return into


def server_env(folder: Path, workflows: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a server (and of the commands run against it): its workflows, its own migrated database
    (a SQLite file in `folder`, or a new PostgreSQL database on the suite's PostgreSQL pass) and this checkout's
    code, less what the shell running the tests set for itself (NOT_INHERITED)."""
    base = {k: v for k, v in os.environ.items() if k not in NOT_INHERITED}
    env = {
        **base,
        "JR2_WORKFLOWS": str(workflows),
        "JR2_SQLITE_PATH": str(folder / "db.sqlite3"),
        "PYTHONUNBUFFERED": "1",
        "JR2_LEASE_SECONDS": "3",
        # This checkout's code, not the one the `jr2` script was installed from (an editable install elsewhere).
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH", "")])),
        **(extra or {}),
    }
    database = migrated_database(Path(env["JR2_SQLITE_PATH"]))
    if database is not None:
        env["DATABASE_URL"] = database
    return env


def spawn(argv: list[str], *, cwd: Path, env: Mapping[str, str], log: Path) -> subprocess.Popen[str]:
    """A server process in a session of its own (so that it and its children are stopped together), its output to
    `log`."""
    with open(log, "w") as out:
        return subprocess.Popen(
            argv, cwd=cwd, env=dict(env), text=True, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )


def answered(
    probe: Callable[[], T],
    *,
    process: subprocess.Popen[Any] | None = None,
    timeout: float = 60,
    interval: float = 0.1,
    errors: tuple[type[BaseException], ...] = (httpx.HTTPError, OSError),
) -> T | None:
    """`probe`'s first truthy answer, asked again every `interval`; None once `process` has exited or `timeout`
    has passed. An error of `errors` is no answer yet (the server is still starting), so the caller decides what
    a silent server means."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and (process is None or process.poll() is None):
        try:
            value = probe()
        except errors:
            value = None
        if value:
            return value
        time.sleep(interval)
    return None


def stop_group(process: subprocess.Popen[Any] | None, timeout: float = 15) -> None:
    """SIGTERM to the process's group, then SIGKILL if it has not gone within `timeout`."""
    if process is None or process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(process)


def kill_group(process: subprocess.Popen[Any] | None) -> None:
    """SIGKILL to the process's group, as a crash: nothing is flushed or handed back."""
    if process is not None and process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)


def api_client(url: str, token: str, timeout: float = 30) -> httpx.Client:
    """An API client of a server that sends `token`."""
    return httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=timeout)


def run_when(
    client: httpx.Client,
    run_id: str,
    check: Callable[[dict[str, Any]], bool],
    timeout: float = 30,
    what: str = "never got there",
) -> dict[str, Any]:
    """Poll GET /api/runs/<id> until `check(run)`; the run then (else the test fails: "run <id> <what>")."""
    deadline = time.monotonic() + timeout
    while True:
        run = client.get(f"/api/runs/{run_id}").json()
        if check(run):
            return dict(run)
        if time.monotonic() > deadline:
            raise AssertionError(f"run {run_id} {what} within {timeout} s: {run}")
        time.sleep(0.05)


@dataclass
class LiveServer:
    """One `jr2 up` process; `restart()` brings it back on the same database (after a kill, say)."""

    folder: Path
    workflows: Path
    env: dict[str, str]
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[str] | None = None
    token: str = ""
    log: Path = Path()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def database_name(self) -> str:
        """The database's NAME as Django sees it: the SQLite file, or the PostgreSQL database."""
        url = self.env.get("DATABASE_URL")
        return url.rsplit("/", 1)[1] if url else str(self.folder / "db.sqlite3")

    # -- the commands against it -----------------------------------------------------------------------------------

    def jr2(
        self, *args: str, env: dict[str, str] | None = None, input: str | None = None, timeout: float = 60
    ) -> subprocess.CompletedProcess[str]:
        """Run the `jr2` console script against this server's database and URL."""
        return subprocess.run(
            [jr2_script(), *args],
            cwd=self.folder,
            env={**self.env, **(env or {})},
            text=True,
            capture_output=True,
            input=input,
            timeout=timeout,
            check=False,
        )

    def new_token(self, username: str, *extra: str) -> str:
        """`jr2 token create <username> [extra...]`: the new key (a failure fails the test, with its output)."""
        made = self.jr2("token", "create", username, *extra)
        assert made.returncode == 0, made.stdout + made.stderr
        return made.stdout.strip()

    def shell(self, code: str) -> str:
        """`python manage.py shell -c <code>` against this server's database; its stdout (a failure fails the
        test, with its output)."""
        done = subprocess.run(
            [sys.executable, str(ROOT / "manage.py"), "shell", "-c", code],
            cwd=self.folder,
            env=self.env,
            text=True,
            capture_output=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    def add_users(self, groups_of: dict[str, list[str]], password: str | None = None) -> None:
        """Users by name, each in the Console's groups given (one `manage.py shell` for all)."""
        self.shell(
            "from django.contrib.auth import get_user_model\n"
            "from django.contrib.auth.models import Group\n"
            f"for name, groups in {groups_of!r}.items():\n"
            f"    user = get_user_model().objects.create_user(name, password={password!r})\n"
            "    found = Group.objects.filter(name__in=groups)\n"
            "    assert found.count() == len(groups), f'no group among {groups}'\n"
            "    user.groups.add(*found)\n"
        )

    # -- its process -----------------------------------------------------------------------------------------------

    def start(self, extra_env: dict[str, str] | None = None) -> None:
        """`jr2 up` on this server's port, once its API answers; a server that exits or stays silent fails the
        test with its log."""
        self.log = self.folder / f"server-{int(time.time() * 1000)}.log"
        process = spawn(
            [jr2_script(), "up", "--port", str(self.port)],
            cwd=self.folder,
            env={**self.env, **(extra_env or {})},
            log=self.log,
        )
        self.process = process
        if answered(lambda: httpx.get(f"{self.url}/api/openapi.json", timeout=1).status_code == 200, process=process):
            return
        if process.poll() is not None:
            raise AssertionError(f"jr2 up exited with {process.returncode}:\n{self.log.read_text()}")
        raise AssertionError(f"jr2 up did not answer within 60 s:\n{self.log.read_text()}")

    def kill(self) -> None:
        """SIGKILL, as a crash: nothing is flushed or handed back."""
        kill_group(self.process)

    def stop(self) -> None:
        stop_group(self.process)

    def restart(self, extra_env: dict[str, str] | None = None) -> None:
        self.kill()
        self.start(extra_env)

    # -- its API ---------------------------------------------------------------------------------------------------

    def client(self, token: str | None = None) -> httpx.Client:
        return api_client(self.url, token if token is not None else self.token)

    def wait_for(self, run_id: str, *statuses: str, timeout: float = 30) -> dict[str, Any]:
        """Poll GET /api/runs/<id> until its status is one of `statuses`."""
        with self.client() as client:
            return run_when(
                client, run_id, lambda run: run.get("status") in statuses, timeout, what=f"is not {statuses}"
            )

    def start_run(self, workflow: str, door: Any, *statuses: str) -> str:
        """A run of `workflow` started through the API (201 or the test fails); with `statuses`, once it has one
        of them. Its id."""
        with self.client() as client:
            created = client.post(f"/api/workflows/{workflow}/runs", json=door)
            assert created.status_code == 201, created.text
            run_id = str(created.json()["id"])
        if statuses:
            self.wait_for(run_id, *statuses)
        return run_id

    def send(self, run_id: str, gate: str, event: str, **fields: Any) -> httpx.Response:
        """An answer to one of the run's Gates, through the API; the response, whatever it is."""
        with self.client() as client:
            return client.post(f"/api/runs/{run_id}/gates/{gate}/events", json={"type": event, **fields})

    def answer(self, run_id: str, gate: str, event: str, **fields: Any) -> None:
        """An answer to one of the run's Gates that the API takes (200 or the test fails)."""
        sent = self.send(run_id, gate, event, **fields)
        assert sent.status_code == 200, sent.text

    def journal(self, run_id: str) -> list[dict[str, Any]]:
        """The run's journal entries, as the API lists them."""
        with self.client() as client:
            return list(client.get(f"/api/runs/{run_id}/journal").json()["entries"])


def make_server(
    folder: Path, extra_env: dict[str, str] | None = None, files: dict[str, str] | None = None
) -> LiveServer:
    """A started server in `folder` on a copy of the workflows folder, plus `files` (name -> source) written into
    it, after `jr2 check` passed on them (the shipped workflows' check is tests/engine/test_check_command.py's; `jr2
    up` serves beside a workflow it refuses); its token is a user's with every run permission, and JR2_URL and
    JR2_TOKEN in its env point the commands at it."""
    workflows = copy_workflows(folder / "workflows", files)
    server = LiveServer(folder, workflows, server_env(folder, workflows, extra_env))
    if files:
        checked = server.jr2("check")
        assert checked.returncode == 0, checked.stdout + checked.stderr
    server.start()
    try:
        server.token = server.new_token("e2e", "--create-user")
    except BaseException:
        server.stop()
        raise
    server.env["JR2_URL"] = server.url
    server.env["JR2_TOKEN"] = server.token
    return server


@contextmanager
def served(
    folder: Path,
    extra_env: dict[str, str] | None = None,
    files: dict[str, str] | None = None,
    users: dict[str, list[str]] | None = None,
    password: str | None = None,
) -> Iterator[LiveServer]:
    """`make_server`, with `users` (name -> the Console's groups) added, stopped at the end."""
    server = make_server(folder, extra_env, files)
    try:
        if users is not None:
            server.add_users(users, password)
        yield server
    finally:
        server.stop()
