"""jr2 through its HTTP API: a real `jr2 up` (bench/console.py's `Server`: a fresh SQLite file, the scripted
writer, an API token made with `jr2 token create`), driven as bench/fleet_load.py's `runs_round` drives it.

    python -m bench.peers.jr2_up --store sqlite --runs 1000 --json out.json

N runs are started with `POST /api/workflows/notes/runs` (at most --concurrency requests in flight), until all N
are `waiting` (polled with `GET /api/runs?status=waiting`); every Gate is answered with `POST
/api/runs/<id>/gates/writing.asking/events`, until all N are `done`; every run's output and journal are checked
through the API. The client is bench/lean_http.py's (keep-alive connections on asyncio streams): httpx spent more
CPU per POST than the server did, and on two cores the round then timed the client. The CPU is the `jr2 up`
process's (the engine), not this client's; the latency is each POST's, from request to response (201: the run's
start committed; 200: the answer delivered). The rows are those the whole
round added (the two phases are not split: `runs_round` measures both in one call).
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from bench.console import Server
from bench.fleet_load import runs_round
from bench.lean_http import LeanClient
from bench.peers.common import Result, engine_args, run_module, sqlite_rows, version

CONCURRENCY = 50


async def drive(server: Server, runs: int, label: str) -> dict[str, Any]:
    async with LeanClient(server.url, CONCURRENCY) as http:
        await runs_round(server, http, 5, CONCURRENCY, "warm-up")
        rows = sqlite_rows(server.tmp / "server.sqlite3")
        rows0 = rows()
        out = await runs_round(server, http, runs, CONCURRENCY, label)
        out["rows"] = rows() - rows0
        return out


def measure(args: Any) -> Result:
    server = Server(args.tmp, debug=False)
    server.start()
    try:
        out = asyncio.run(drive(server, args.runs, args.label))
    finally:
        server.stop()
    return Result(
        engine="jr2 up (HTTP)",
        store=args.store,
        runs=args.runs,
        versions=version("jr2", "django", "daphne"),
        config=f"`jr2 up` on a SQLite file (WAL, synchronous=NORMAL), {CONCURRENCY} API requests in flight "
        "(bench/lean_http.py's keep-alive client)",
        acknowledged="start: POST .../runs answers 201 once the start is committed; answer: POST "
        ".../gates/<gate>/events answers 200 once delivered",
        start={
            "wall_s": out["all_waiting_s"],
            "cpu_s": out["host_cpu_start_s"],
            "server_cpu_s": None,
            "rows": None,
            "call_s": out["post_start_s"],
        },
        answer={
            "wall_s": out["all_done_s"],
            "cpu_s": out["host_cpu_answer_s"],
            "server_cpu_s": None,
            "rows": None,
            "call_s": out["post_answer_s"],
        },
        rss_per_waiting_kib=out["kib_per_waiting_run"],
        extra={"rows_whole_round": out["rows"], "posted_s": out["posted_s"], "answered_s": out["answered_s"]},
    )


if __name__ == "__main__":
    sys.exit(run_module(engine_args("python -m bench.peers.jr2_up", ("sqlite",)), measure))
