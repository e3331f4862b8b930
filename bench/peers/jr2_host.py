"""jr2's in-process Host on workflows/notes.py with its scripted writer, on SQLite or PostgreSQL, driven as
bench/runtime.py's `gate_pass` drives it (its helpers, reused): all N runs started at once, waiting at the
`writing.asking` Gate, every Gate answered at once, every run done with the notes made from its own reply.

    python -m bench.peers.jr2_host --store sqlite --runs 1000 --json out.json
    DATABASE_URL=postgres://... python -m bench.peers.jr2_host --store postgres --runs 1000 --json out.json

- SQLite: a fresh file, configured by jr2/settings.py (WAL, synchronous=NORMAL, IMMEDIATE transactions).
- PostgreSQL: a fresh database on the server DATABASE_URL names, jr2/settings.py's defaults.
- Either way one process, as `jr2 up` is: the in-memory channel layer, without the REDIS_URL that
  `scripts/services run` sets (before 2026-12-02's second part of issue 24 the host rows had it, and paid Redis
  notices that no other row pays).

DEBUG off, as in production. `Host.start_run` returns once the run's start is committed; `Host.deliver` once the
Gate answer is journaled and applied. With all N answers sent at once, the last ones wait longer than the default
`JR2_RELAY_WAIT` (2 s), after which `deliver` answers "kept, pending" (InputPending) instead of the delivery: the
bench sets it to 600 s, so that every answer's latency runs to its delivery and every outcome is checked. A run
waits once the host's last commit of it says `waiting`, driven or parked (`Host.held_status`, no read of the
database; checked in the database afterwards: each at its Gate). Runs are parked as the host's settings say
(`JR2_PARK_SECONDS`, default 30 s idle): the answers come at once, so no run is parked and none is taken up
again; with `JR2_PARK_SECONDS=0` every answer takes its run up again first, about 7 ms of CPU a run more
(2026-12-03), and the RSS per waiting run stays the same (it is read while all N wait, before any is parked).
"""

from __future__ import annotations

import asyncio
import gc
import os
import sys
from typing import Any

from bench.peers.common import (
    CHANGES,
    Meter,
    PgServer,
    Result,
    WrongResult,
    engine_args,
    fresh_pg_database,
    pg_rows,
    reply_of,
    run_module,
    sqlite_rows,
    version,
    vm_rss_kib,
)
from bench.runtime import (
    all_waiting,
    answer_all,
    check_gate_runs,
    gate_runs_to_waiting,
    new_host,
    runs_ended,
    setup_django,
    until,
)

#: Every `Host.deliver` waits for its delivery (see above): read by jr2/settings.py, so set before Django starts.
os.environ["JR2_RELAY_WAIT"] = "600"
#: One process, as one `jr2 up` (bench/peers/jr2_up.py) is: the in-memory channel layer, on either database, not
#: the Redis that `scripts/services run` sets for the fleet (whose notices bench/fleet_load.py measures).
os.environ.pop("REDIS_URL", None)


def setup_postgres(url: str) -> None:
    """bench/runtime.py's `setup_django`, on a PostgreSQL database."""
    os.environ["DJANGO_SETTINGS_MODULE"] = "jr2.settings"
    os.environ["DATABASE_URL"] = url
    os.environ["JR2_DEBUG"] = "0"
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    settings.JR2_SCRIPTED = True


async def drive(runs: int, label: str, start: Meter, answer: Meter) -> float:
    from django.conf import settings

    from workflows import notes

    host = new_host({"notes": notes.machine}, f"bench-peers-{label}", int(settings.JR2_SNAPSHOT_EVERY))
    await host.start()
    try:
        [warm] = await gate_runs_to_waiting(host, 1, 60)
        await answer_all(host, {warm: "Warm"}, 60)
        await host.db(check_gate_runs, [warm], "done", {warm: "Warm"})
        gc.collect()
        rss0 = vm_rss_kib()
        with start.span() as m:
            door = {"changes": CHANGES}
            run_ids = list(await asyncio.gather(*(m.atimed(host.start_run("notes", door)) for _ in range(runs))))
            await until(all_waiting(host, run_ids), 60 + runs * 0.2, "all runs to wait")
        gc.collect()
        rss = (vm_rss_kib() - rss0) / runs
        await host.db(check_gate_runs, run_ids, "waiting")
        replies = {run_id: reply_of(i, label) for i, run_id in enumerate(run_ids)}
        with answer.span() as m:
            deliveries = await asyncio.gather(
                *(
                    m.atimed(host.deliver(r, "gate", gate="writing.asking", event="reply", params={"text": text}))
                    for r, text in replies.items()
                )
            )
            bad = [d for d in deliveries if d.outcome != "delivered"]
            if bad:
                raise WrongResult(f"{len(bad)} Gate answers were not delivered: {bad[0]!r:.200}")
            await runs_ended(host, replies, 60 + runs * 0.2)
        await host.db(check_gate_runs, run_ids, "done", replies)
    finally:
        await host.stop()
    return rss


def measure(args: Any) -> Result:
    if args.store == "sqlite":
        path = args.tmp / "jr2.sqlite3"
        setup_django(path, debug=False)
        start, answer = Meter(sqlite_rows(path)), Meter(sqlite_rows(path))
        config = (
            "the in-process Host on a SQLite file: WAL, synchronous=NORMAL, IMMEDIATE (jr2/settings.py); "
            "in-memory channel layer"
        )
    else:
        url = fresh_pg_database(os.environ["DATABASE_URL"], "peers_jr2")
        setup_postgres(url)
        server = PgServer(url)
        start, answer = Meter(pg_rows(url), server), Meter(pg_rows(url), server)
        config = "the in-process Host on PostgreSQL (jr2/settings.py's defaults); in-memory channel layer"
    rss = asyncio.run(drive(args.runs, args.label, start, answer))
    return Result(
        engine="jr2 Host",
        store=args.store,
        runs=args.runs,
        versions=version("jr2", "django"),
        config=config,
        acknowledged="start: `Host.start_run` returns once the start is committed; answer: `Host.deliver` once "
        "the answer is journaled",
        start=start.out,
        answer=answer.out,
        rss_per_waiting_kib=rss,
    )


if __name__ == "__main__":
    sys.exit(run_module(engine_args("python -m bench.peers.jr2_host", ("sqlite", "postgres")), measure))
