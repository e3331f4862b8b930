"""Load: 1,000 runs at once and 500 open run pages, on the fleet and on the embedded default, in one table.

    scripts/services run python -m bench.fleet_load             # the full run (`make bench-fleet`)
    scripts/services run python -m bench.fleet_load --quick     # a smoke run: 100 runs, 100 pages
    python -m bench.fleet_load --only embedded                  # the embedded default alone (no services needed)
    scripts/services run python -m bench.fleet_load --pages-only --live 10:all --rounds 3   # ten Gates at once

Two systems, each started fresh, each measured the same way, all through HTTP and websockets as a client sees them:

- the embedded default: one `jr2 up` on its own SQLite file with the in-memory channel layer (bench/console.py's
  `Server`);
- the fleet: 2 `jr2 web` and 3 `jr2 worker` processes (bench/soak.py's `Fleet`) on a fresh PostgreSQL database and
  Redis (DATABASE_URL and REDIS_URL, as `scripts/services run` sets them), the fleet's settings at their defaults.

Both run workflows/notes.py with its scripted writer (`JR2_SCRIPTED=1`), DEBUG off; a superuser, an API token and a
session cookie are made as bench/console.py makes them. API calls and pages are spread over the web processes in
turn.

1. Runs: after a warm-up round (the same, smaller, so imports and connections are not counted), N runs are started
   at once (`POST /api/workflows/notes/runs`, at most --concurrency requests in flight): the time from the first POST
   to every run `waiting` at its Gate (polled with `GET /api/runs?status=waiting`). Memory per run: the VmRSS of the
   processes that host runs (the workers; `jr2 up` itself) with the N runs waiting, minus before them, over N. Then
   every Gate is answered (`POST /api/runs/<id>/gates/writing.asking/events`, the same concurrency): the time to
   every run `done`. Every run must wait at `writing.asking`, every answer be `delivered`, and every run end `done`
   with the notes its writer makes from its own reply, with exactly that answer in its journal. The runs rounds'
   client is bench/lean_http.py's (`--client lean`, the default), which costs a few hundredths of what the server
   does per request; httpx (`--client httpx`) cost a core of its own, so on two cores it timed itself as much as
   the server.
2. Pages: bench/console.py's live rounds: M runs at their Gates, 500 websocket clients on `/ws/runs/<id>/` (spread
   over the runs, and over the web processes), each Gate answered through the API; a page's latency is from the
   Gate answer's commit (its journal entry's `at`) to the first fragment the page receives after it. Its checks
   (every page whole, a fragment only after its commit, every run done with its own notes) hold here too.

A wrong result exits 1 and reports no number. Results go to stdout (markdown) and bench/results/fleet_load.json.
See docs/reliability.md, "Load".
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).resolve().parent / "results" / "fleet_load.json"

if str(ROOT) not in sys.path:  # `python bench/fleet_load.py` as well as `python -m bench.fleet_load`
    sys.path.insert(0, str(ROOT))

from bench.common import finish  # noqa: E402
from bench.console import (  # noqa: E402
    NOTES_CHANGES,
    Server,
    api,
    expected_notes,
    live_round,
    login,
    parse_configs,
    proc_cpu_s,
    proc_rss_kib,
    spread,
)
from bench.host import cpu_model  # noqa: E402
from bench.lean_http import LeanClient  # noqa: E402
from bench.runtime import WrongResult, expect  # noqa: E402
from bench.soak import Fleet  # noqa: E402

T = TypeVar("T")
K = TypeVar("K")
ENDED_BADLY = "failed,cancelled,drifted"


class FleetServer(Server):
    """The fleet in the shape of bench/console.py's `Server` (token, pages' endpoints, processes), so its live rounds
    run on it unchanged: `webs` `jr2 web` and `workers` `jr2 worker` processes on a fresh PostgreSQL database (made
    on DATABASE_URL's server) and Redis."""

    def __init__(self, tmp: Path, webs: int, workers: int, database_url: str, redis_url: str) -> None:
        super().__init__(tmp, debug=False)
        # every worker must be its own host (its owner id from its pid); the processes import this checkout's code
        for name in ("JR2_SQLITE_PATH", "JR2_HOST_ID"):
            self.env.pop(name, None)
        # the processes run in `tmp` (bench/soak.py's Fleet), so the workflows folder is named, not found beside them
        self.env.update(
            DATABASE_URL=database_url,
            REDIS_URL=redis_url,
            PYTHONPATH=str(ROOT),
            JR2_WORKFLOWS=str(ROOT / "workflows"),
            JR2_RELAY_WAIT="60",
        )
        self.fleet = Fleet(tmp, self.env)
        self.sizes = (webs, workers)
        self.log = tmp / "web-0.log"

    def start(self) -> None:
        import psycopg

        self.prepare()
        with psycopg.connect(self.env["DATABASE_URL"]) as conn:
            row = conn.execute("SELECT pg_backend_pid()").fetchone()
        assert row is not None
        status = Path(f"/proc/{row[0]}/status").read_text()
        self.postmaster = int(next(x.split()[1] for x in status.splitlines() if x.startswith("PPid:")))
        self.fleet.start(*self.sizes)
        deadline = time.monotonic() + 120
        for worker in self.fleet.workers:
            log = self.tmp / f"worker-{worker.index}.log"
            while "is driving" not in (log.read_text(errors="replace") if log.exists() else ""):
                if worker.popen.poll() is not None or time.monotonic() > deadline:
                    raise WrongResult(f"jr2 worker {worker.index} did not start: {log.read_text()[-2000:]}")
                time.sleep(0.05)
        self.port, self.url = self.fleet.webs[0].port, self.fleet.webs[0].url

    @property
    def pid(self) -> int:
        return self.fleet.webs[0].popen.pid

    @property
    def pids(self) -> list[int]:
        return [p.popen.pid for p in self.fleet.webs + self.fleet.workers]

    @property
    def run_pids(self) -> list[int]:
        return [p.popen.pid for p in self.fleet.workers]

    @property
    def endpoints(self) -> list[Any]:
        return list(self.fleet.webs)

    def stop(self) -> None:
        """Stop the processes and drop the bench's database."""
        import psycopg

        self.fleet.stop()
        server, name = self.env["DATABASE_URL"].rsplit("/", 1)
        with psycopg.connect(f"{server}/postgres", autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}"')


def _stat(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def database_cpu_s(postmaster: int) -> float:
    """The CPU of a PostgreSQL server: its postmaster, its live processes, and those that ended (a connection's
    backend exits with it), which the postmaster has reaped (cutime + cstime)."""
    tick = os.sysconf("SC_CLK_TCK")
    mine = _stat(postmaster)
    total = sum(int(x) for x in mine[11:15])
    for task in Path(f"/proc/{postmaster}/task").iterdir():
        for child in (task / "children").read_text().split():
            try:
                total += sum(int(x) for x in _stat(int(child))[11:13])
            except (FileNotFoundError, ProcessLookupError):  # the backend exited between the listing and the read
                pass
    return total / tick


def server_cpu(server: Server) -> dict[str, float]:
    """The database's and Redis's CPU so far (the fleet only): PostgreSQL's from /proc, Redis's from INFO."""
    if not isinstance(server, FleetServer):
        return {}
    import redis

    info = redis.Redis.from_url(server.env["REDIS_URL"]).info("cpu")
    return {"postgres": database_cpu_s(server.postmaster), "redis": info["used_cpu_user"] + info["used_cpu_sys"]}


def delta(after: dict[K, float], before: dict[K, float]) -> dict[K, float]:
    return {k: after[k] - before[k] for k in after}


def run_pids(server: Server) -> list[int]:
    """The processes that host runs: the workers of a fleet, `jr2 up` itself."""
    return server.run_pids if isinstance(server, FleetServer) else server.pids


class Spread:
    """API calls spread over the web processes in turn (bench.console's `api` needs only `request`)."""

    def __init__(self, clients: list[Any]) -> None:
        self.clients = clients
        self.calls = 0

    async def request(self, method: str, path: str, **kwargs: Any) -> Any:
        client = self.clients[self.calls % len(self.clients)]
        self.calls += 1
        return await client.request(method, path, **kwargs)


async def bounded(limit: int, jobs: list[Callable[[], Awaitable[T]]]) -> list[T]:
    """Run every job, at most `limit` at once (the clients' requests in flight)."""
    gate = asyncio.Semaphore(limit)

    async def one(job: Callable[[], Awaitable[T]]) -> T:
        async with gate:
            return await job()

    return list(await asyncio.gather(*(one(job) for job in jobs)))


async def count(http: Any, token: str, status: str) -> int:
    page = await api(http, "GET", f"/api/runs?workflow=notes&status={status}&page_size=1", token)
    return int(page["count"])


async def until_count(http: Any, token: str, status: str, want: int, bad: int, timeout: float) -> None:
    """Poll the run list until `want` notes runs have `status`; a run that ended otherwise is a wrong result."""
    deadline = time.monotonic() + timeout
    while True:
        if await count(http, token, ENDED_BADLY) != bad:
            raise WrongResult(f"a notes run ended {ENDED_BADLY.replace(',', ' or ')} under load")
        got = await count(http, token, status)
        if got == want:
            return
        if time.monotonic() > deadline:
            raise WrongResult(f"{got} notes runs {status} after {timeout:.0f} s, want {want}")
        await asyncio.sleep(0.1)


async def listed(http: Any, token: str, status: str) -> dict[str, dict[str, Any]]:
    """Every notes run with `status`, by id (the list's rows)."""
    rows: dict[str, dict[str, Any]] = {}
    page, pages = 1, 1
    while page <= pages:
        found = await api(http, "GET", f"/api/runs?workflow=notes&status={status}&page_size=500&page={page}", token)
        rows.update({r["id"]: r for r in found["results"]})
        pages, page = found["pages"], page + 1
    return rows


def rss(pids: list[int]) -> int:
    return sum(proc_rss_kib(pid) for pid in pids)


def cpu(pids: list[int]) -> float:
    return sum(proc_cpu_s(pid) for pid in pids)


async def runs_round(server: Server, http: Any, n: int, concurrency: int, label: str) -> dict[str, Any]:
    """N notes runs started at once, every one waiting at its Gate, every Gate answered, every run done: times,
    memory per waiting run, and the checks."""
    token, hosts = server.token, run_pids(server)
    done0, bad0 = await count(http, token, "done"), await count(http, token, ENDED_BADLY)
    expect(await count(http, token, "running,waiting"), 0, "live notes runs before the round")
    await asyncio.sleep(1.0)  # the last round's work settled
    rss0, cpu0, all_cpu0, servers0 = rss(hosts), cpu(hosts), cpu(server.pids), server_cpu(server)
    post_s: list[float] = []
    by_pid_start = {pid: proc_cpu_s(pid) for pid in server.pids}

    async def start() -> str:
        t = time.monotonic()
        created = await api(http, "POST", "/api/workflows/notes/runs", token, {"changes": NOTES_CHANGES}, want=201)
        post_s.append(time.monotonic() - t)
        return str(created["id"])

    t0 = time.monotonic()
    run_ids = await bounded(concurrency, [start] * n)
    posted_s = time.monotonic() - t0
    await until_count(http, token, "waiting", n, bad0, 120 + n * 0.5)
    waiting_s = time.monotonic() - t0
    start_cpu, start_all_cpu = cpu(hosts) - cpu0, cpu(server.pids) - all_cpu0
    servers1 = server_cpu(server)
    by_pid0 = {pid: proc_cpu_s(pid) for pid in server.pids}
    await asyncio.sleep(1.0)
    rss1 = rss(hosts)
    rss1_all = {pid: proc_rss_kib(pid) for pid in server.pids}
    rows = await listed(http, token, "waiting")
    expect(sorted(rows), sorted(run_ids), "the waiting notes runs")
    expect({r["open_gates"] for r in rows.values()}, {1}, "open Gates of each waiting run")
    holders = await held_by(server)

    replies = {run_id: f"Reader {label} {i}" for i, run_id in enumerate(run_ids)}
    answer_s: list[float] = []

    def answer(run_id: str) -> Callable[[], Awaitable[None]]:
        async def go() -> None:
            t = time.monotonic()
            result = await api(
                http,
                "POST",
                f"/api/runs/{run_id}/gates/writing.asking/events",
                token,
                {"type": "reply", "text": replies[run_id]},
            )
            answer_s.append(time.monotonic() - t)
            expect(result["outcome"], "delivered", f"the Gate answer to run {run_id}")

        return go

    cpu1, all_cpu1, servers2 = cpu(hosts), cpu(server.pids), server_cpu(server)
    by_pid1 = {pid: proc_cpu_s(pid) for pid in server.pids}
    t1 = time.monotonic()
    await bounded(concurrency, [answer(run_id) for run_id in run_ids])
    answered_s = time.monotonic() - t1
    await until_count(http, token, "done", done0 + n, bad0, 120 + n * 0.5)
    done_s = time.monotonic() - t1
    answer_cpu, answer_all_cpu = cpu(hosts) - cpu1, cpu(server.pids) - all_cpu1
    servers3 = server_cpu(server)
    by_pid2 = {pid: proc_cpu_s(pid) for pid in server.pids}
    all_cpu = cpu(server.pids) - all_cpu0

    async def checked(run_id: str) -> None:
        run = await api(http, "GET", f"/api/runs/{run_id}", token)
        expect(
            (run["status"], run["output"]), ("done", {"notes": expected_notes(replies[run_id])}), f"notes run {run_id}"
        )
        journal = await api(http, "GET", f"/api/runs/{run_id}/journal", token)
        gates = [(e["entry"]["gate"], e["entry"]["params"]) for e in journal["entries"] if e["kind"] == "gate"]
        expect(gates, [("writing.asking", {"text": replies[run_id]})], f"the Gate answers in run {run_id}'s journal")

    await bounded(concurrency, [partial(checked, run_id) for run_id in run_ids])
    return {
        "runs": n,
        "concurrency": concurrency,
        "posted_s": posted_s,
        "all_waiting_s": waiting_s,
        "answered_s": answered_s,
        "all_done_s": done_s,
        "post_start_s": spread(post_s),
        "post_answer_s": spread(answer_s),
        "host_rss_before_kib": rss0,
        "host_rss_waiting_kib": rss1,
        "kib_per_waiting_run": (rss1 - rss0) / n,
        "rss_waiting_kib_by_pid": rss1_all,
        "host_cpu_start_s": start_cpu,
        "host_cpu_answer_s": answer_cpu,
        "all_processes_cpu_s": all_cpu,
        "all_processes_cpu_start_s": start_all_cpu,
        "all_processes_cpu_answer_s": answer_all_cpu,
        "cpu_start_s_by_pid": delta(by_pid0, by_pid_start),
        "cpu_answer_s_by_pid": delta(by_pid2, by_pid1),
        "servers_cpu_start_s": delta(servers1, servers0),
        "servers_cpu_answer_s": delta(servers3, servers2),
        "runs_by_holder": holders,
    }


async def held_by(server: Server) -> dict[str, int]:
    """How the waiting runs are spread over the hosts (the fleet's database: lease owners), and the database's
    open connections (`connections`)."""
    if not isinstance(server, FleetServer):
        return {}
    import psycopg

    def read() -> dict[str, int]:
        with psycopg.connect(server.env["DATABASE_URL"]) as conn:
            rows = conn.execute(
                "SELECT lease_owner, count(*) FROM engine_run WHERE status = 'waiting' "
                "GROUP BY lease_owner ORDER BY lease_owner"
            ).fetchall()
            open_ = conn.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()").fetchone()
        return {**{str(owner): int(n) for owner, n in rows}, "connections": int(open_[0]) if open_ else 0}

    return await asyncio.to_thread(read)


async def measure(server: Server, args: argparse.Namespace, name: str) -> dict[str, Any]:
    """Both parts on one started system."""
    import httpx

    # a Gate answer's POST waits for its commit up to 60 s (the soak's setting), not 2 s: on a loaded machine a
    # worker may take longer to claim a run, and a 202 ("kept, pending") would void the round
    server.env["JR2_RELAY_WAIT"] = "60"
    server.start()
    out: dict[str, Any] = {"processes": len(server.pids), "pages_on": [e.url for e in server.endpoints]}
    out["roles"] = {pid: "worker" if pid in run_pids(server) else "web" for pid in server.pids}
    if not isinstance(server, FleetServer):
        out["roles"] = {pid: "up" for pid in server.pids}
    try:
        clients = [
            httpx.AsyncClient(
                base_url=e.url, trust_env=False, timeout=180, limits=httpx.Limits(max_connections=args.concurrency)
            )
            for e in server.endpoints
        ]
        http = Spread(clients)
        lean = [LeanClient(e.url, args.concurrency) for e in server.endpoints] if args.client == "lean" else []
        runs_http = Spread(lean) if lean else http
        out["client"] = args.client
        try:
            rss_idle = {pid: proc_rss_kib(pid) for pid in server.pids}
            print(f"  {name}: warm-up, {args.warmup} runs", flush=True)
            out["warmup"] = await runs_round(server, runs_http, args.warmup, args.concurrency, "warm-up")
            out["rss_idle_kib_by_pid"] = rss_idle
            if not args.pages_only:
                print(f"  {name}: {args.runs} runs at once", flush=True)
                out["runs"] = await runs_round(server, runs_http, args.runs, args.concurrency, "load")
                r = out["runs"]
                print(
                    f"    all waiting in {r['all_waiting_s']:.1f} s, all done {r['all_done_s']:.1f} s after the "
                    f"first answer; {r['kib_per_waiting_run']:.1f} KiB per waiting run",
                    flush=True,
                )
            out["live"] = []
            if args.no_pages:
                return out
            session = await login(clients[0])
            live_args = argparse.Namespace(settle=args.settle, gap=args.gap, open_at_once=args.open_at_once)
            await live_round(server, http, session, 1, len(server.endpoints), "one", "warm-up", live_args)
            for runs, mode in parse_configs(args.live):
                rounds = []
                for i in range(args.rounds):
                    label = f"{runs}:{mode} #{i + 1}"
                    rounds.append(await live_round(server, http, session, runs, args.pages, mode, label, live_args))
                    x = rounds[-1]
                    print(
                        f"    {label}: {x['pages']} pages open in {x['connect_s']:.2f} s; commit -> fragment p50 "
                        f"{x['commit_to_moved_s']['p50'] * 1e3:.1f} ms, p95 "
                        f"{x['commit_to_moved_s']['p95'] * 1e3:.1f} ms",
                        flush=True,
                    )
                out["live"].append(
                    {
                        "runs": runs,
                        "mode": mode,
                        "rounds": rounds,
                        "commit_to_moved_s": spread([v for x in rounds for v in x["moved_s"]]),
                    }
                )
        finally:
            for client in [*clients, *lean]:
                await client.aclose()
        out["rss_end_kib_by_pid"] = {pid: proc_rss_kib(pid) for pid in server.pids}
    finally:
        server.stop()
    return out


# ----------------------------------------------------------------------------------------------------------------
# The table
# ----------------------------------------------------------------------------------------------------------------

SYSTEMS = {
    "embedded": "embedded default: one `jr2 up` (SQLite, in-memory layer)",
    "fleet": "fleet: {webs} `jr2 web` + {workers} `jr2 worker` (PostgreSQL, Redis)",
}
MODES = {"one": "one Gate at a time", "seq": "Gates back to back", "all": "all Gates at once"}


def s(x: float) -> str:
    return f"{x:,.1f} s" if x >= 10 else f"{x:,.2f} s"


def ms(x: float) -> str:
    return f"{x * 1e3:,.1f} ms" if x < 1 else s(x)


def latency(i: int, got: dict[str, Any]) -> str:
    x = got["live"][i]["commit_to_moved_s"]
    return f"{ms(x['p50'])} / **{ms(x['p95'])}**"


def table(results: dict[str, Any], args: argparse.Namespace) -> list[str]:
    systems = [k for k in SYSTEMS if k in results["systems"]]
    got = {k: results["systems"][k] for k in systems}
    head = [SYSTEMS[k].format(webs=args.webs, workers=args.workers) for k in systems]
    lines = ["| | " + " | ".join(head) + " |", "| --- |" + " ---: |" * len(systems)]

    def row(what: str, cell: Callable[[dict[str, Any]], str]) -> None:
        lines.append(f"| {what} | " + " | ".join(cell(got[k]) for k in systems) + " |")

    if not args.pages_only:
        runs_rows(row, args)
    for i, (runs, mode) in enumerate(parse_configs(args.live) if not args.no_pages else []):
        what = (
            f"{args.pages} pages on 1 run: one commit to all, commit -> fragment p50 / p95"
            if runs == 1
            else f"{args.pages} pages on {runs} runs, {MODES[mode]}: commit -> fragment p50 / p95"
        )
        row(what, partial(latency, i))
    if args.no_pages:
        return lines
    row(
        f"opening {args.pages} pages, {args.open_at_once or 'all'} at a time (first round)",
        lambda g: s(g["live"][0]["rounds"][0]["connect_s"]),
    )
    return lines


def runs_rows(row: Callable[[str, Callable[[dict[str, Any]], str]], None], args: argparse.Namespace) -> None:
    """The table's rows of the runs part (left out with --pages-only)."""
    n = args.runs
    row(f"{n:,} runs: every start POST answered ({args.concurrency} in flight)", lambda g: s(g["runs"]["posted_s"]))
    row(
        f"{n:,} runs: all `waiting` at their Gate, from the first POST",
        lambda g: f"{s(g['runs']['all_waiting_s'])} ({g['runs']['all_waiting_s'] / n * 1e3:.1f} ms a run)",
    )
    row(
        "start POST p50 / p95",
        lambda g: f"{ms(g['runs']['post_start_s']['p50'])} / {ms(g['runs']['post_start_s']['p95'])}",
    )
    row(
        f"answer all {n:,} Gates: all `done`, from the first answer",
        lambda g: f"{s(g['runs']['all_done_s'])} ({g['runs']['all_done_s'] / n * 1e3:.1f} ms a run)",
    )
    row(
        "Gate answer POST p50 / p95 (answered once committed)",
        lambda g: f"{ms(g['runs']['post_answer_s']['p50'])} / {ms(g['runs']['post_answer_s']['p95'])}",
    )
    row(
        "memory per waiting run (VmRSS delta of the run-hosting processes / runs)",
        lambda g: f"{g['runs']['kib_per_waiting_run']:.1f} KiB",
    )
    row(
        "VmRSS of the run-hosting processes: before / with the runs waiting",
        lambda g: (
            f"{g['runs']['host_rss_before_kib'] / 1024:,.0f} / {g['runs']['host_rss_waiting_kib'] / 1024:,.0f} MiB"
        ),
    )
    row(
        "CPU of the run-hosting processes: starting / answering",
        lambda g: f"{g['runs']['host_cpu_start_s']:.1f} s / {g['runs']['host_cpu_answer_s']:.1f} s",
    )
    row(
        "CPU of all the jr2 processes per run: starting / answering",
        lambda g: (
            f"{g['runs']['all_processes_cpu_start_s'] / n * 1e3:.1f} ms / "
            f"{g['runs']['all_processes_cpu_answer_s'] / n * 1e3:.1f} ms"
        ),
    )
    row(
        "CPU of PostgreSQL / Redis per run: starting; answering",
        lambda g: "; ".join(
            " / ".join(f"{v / n * 1e3:.1f} ms" for v in g["runs"][phase].values()) or "(none)"
            for phase in ("servers_cpu_start_s", "servers_cpu_answer_s")
        ),
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.fleet_load", description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="smoke run: 100 runs, 100 pages, one round")
    ap.add_argument("--runs", type=int, help="runs at once (default 1,000; --quick 100)")
    ap.add_argument("--warmup", type=int, help="runs in the warm-up round (default 60; --quick 15)")
    ap.add_argument("--concurrency", type=int, default=50, help="API requests in flight at most (default 50)")
    ap.add_argument(
        "--client",
        choices=("lean", "httpx"),
        default="lean",
        help="the runs rounds' HTTP client (default lean: bench/lean_http.py, which costs the machine little; "
        "httpx cost a core of its own at 50 requests in flight)",
    )
    ap.add_argument("--pages", type=int, help="open run pages (default 500; --quick 100)")
    ap.add_argument(
        "--live",
        help="RUNS:MODE,... the page rounds, MODE one, seq or all (default 10:one,10:all,1:one; --quick 5:one,5:all)",
    )
    ap.add_argument("--rounds", type=int, default=1, help="rounds per --live entry, pooled (default 1)")
    ap.add_argument("--settle", type=float, default=0.5, help="seconds between opening the pages and answering")
    ap.add_argument(
        "--gap", type=float, default=0.2, help="mode one: seconds between a run's fragments and the next Gate"
    )
    ap.add_argument(
        "--open-at-once",
        type=int,
        default=50,
        help="pages opening at once at most (default 50; 0: all at once, as bench.console opens them: "
        "on a loaded machine daphne then drops handshakes that wait over its 5 s)",
    )
    ap.add_argument("--no-pages", action="store_true", help="the runs round alone, no open pages")
    ap.add_argument(
        "--pages-only",
        action="store_true",
        help="skip the runs part: only the warm-up and the page rounds (with --live 10:all: ten Gates at once)",
    )
    ap.add_argument("--webs", type=int, default=2, help="jr2 web processes of the fleet (default 2)")
    ap.add_argument("--workers", type=int, default=3, help="jr2 worker processes of the fleet (default 3)")
    ap.add_argument("--only", default="embedded,fleet", help="which systems (default embedded,fleet)")
    ap.add_argument("--keep", action="store_true", help="keep each system's folder (its logs)")
    ap.add_argument("--json", type=Path, default=RESULTS, help=f"results file (default {RESULTS.relative_to(ROOT)})")
    args = ap.parse_args(argv)
    args.runs = args.runs or (100 if args.quick else 1000)
    args.warmup = args.warmup or (15 if args.quick else 60)
    args.pages = args.pages or (100 if args.quick else 500)
    args.live = args.live or ("5:one,5:all" if args.quick else "10:one,10:all,1:one")
    parse_configs(args.live)
    only = [k for k in SYSTEMS if k in args.only.split(",")]
    if not only or set(args.only.split(",")) - set(SYSTEMS):
        raise SystemExit(f"--only: a comma-separated list of {', '.join(SYSTEMS)}, not {args.only!r}")
    url, redis_url = os.environ.get("DATABASE_URL", ""), os.environ.get("REDIS_URL", "")
    if "fleet" in only and (not url.startswith(("postgres://", "postgresql://")) or not redis_url):
        raise SystemExit(
            "the fleet needs DATABASE_URL (PostgreSQL) and REDIS_URL: run `scripts/services run python "
            "-m bench.fleet_load` (or `make bench-fleet`), or --only embedded"
        )

    load = " / ".join(f"{x:.1f}" for x in os.getloadavg())
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    print(
        f"# Load bench — Python {platform.python_version()} on {cpu_model()}, {os.cpu_count()} CPUs; load "
        f"average {load}",
        flush=True,
    )
    results: dict[str, Any] = {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "commit": commit,
        "python": platform.python_version(),
        "cpu": cpu_model(),
        "cpus": os.cpu_count(),
        "load_average_before": load,
        "args": {k: str(v) for k, v in vars(args).items()},
        "systems": {},
    }
    try:
        for name in only:
            tmp = Path(tempfile.mkdtemp(prefix=f"jr2-bench-load-{name}-"))
            if name == "embedded":
                server: Server = Server(tmp, debug=False)
            else:
                sys.path.insert(0, str(ROOT))
                from tests.databases import fresh_database_url

                database_url = fresh_database_url()
                assert database_url is not None
                server = FleetServer(tmp, args.webs, args.workers, database_url, redis_url)
            print(f"{name}: {SYSTEMS[name].format(webs=args.webs, workers=args.workers)}", flush=True)
            try:
                results["systems"][name] = asyncio.run(measure(server, args, name))
            finally:
                if args.keep:
                    print(f"  {name}: logs kept in {tmp}", flush=True)
                else:
                    shutil.rmtree(tmp, ignore_errors=True)
    except WrongResult as err:
        print(
            f"\nWRONG RESULT: {err}\nno numbers are reported for a system that loses or changes runs", file=sys.stderr
        )
        return 1

    results["load_average_after"] = " / ".join(f"{x:.1f}" for x in os.getloadavg())
    print(
        f"\n### Load: {args.runs:,} runs at once, {args.pages} open run pages ({results['date']}, code at {commit})\n"
    )
    print("\n".join(table(results, args)))
    print(f"\nLoad average {load} before, {results['load_average_after']} after, on {os.cpu_count()} CPUs.")
    return finish(results, args.json)


if __name__ == "__main__":
    sys.exit(main())
