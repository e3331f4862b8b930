"""What every engine's module shares: the scripted writer of the peers, the check of a run's output, the meters of
a phase (wall, CPU of this process and of the PostgreSQL server, rows added, per-call latency), and how a module
reads its arguments and hands its result to the driver.

A module measures one engine on one store in one process: a warm-up run, then N runs started ("start": from the
first start call until all N wait for their human), then all N answered ("answer": from the first answer until
all N are done). It writes one JSON object (`Result`) to --json; the driver reads it.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import shutil
import sqlite3
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # `python bench/peers/x.py` as well as `python -m bench.peers.x`
    sys.path.insert(0, str(ROOT))

from bench.console import spread  # noqa: E402
from bench.runtime import CHANGES, WrongResult, expected_notes, vm_rss_kib  # noqa: E402

__all__ = [
    "CHANGES",
    "QUESTION",
    "Meter",
    "PgServer",
    "Result",
    "WrongResult",
    "check_notes",
    "engine_args",
    "expected_notes",
    "fresh_pg_database",
    "pg_rows",
    "reply_of",
    "run_module",
    "sqlite_rows",
    "version",
    "vm_rss_kib",
    "write",
]

#: What the scripted writer asks, in every engine (workflows/notes.py's stand-in asks the same).
QUESTION = "Who reads these notes, and what should they know first?"


def write(changes: str, replies: list[str]) -> tuple[str, str]:
    """The peers' scripted writer, the same as notes' stand-in (workflows/notes.py, `offline_writer`): with no reply
    yet, ("ask", the question); after one, ("done", notes made from the changes and the last reply)."""
    if not replies:
        return ("ask", QUESTION)
    bullets = "\n".join(f"- {line.strip()}" for line in changes.splitlines() if line.strip())
    return ("done", f"## What's new\n\n{bullets}\n\n_Written for: {replies[-1]}_")


def reply_of(i: int, label: str) -> str:
    """The human's reply to run i: a different one per run, so that each output shows its own."""
    return f"Reader {label} {i}"


def check_notes(output: Any, reply: str, what: str) -> None:
    """A finished run's output must be the notes its writer made from its own reply."""
    want = {"notes": expected_notes(reply)}
    if output != want:
        raise WrongResult(f"{what}: output {output!r:.300}, expected {want!r:.300}")


def version(*packages: str) -> str:
    return ", ".join(f"{p} {metadata.version(p)}" for p in packages)


# ----------------------------------------------------------------------------------------------------------------
# Stores: rows, and the PostgreSQL server's CPU
# ----------------------------------------------------------------------------------------------------------------


def sqlite_rows(path: Path) -> Callable[[], int]:
    """Rows in every table of a SQLite file, read on a connection of its own."""

    def count() -> int:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=60) as db:
            tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
            return sum(db.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0] for t in tables)

    return count


def pg_rows(url: str) -> Callable[[], int]:
    """Rows in every table of a PostgreSQL database (every schema but the catalog's), on a connection of its own."""

    def count() -> int:
        import psycopg

        with psycopg.connect(url, autocommit=True) as db:
            tables = db.execute(
                "SELECT table_schema, table_name FROM information_schema.tables WHERE table_type = 'BASE TABLE' "
                "AND table_schema NOT IN ('pg_catalog', 'information_schema')"
            ).fetchall()
            return sum(db.execute(f'SELECT count(*) FROM "{s}"."{t}"').fetchone()[0] for s, t in tables)

    return count


#: The databases this process made, dropped when it ends (`run_module`).
_MADE: list[tuple[str, str]] = []


def fresh_pg_database(url: str, prefix: str) -> str:
    """A new empty database on the server `url` names; its URL."""
    import psycopg

    name = f"{prefix}_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(url, autocommit=True) as db:
        db.execute(f'CREATE DATABASE "{name}"')
    _MADE.append((url, name))
    return url.rsplit("/", 1)[0] + "/" + name


def _drop_made() -> None:
    import psycopg

    while _MADE:
        url, name = _MADE.pop()
        with psycopg.connect(url, autocommit=True) as db:
            db.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


class PgServer:
    """The CPU time of a PostgreSQL server (every process of it): the postmaster's own and its reaped children's
    (a backend that exits is counted there), plus each live child's. Read from /proc: the server runs here."""

    def __init__(self, url: str) -> None:
        import psycopg

        with psycopg.connect(url, autocommit=True) as db:
            backend = db.execute("SELECT pg_backend_pid()").fetchone()[0]
        self.postmaster = int(Path(f"/proc/{backend}/stat").read_text().rsplit(")", 1)[1].split()[1])

    def cpu_s(self) -> float:
        tick = os.sysconf("SC_CLK_TCK")
        fields = Path(f"/proc/{self.postmaster}/stat").read_text().rsplit(")", 1)[1].split()
        total = sum(int(x) for x in fields[11:15]) / tick  # utime, stime, cutime, cstime
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(stat[1]) == self.postmaster:
                total += (int(stat[11]) + int(stat[12])) / tick
        return total


# ----------------------------------------------------------------------------------------------------------------
# The meter of one phase
# ----------------------------------------------------------------------------------------------------------------


@dataclass
class Meter:
    """One phase: wall and CPU time, rows added, and each call's latency (`calls`, seconds). `cpu` is this
    process's CPU unless a module measures another process (jr2 up); `rows` counts the store's rows; `server` is
    the PostgreSQL server, when the store is one. Rows are counted outside the timed span."""

    rows: Callable[[], int]
    server: PgServer | None = None
    cpu: Callable[[], float] = time.process_time
    calls: list[float] = field(default_factory=list)
    out: dict[str, Any] = field(default_factory=dict)

    @contextmanager
    def span(self) -> Iterator[Meter]:
        rows0 = self.rows()
        gc.collect()
        server0 = self.server.cpu_s() if self.server else 0.0
        cpu0, wall0 = self.cpu(), time.perf_counter()
        yield self
        wall, cpu = time.perf_counter() - wall0, self.cpu() - cpu0
        server = self.server.cpu_s() - server0 if self.server else None
        self.out.update(wall_s=wall, cpu_s=cpu, server_cpu_s=server, rows=self.rows() - rows0)
        if self.calls:
            self.out["call_s"] = spread(self.calls)

    def timed(self, call: Callable[[], Any]) -> Any:
        """`call()`, its latency kept."""
        t = time.perf_counter()
        value = call()
        self.calls.append(time.perf_counter() - t)
        return value

    async def atimed(self, call: Awaitable[Any]) -> Any:
        """`await call`, its latency kept (from when it is awaited: at once, inside a gather)."""
        t = time.perf_counter()
        value = await call
        self.calls.append(time.perf_counter() - t)
        return value


@dataclass
class Result:
    """What a module hands the driver, as JSON."""

    engine: str
    store: str
    runs: int
    versions: str
    config: str
    #: What a start call and an answer call return after (their latency is measured up to there).
    acknowledged: str
    start: dict[str, Any] = field(default_factory=dict)
    answer: dict[str, Any] = field(default_factory=dict)
    rss_per_waiting_kib: float | None = None
    wrong: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def engine_args(prog: str, stores: tuple[str, ...]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog=prog)
    ap.add_argument("--store", choices=stores, required=True)
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--label", default="r1", help="the round, in the replies")
    ap.add_argument("--json", type=Path, required=True, help="where the Result goes")
    args = ap.parse_args()
    args.tmp = Path(tempfile.mkdtemp(prefix="peers-"))  # the module's scratch folder, removed by `run_module`
    if args.store == "postgres" and not os.environ.get("DATABASE_URL", "").startswith(("postgres", "postgresql")):
        ap.error("--store postgres needs DATABASE_URL (run under scripts/services run)")
    return args


def run_module(args: argparse.Namespace, measure: Callable[[argparse.Namespace], Result]) -> int:
    """Measure, and write the Result (a wrong output is kept as `wrong`, and exits 1); then remove the scratch
    folder (`args.tmp`) and the databases made."""
    try:
        result = measure(args)
    except WrongResult as err:
        result = Result("", args.store, args.runs, "", "", "", wrong=str(err))
    finally:
        shutil.rmtree(args.tmp, ignore_errors=True)
        _drop_made()
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(asdict(result), indent=2, default=str))
    return 1 if result.wrong else 0
