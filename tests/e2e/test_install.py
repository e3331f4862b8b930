"""jr2 as a team adopts it: the wheel built from this checkout, installed in a fresh virtualenv outside the
repository; then, from that install only, `jr2 init` a project, `jr2 check` it, `jr2 up` it on a free port, follow
the login link it prints in chromium, start a notes run from the form, answer its Gate, and see it done. The link
works once; nothing is written inside the virtualenv (the project's data is in its own `.jr2/`).

Slow (it builds a wheel and installs it with its dependencies, from pip's cache when warm), and it proves what no
other test does: that the package, not the checkout, carries the Console."""

from __future__ import annotations

import os
import re
import sqlite3
import subprocess
import sys
import venv
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, expect

from tests.browsers import WS_WATCH, settled
from tests.databases import on_postgres
from tests.live_server import ROOT, answered, free_port, spawn, stop_group

pytestmark = [
    pytest.mark.slow,
    # A new user's project runs on its own SQLite file whatever the pass (the environment is a new shell's), so the
    # PostgreSQL pass would run the same 80 s again.
    pytest.mark.skipif(
        on_postgres(),
        reason="a new project is on SQLite in either pass; the SQLite pass runs it",
    ),
]

LINK = re.compile(r"jr2 up: log in at (http://127\.0\.0\.1:\d+/login/[A-Za-z0-9_-]+/)")


def _files(folder: Path) -> dict[str, tuple[int, int]]:
    """Every file below `folder` with its size and modification time."""
    out = {}
    for path in folder.rglob("*"):
        if path.is_file() and not path.is_symlink():
            stat = path.stat()
            out[str(path.relative_to(folder))] = (stat.st_size, stat.st_mtime_ns)
    return out


def _run_row(database: Path, run_id: str) -> str:
    """A run's row and its journal's kinds as the project's database holds them (what a failure shows)."""
    with sqlite3.connect(database) as db:
        row = db.execute("SELECT status, seq, lease_owner, view FROM engine_run WHERE id = ?", (run_id,)).fetchone()
        kinds = [
            k for (k,) in db.execute("SELECT kind FROM engine_journalentry WHERE run_id = ? ORDER BY seq", (run_id,))
        ]
    return f"{row!r:.2500} journal: {kinds}"


def _clean_env(home: Path) -> dict[str, str]:
    """An environment as a new user's shell has it: none of this checkout's or the test run's settings."""
    keep = (
        "PATH",
        "LANG",
        "LC_ALL",
        "TMPDIR",
        "PIP_INDEX_URL",
        "PIP_EXTRA_INDEX_URL",
        "PIP_FIND_LINKS",
        "PIP_CONFIG_FILE",
        "PIP_TRUSTED_HOST",
        "XDG_CACHE_HOME",
        "PIP_CACHE_DIR",
    )
    env = {k: v for k, v in os.environ.items() if k in keep}
    env.update(HOME=str(home), PYTHONUNBUFFERED="1")
    return env


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, str]]]:
    """A virtualenv outside the repository with the wheel of this checkout installed, and its environment."""
    root = tmp_path_factory.mktemp("install")
    dist = root / "dist"
    subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--outdir", str(dist), str(ROOT)],
        check=True,
        capture_output=True,
        text=True,
    )
    [wheel] = dist.glob("jr2-*.whl")
    env_dir = root / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    env = _clean_env(root / "home")
    (root / "home").mkdir()
    env["PATH"] = f"{env_dir / 'bin'}{os.pathsep}{env['PATH']}"
    pip = subprocess.run(
        [str(env_dir / "bin" / "pip"), "install", "--quiet", str(wheel)],
        env={**env, "HOME": os.environ.get("HOME", str(root / "home"))},
        capture_output=True,
        text=True,
    )
    assert pip.returncode == 0, pip.stderr[-3000:]
    yield env_dir, env


def test_a_new_project_from_the_installed_wheel_runs_a_notes_run_to_done(
    installed: tuple[Path, dict[str, str]], browser: Browser, tmp_path: Path
) -> None:
    env_dir, env = installed
    jr2 = str(env_dir / "bin" / "jr2")
    before = _files(env_dir)

    made = subprocess.run([jr2, "init", "myproject"], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert made.returncode == 0, made.stderr
    project = tmp_path / "myproject"
    assert (project / "workflows" / "notes.py").is_file() and (project / ".gitignore").read_text().count(".jr2/")
    again = subprocess.run([jr2, "init", "myproject"], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert again.returncode != 0 and "already exist" in again.stderr and "notes.py" in again.stderr

    checked = subprocess.run([jr2, "check"], cwd=project, env=env, capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr
    assert "notes.writing agent:writer: [ask, done]" in checked.stdout

    port = free_port()
    log = tmp_path / "up.log"
    server = spawn([jr2, "up", f"127.0.0.1:{port}"], cwd=project, env=env, log=log)
    try:
        link = answered(lambda: (m := LINK.search(log.read_text())) and m.group(1), process=server, timeout=120)
        assert link, log.read_text()[-3000:]
        assert answered(
            lambda: httpx.get(f"http://127.0.0.1:{port}/accounts/login/").status_code == 200, process=server, timeout=60
        ), log.read_text()[-3000:]

        context = browser.new_context()
        context.add_init_script(WS_WATCH)
        tab = context.new_page()
        tab.goto(link)
        expect(tab.locator("header .who")).to_contain_text("admin")
        tab.goto(f"http://127.0.0.1:{port}/workflows/notes/")
        start = tab.locator("#start")
        start.locator("[name=changes]").fill("Faster start.\nFix the login page.")
        start.get_by_role("button", name="Start").click()
        tab.wait_for_url(re.compile(r"/runs/[a-z0-9]+/$"))
        form = tab.locator("#run-gates form.gate-form[data-event=reply]")
        expect(form).to_be_visible(timeout=30_000)
        settled(tab)  # as a person reads the page first: a click while its Gate region is swapped is lost
        form.locator("textarea[name=text]").fill("Operators of the service")
        form.get_by_role("button", name="Send reply").click()
        try:
            expect(tab.locator("#run-status-badge")).to_have_text("done", timeout=30_000)
        except AssertionError as err:
            run = _run_row(project / ".jr2" / "db.sqlite3", tab.url.rstrip("/").rsplit("/", 1)[-1])
            raise AssertionError(f"{err}\nthe run: {run}\nthe server's log: {log.read_text()[-4000:]}") from None
        expect(tab.locator("body")).to_contain_text("Written for: Operators of the service")

        second = browser.new_context().new_page()
        response = second.goto(link)
        assert response is not None and response.status == 403
        expect(second.get_by_role("heading", level=1)).to_have_text("This login link does not work")
        context.close()
    finally:
        stop_group(server)

    assert (project / ".jr2" / "db.sqlite3").is_file()
    after = _files(env_dir)
    written = sorted(name for name in after if before.get(name) != after[name])
    assert written == [], f"written inside the virtualenv: {written[:20]}"
