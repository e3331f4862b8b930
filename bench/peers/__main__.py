"""The driver of the peers' benchmark: every engine on every store, each in a process of its own, one after the
other, two rounds; a markdown table, and the results as JSON.

    scripts/services run .venv-peers/bin/python -m bench.peers            # `make bench-peers`: N = 1,000, 2 rounds
    scripts/services run .venv-peers/bin/python -m bench.peers --quick    # a smoke run: N = 50, 1 round
    .venv-peers/bin/python -m bench.peers --runs 200 --only jr2_host,langgraph_peer --stores sqlite

Without DATABASE_URL (PostgreSQL) the PostgreSQL rows are left out, and said so. A round whose engine process
failed or found a wrong output is void: printed as void, and left out of the figures. See docs/benchmarks.md,
"Beside the peers: LangGraph and DBOS".
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.common import finish  # noqa: E402
from bench.host import cpu_model  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "peers.json"

#: (module, store, the table's name for it), in the table's order; each round runs them in this order.
ENGINES = [
    ("jr2_host", "sqlite", "jr2 Host, SQLite"),
    ("langgraph_peer", "sqlite", "LangGraph SqliteSaver"),
    ("dbos_peer", "sqlite", "DBOS, SQLite"),
    ("jr2_up", "sqlite", "jr2 up (HTTP), SQLite"),
    ("jr2_host", "postgres", "jr2 Host, PostgreSQL"),
    ("langgraph_peer", "postgres", "LangGraph PostgresSaver"),
    ("dbos_peer", "postgres", "DBOS, PostgreSQL"),
]


def run_engine(module: str, store: str, runs: int, label: str, timeout: float) -> dict[str, Any]:
    """One engine on one store in a process of its own: its Result, or a void one."""
    with tempfile.TemporaryDirectory(prefix="peers-") as tmp:
        out = Path(tmp) / "result.json"
        argv = [sys.executable, "-m", f"bench.peers.{module}", "--store", store, "--runs", str(runs)]
        t0 = time.perf_counter()
        try:
            done = subprocess.run(
                [*argv, "--label", label, "--json", str(out)],
                cwd=ROOT,
                capture_output=True,
                text=True,
                timeout=timeout,
            )
            failed = None if done.returncode == 0 else f"exit {done.returncode}: {done.stderr[-1500:]}"
        except subprocess.TimeoutExpired:
            failed = f"timed out after {timeout:.0f} s"
        result: dict[str, Any] = json.loads(out.read_text()) if out.exists() else {}
    result["process_s"] = time.perf_counter() - t0
    if failed or result.get("wrong"):
        result["void"] = result.get("wrong") or failed
    return result


def pg_version() -> str | None:
    url = os.environ.get("DATABASE_URL", "")
    if not url.startswith(("postgres://", "postgresql://")):
        return None
    import psycopg

    with psycopg.connect(url) as db:
        return str(db.execute("SHOW server_version").fetchone()[0])


def load() -> str:
    return " / ".join(f"{x:.1f}" for x in os.getloadavg())


# ----------------------------------------------------------------------------------------------------------------
# The table
# ----------------------------------------------------------------------------------------------------------------


def cpu_ms(phase: dict[str, Any], runs: int) -> str:
    client = phase["cpu_s"] / runs * 1e3
    if phase.get("server_cpu_s") is None:
        return f"{client:.1f}"
    server = phase["server_cpu_s"] / runs * 1e3
    return f"{client + server:.1f} ({client:.1f} + {server:.1f})"


def cell(rounds: list[dict[str, Any]], show: Any) -> str:
    return " / ".join("void" if r.get("void") else show(r) for r in rounds)


def rows_per_run(r: dict[str, Any]) -> str:
    rows = r["extra"].get("rows_whole_round")
    if rows is None:
        rows = r["start"]["rows"] + r["answer"]["rows"]
    return f"{rows / r['runs']:.0f}"


def table(results: dict[str, list[dict[str, Any]]]) -> list[str]:
    """One row per engine and store; each cell "round 1 / round 2"."""
    lines = [
        "| engine and store | start → all waiting, wall s | CPU ms per run | p50 ms per start | p95 ms per start "
        "| answer → all done, wall s | CPU ms per run | p50 ms per answer | p95 ms per answer "
        "| RSS per waiting run, KiB | rows per run |",
        "| --- |" + " ---: |" * 10,
    ]
    for key, rounds in results.items():
        cols = [key]
        for phase in ("start", "answer"):
            cols.append(cell(rounds, lambda r, p=phase: f"{r[p]['wall_s']:.2f}"))
            cols.append(cell(rounds, lambda r, p=phase: cpu_ms(r[p], r["runs"])))
            for q in ("p50", "p95"):
                cols.append(cell(rounds, lambda r, p=phase, q=q: f"{r[p]['call_s'][q] * 1e3:.1f}"))
        cols.append(cell(rounds, lambda r: f"{r['rss_per_waiting_kib']:.1f}"))
        cols.append(cell(rounds, rows_per_run))
        lines.append("| " + " | ".join(cols) + " |")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.peers", description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="smoke run: N = 50, 1 round")
    ap.add_argument("--runs", type=int, help="N, runs per engine and round (default 1000; --quick 50)")
    ap.add_argument("--rounds", type=int, help="rounds (default 2; --quick 1)")
    ap.add_argument(
        "--only", help="engine modules, comma-separated (default all: jr2_host,jr2_up,langgraph_peer,dbos_peer)"
    )
    ap.add_argument("--stores", default="sqlite,postgres", help="stores, comma-separated (default sqlite,postgres)")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds one engine process may take")
    ap.add_argument("--json", type=Path, default=RESULTS, help=f"results file (default {RESULTS.relative_to(ROOT)})")
    args = ap.parse_args(argv)
    runs = args.runs or (50 if args.quick else 1000)
    rounds = args.rounds or (1 if args.quick else 2)
    stores = set(args.stores.split(","))
    postgres = pg_version()
    if postgres is None and "postgres" in stores:
        print("no DATABASE_URL to PostgreSQL: the PostgreSQL rows are left out (run under scripts/services run)")
        stores.discard("postgres")
    only = set(args.only.split(",")) if args.only else {m for m, _, _ in ENGINES}
    engines = [e for e in ENGINES if e[0] in only and e[1] in stores]

    started = dt.datetime.now(dt.UTC)
    meta: dict[str, Any] = {
        "started": started.isoformat(timespec="seconds"),
        "runs": runs,
        "rounds": rounds,
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "postgres": postgres,
        "cpu": cpu_model(),
        "cpus": os.cpu_count(),
        "load_average_before": load(),
    }
    print(
        f"# Beside the peers — N = {runs:,}, {rounds} round(s); Python {meta['python']}, SQLite {meta['sqlite']}, "
        f"PostgreSQL {postgres or '-'}; {meta['cpu']}, {meta['cpus']} CPUs; load {meta['load_average_before']}",
        flush=True,
    )
    results: dict[str, list[dict[str, Any]]] = {name: [] for _, _, name in engines}
    t0 = time.perf_counter()
    for i in range(rounds):
        for module, store, name in engines:
            r = run_engine(module, store, runs, f"r{i + 1}", args.timeout)
            results[name].append(r)
            walls = f"{r['start']['wall_s']:.1f} s + {r['answer']['wall_s']:.1f} s" if not r.get("void") else ""
            said = f"VOID: {r['void']}" if r.get("void") else walls
            print(f"  round {i + 1}, {name}: {said} ({r['process_s']:.0f} s in all)", flush=True)
    meta["wall_s"] = time.perf_counter() - t0
    meta["load_average_after"] = load()

    print()
    print("\n".join(table(results)))
    print("\nVersions and configuration:")
    for name, rs in results.items():
        r = next((x for x in rs if not x.get("void")), None)
        if r is not None:
            print(f"- {name}: {r['versions']}; {r['config']}. Acknowledged: {r['acknowledged']}.")
    print(
        f'\n{rounds} round(s), each cell "round 1 / round 2 / ...". {meta["wall_s"]:.0f} s in all; load '
        f"average {meta['load_average_before']} before, {meta['load_average_after']} after, on {meta['cpus']} CPUs."
    )
    voids = [f"{name} round {i + 1}" for name, rs in results.items() for i, r in enumerate(rs) if r.get("void")]
    if voids:
        print(f"\nVOID (a wrong output or a failed process): {', '.join(voids)}", file=sys.stderr)
    finish({**meta, "results": results}, args.json)
    return 1 if voids else 0


if __name__ == "__main__":
    sys.exit(main())
