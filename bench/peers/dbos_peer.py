"""DBOS 3: notes as a workflow that calls the writer step, publishes its question, waits in `DBOS.recv`, is
resumed with `DBOS.send`, and calls the writer step again for the notes.

    python -m bench.peers.dbos_peer --store sqlite --runs 1000 --json out.json
    DATABASE_URL=postgres://... python -m bench.peers.dbos_peer --store postgres --runs 1000 --json out.json

The workflow: `write` (a `@DBOS.step`, the scripted writer of common.write) asks; `DBOS.set_event("question", ...)`
publishes the question, as a human-in-the-loop DBOS workflow shows it to its human; `DBOS.recv("reply")` waits;
`write` again makes the notes, the workflow's output. DBOS records every step's output (and the event, the
message, the status) in its system database before it goes on.

- PostgreSQL: the system database on a fresh database, DBOS's defaults otherwise (its LISTEN/NOTIFY listener).
- SQLite: the system database on a file, through an engine made here only to set what jr2 uses: WAL and
  synchronous=NORMAL (DBOS's own SQLite engine keeps SQLite's defaults, a rollback journal and synchronous=FULL);
  the rest as DBOS's own engine sets it (IMMEDIATE transactions, busy_timeout 30 s, foreign keys on). A waiting
  `recv` on SQLite learns of a message from DBOS's poller (once a second by default).

`DBOS.start_workflow` returns once the workflow is recorded and runs it on a thread of DBOS's executor, so all N
are started at once from this thread; a run waits once `DBOS.get_event` has its question. Each waiting run holds a
thread, blocked in `recv`.
"""

from __future__ import annotations

import gc
import os
import sys
from functools import partial
from pathlib import Path
from typing import Any

from bench.peers.common import (
    CHANGES,
    QUESTION,
    Meter,
    PgServer,
    Result,
    WrongResult,
    check_notes,
    engine_args,
    fresh_pg_database,
    pg_rows,
    reply_of,
    run_module,
    sqlite_rows,
    version,
    vm_rss_kib,
    write,
)

WAIT_S = 600


def sqlite_engine(path: Path) -> Any:
    """DBOS's SQLite engine (dbos/_sys_db_sqlite.py) with WAL and synchronous=NORMAL on every connection."""
    import sqlalchemy as sa

    engine = sa.create_engine(f"sqlite:///{path}")

    @sa.event.listens_for(engine, "connect")
    def configure(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = "IMMEDIATE"
        dbapi_conn.execute("PRAGMA busy_timeout=30000")
        dbapi_conn.execute("PRAGMA foreign_keys=ON")
        dbapi_conn.execute("PRAGMA journal_mode=WAL")
        dbapi_conn.execute("PRAGMA synchronous=NORMAL")

    return engine


def launch(store: str, tmp: Path) -> tuple[Any, Meter, Meter, str]:
    from dbos import DBOS

    config: dict[str, Any] = {"name": "bench-peers", "run_admin_server": False, "log_level": "WARNING"}
    if store == "sqlite":
        path = tmp / "dbos.sqlite3"
        config["system_database_url"] = f"sqlite:///{path}"
        config["system_database_engine"] = sqlite_engine(path)
        meters = (Meter(sqlite_rows(path)), Meter(sqlite_rows(path)))
        said = "system database on a SQLite file; WAL, synchronous=NORMAL, IMMEDIATE transactions"
    else:
        url = fresh_pg_database(os.environ["DATABASE_URL"], "peers_dbos")
        config["system_database_url"] = url.replace("postgres://", "postgresql://", 1)
        server = PgServer(url)
        meters = (Meter(pg_rows(url), server), Meter(pg_rows(url), server))
        said = "system database on PostgreSQL, DBOS's defaults (pool, LISTEN/NOTIFY)"

    @DBOS.step()
    def writer(changes: str, replies: list[str]) -> list[str]:
        return list(write(changes, replies))

    @DBOS.workflow()
    def notes(changes: str) -> dict[str, Any]:
        _, question = writer(changes, [])
        DBOS.set_event("question", question)
        reply = DBOS.recv("reply", timeout_seconds=WAIT_S)
        if reply is None:
            raise RuntimeError("no reply")
        _, text = writer(changes, [reply])
        return {"notes": text}

    DBOS(config=config)  # type: ignore[arg-type]
    DBOS.launch()
    return notes, meters[0], meters[1], said


def measure(args: Any) -> Result:
    from dbos import DBOS

    notes, start, answer, said = launch(args.store, args.tmp)

    def asked(handle: Any) -> None:
        question = DBOS.get_event(handle.workflow_id, "question", timeout_seconds=WAIT_S)
        if question != QUESTION:
            raise WrongResult(f"workflow {handle.workflow_id}: question {question!r}")

    def finished(handle: Any, reply: str) -> None:
        check_notes(handle.get_result(), reply, f"workflow {handle.workflow_id}")

    try:
        warm = DBOS.start_workflow(notes, CHANGES)
        asked(warm)
        DBOS.send(warm.workflow_id, "Warm", topic="reply")
        finished(warm, "Warm")
        gc.collect()
        rss0 = vm_rss_kib()
        with start.span() as m:
            handles = [m.timed(partial(DBOS.start_workflow, notes, CHANGES)) for _ in range(args.runs)]
            for handle in handles:
                asked(handle)
        gc.collect()
        rss = (vm_rss_kib() - rss0) / args.runs
        replies = [reply_of(i, args.label) for i in range(args.runs)]
        with answer.span() as m:
            for handle, reply in zip(handles, replies):
                m.timed(partial(DBOS.send, handle.workflow_id, reply, topic="reply"))
            for handle, reply in zip(handles, replies):
                finished(handle, reply)
    finally:
        DBOS.destroy(destroy_registry=True)
    return Result(
        engine="DBOS",
        store=args.store,
        runs=args.runs,
        versions=version("dbos", "sqlalchemy"),
        config=said,
        acknowledged="start: `DBOS.start_workflow` returns once the workflow is recorded (it runs on a thread); "
        "answer: `DBOS.send` once the message is",
        start=start.out,
        answer=answer.out,
        rss_per_waiting_kib=rss,
    )


if __name__ == "__main__":
    sys.exit(run_module(engine_args("python -m bench.peers.dbos_peer", ("sqlite", "postgres")), measure))
