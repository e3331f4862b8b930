"""A live jr2 server for end-to-end tests: `jr2 up` as a real subprocess on a free port, with its own SQLite file
and a copy of the workflows folder, and an API token for a user with every run permission."""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import httpx
import pytest

from tests.databases import fresh_database_url

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


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

    def jr2(self, *args: str, env: dict[str, str] | None = None, input: str | None = None,
            timeout: float = 60) -> subprocess.CompletedProcess[str]:
        """Run the `jr2` console script against this server's database and URL."""
        script = shutil.which("jr2", path=str(BIN))
        assert script, f"the jr2 console script is not installed in {BIN}"
        return subprocess.run([script, *args], cwd=self.folder, env={**self.env, **(env or {})}, text=True,
                              capture_output=True, input=input, timeout=timeout)

    def shell(self, code: str) -> str:
        """`python manage.py shell -c <code>` against this server's database; its stdout (a failure fails the
        test, with its output)."""
        done = subprocess.run([sys.executable, str(ROOT / "manage.py"), "shell", "-c", code], cwd=self.folder,
                              env=self.env, text=True, capture_output=True, timeout=60)
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    def add_users(self, groups_of: dict[str, list[str]], password: str | None = None) -> None:
        """Users by name, each in the Console's groups given (one `manage.py shell` for all)."""
        self.shell("from django.contrib.auth import get_user_model\n"
                   "from django.contrib.auth.models import Group\n"
                   f"for name, groups in {groups_of!r}.items():\n"
                   f"    user = get_user_model().objects.create_user(name, password={password!r})\n"
                   "    found = Group.objects.filter(name__in=groups)\n"
                   "    assert found.count() == len(groups), f'no group among {groups}'\n"
                   "    user.groups.add(*found)\n")

    def start(self, extra_env: dict[str, str] | None = None) -> None:
        script = shutil.which("jr2", path=str(BIN))
        assert script
        self.log = self.folder / f"server-{int(time.time() * 1000)}.log"
        with open(self.log, "w") as out:
            self.process = subprocess.Popen([script, "up", "--port", str(self.port)], cwd=self.folder,
                                            env={**self.env, **(extra_env or {})}, text=True, stdout=out,
                                            stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"jr2 up exited with {self.process.returncode}:\n{self.log.read_text()}")
            try:
                if httpx.get(f"{self.url}/api/openapi.json", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise AssertionError(f"jr2 up did not answer within 60 s:\n{self.log.read_text()}")

    def kill(self) -> None:
        """SIGKILL, as a crash: nothing is flushed or handed back."""
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill()

    def restart(self, extra_env: dict[str, str] | None = None) -> None:
        self.kill()
        self.start(extra_env)

    def client(self, token: str | None = None) -> httpx.Client:
        headers = {"Authorization": f"Bearer {token if token is not None else self.token}"}
        return httpx.Client(base_url=self.url, headers=headers, timeout=30)

    def wait_for(self, run_id: str, *statuses: str, timeout: float = 30) -> dict[str, Any]:
        """Poll GET /api/runs/<id> until its status is one of `statuses`."""
        deadline = time.monotonic() + timeout
        with self.client() as client:
            while True:
                run = client.get(f"/api/runs/{run_id}").json()
                if run.get("status") in statuses:
                    return dict(run)
                if time.monotonic() > deadline:
                    raise AssertionError(f"run {run_id} is {run.get('status')}, not {statuses}: {run}")
                time.sleep(0.05)


def make_server(tmp: Path, extra_env: dict[str, str] | None = None,
                files: dict[str, str] | None = None) -> LiveServer:
    """A started server on a copy of the workflows folder, plus `files` (name -> source) written into it."""
    folder = tmp
    workflows = folder / "workflows"
    shutil.copytree(ROOT / "workflows", workflows, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for name, source in (files or {}).items():
        (workflows / name).write_text(source)
    base = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "DATABASE_URL", "JR2_URL",
                                                             "JR2_TOKEN", "JR2_SCRIPTED")}
    env = {**base, "JR2_WORKFLOWS": str(workflows), "JR2_SQLITE_PATH": str(folder / "db.sqlite3"),
           "PYTHONUNBUFFERED": "1", "JR2_LEASE_SECONDS": "3",
           # This checkout's code, not the one the `jr2` script was installed from (an editable install elsewhere).
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH", "")])),
           **(extra_env or {})}
    database = fresh_database_url()
    if database is not None:
        env["DATABASE_URL"] = database
    server = LiveServer(folder, workflows, env)
    checked = server.jr2("check")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    server.start()
    try:
        made = server.jr2("token", "create", "e2e", "--create-user")
        assert made.returncode == 0, made.stderr
    except BaseException:
        server.stop()
        raise
    server.token = made.stdout.strip()
    server.env["JR2_URL"] = server.url
    server.env["JR2_TOKEN"] = server.token
    return server


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """One server for a test module (runs are independent, so tests share it)."""
    server = make_server(tmp_path_factory.mktemp("live"))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def fresh(tmp_path: Path) -> Iterator[LiveServer]:
    """A server of its own, for tests that kill and restart it."""
    server = make_server(tmp_path)
    try:
        yield server
    finally:
        server.stop()
