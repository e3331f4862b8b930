"""What a read through the API costs `jr2 up`: the GETs a client polls and the CLI makes (`jr2 status`, `jr2
journal`), on a real server (bench/console.py's `Server`: a fresh SQLite file, the scripted writer, DEBUG off).

    .venv/bin/python -m bench.api_reads                       # 20 notes runs, 3 rounds of 2,000 GETs, 20 in flight
    .venv/bin/python -m bench.api_reads --runs 20 --gets 2000 --concurrency 20 --rounds 3 --json out.json

Twenty notes runs are started and answered (bench/fleet_load.py's runs round, every output checked), then each
round sends `--gets` requests, half `GET /api/runs/<id>` and half `GET /api/runs/<id>/journal` over those runs,
`--concurrency` at a time. Every response is checked: 200, the run asked for, `done`, and a journal of the same
length as the first one read. Measured per round: the wall time, the `jr2 up` process's CPU per request (utime +
stime of all its threads, from /proc), and each request's latency (p50, p95). A wrong response exits 1.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from bench.console import Server, WrongResult, api, proc_cpu_s
from bench.fleet_load import bounded, listed, runs_round
from bench.runtime import percentile


async def one_round(
    http: Any, server: Server, run_ids: list[str], lengths: dict[str, int], args: argparse.Namespace
) -> dict[str, Any]:
    """`--gets` reads, `--concurrency` at a time, each checked: the wall, the server's CPU, the latencies."""
    took: list[float] = []

    def read(i: int) -> Callable[[], Awaitable[None]]:
        run_id = run_ids[(i // 2) % len(run_ids)]  # each run read both ways

        async def go() -> None:
            t = time.monotonic()
            if i % 2:
                got = await api(http, "GET", f"/api/runs/{run_id}/journal", server.token)
                if len(got["entries"]) != lengths[run_id]:
                    raise WrongResult(f"run {run_id}'s journal has {len(got['entries'])} entries")
            else:
                got = await api(http, "GET", f"/api/runs/{run_id}", server.token)
                if got["id"] != run_id or got["status"] != "done":
                    raise WrongResult(f"GET /api/runs/{run_id} answered {got['id']} {got['status']}")
            took.append(time.monotonic() - t)

        return go

    cpu0, t0 = proc_cpu_s(server.pid), time.monotonic()
    await bounded(args.concurrency, [read(i) for i in range(args.gets)])
    wall, cpu = time.monotonic() - t0, proc_cpu_s(server.pid) - cpu0
    took.sort()
    return {
        "gets": args.gets,
        "wall_s": round(wall, 3),
        "cpu_ms_per_get": round(cpu * 1000 / args.gets, 3),
        "p50_ms": round(percentile(took, 50) * 1000, 2),
        "p95_ms": round(percentile(took, 95) * 1000, 2),
    }


async def rounds(server: Server, args: argparse.Namespace) -> list[dict[str, Any]]:
    import httpx

    limits = httpx.Limits(max_connections=args.concurrency)
    async with httpx.AsyncClient(base_url=server.url, trust_env=False, timeout=120, limits=limits) as http:
        await runs_round(server, http, args.runs, min(args.runs, 50), "reads")
        run_ids = sorted(await listed(http, server.token, "done"))
        lengths = {
            run_id: len((await api(http, "GET", f"/api/runs/{run_id}/journal", server.token))["entries"])
            for run_id in run_ids
        }
        results = []
        for number in range(1, args.rounds + 1):
            got = {"round": number, **await one_round(http, server, run_ids, lengths, args)}
            results.append(got)
            print(
                f"round {number}: {got['gets']} GETs in {got['wall_s']:.2f} s, {got['cpu_ms_per_get']:.2f} ms of "
                f"jr2 up's CPU a GET, p50 {got['p50_ms']} ms, p95 {got['p95_ms']} ms",
                flush=True,
            )
        return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--gets", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="jr2-api-reads-") as tmp:
        server = Server(Path(tmp), debug=False)
        server.start()
        try:
            results = asyncio.run(rounds(server, args))
        except WrongResult as err:
            print(f"bench.api_reads: wrong result: {err}", file=sys.stderr)
            return 1
        finally:
            server.stop()
    if args.json:
        args.json.write_text(json.dumps({**vars(args), "json": str(args.json), "results": results}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
