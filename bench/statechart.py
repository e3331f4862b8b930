"""Statechart benchmark: our engine vs python-statemachine, transitions and xstate (Node).

    python -m bench.statechart              # the full run (`make bench`)
    python -m bench.statechart --quick      # a smoke run: fewer events and repetitions
    python -m bench.statechart --events N   # events per timed run
    python -m bench.statechart --profile    # also cProfile our engine on the deep chart

For each chart (bench/charts.py) and library: warm-up (one untimed run in Python; three untimed runs inside each
Node process), then --reps timed runs, interleaved across libraries (run 1 of each, run 2 of each, ...) so that
load from elsewhere on the machine hits all alike. A run is a freshly started machine receiving N events through
its send; its rate is N / elapsed time of the sends. The table shows the MEDIAN rate of the runs (--stat best for
the best; both are in the JSON). After every run the library's final configuration (and context, for the deep
chart) is checked against the chart's reference model; a run that ends anywhere else fails the bench (exit 1).
Also timed: snapshot.to_json() and machine.resolve_snapshot(json) of the 500-state chart (median microseconds per
call). Results go to stdout (markdown) and to bench/results/statechart.json. See docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import json
import os
import platform
import pstats
import shutil
import statistics
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path

from bench.charts import RUNNERS, Chart, charts, leaves_of_value, ours_machine
from bench.host import cpu_model

ROOT = Path(__file__).resolve().parent.parent
MJS = Path(__file__).resolve().parent / "xstate_bench.mjs"
RESULTS = Path(__file__).resolve().parent / "results" / "statechart.json"

PY_LIBS = ["ours", "python-statemachine", "transitions"]
ALL_LIBS = PY_LIBS + ["xstate"]
PEERS = ["python-statemachine", "transitions", "xstate"]


class WrongState(AssertionError):
    pass


# ----------------------------------------------------------------------------------------------------------------
# Python libraries
# ----------------------------------------------------------------------------------------------------------------


def ours_importable() -> str | None:
    """None if our engine can be benchmarked, else why not."""
    try:
        from engine.core.statechart import assign, create_machine  # noqa: F401
    except Exception as exc:  # the engine is optional for the rest of the bench
        return f"{type(exc).__name__}: {exc}"
    return None


class PythonRun:
    """One Python library on one chart: the machine definition is built once (untimed); every run starts a fresh
    instance (untimed) and times only the sends."""

    def __init__(self, lib: str, chart: Chart, n: int, clock: str):
        self.lib, self.chart, self.n = lib, chart, n
        self.timer = time.perf_counter if clock == "wall" else time.thread_time
        self.make, convert = RUNNERS[lib](chart)
        self.events = [convert(t) for t in chart.events(n)]
        self.expected = chart.expected(n)

    def warm_up(self, runs: int) -> None:
        for _ in range(runs):
            send, final = self.make()
            for e in self.events:
                send(e)
            check(self.lib, self.chart, final(), self.expected)

    def run_once(self) -> float:
        send, final = self.make()
        events, timer = self.events, self.timer
        gc.collect()
        t0 = timer()
        for e in events:
            send(e)
        dt = timer() - t0
        check(self.lib, self.chart, final(), self.expected)
        return self.n / dt


def check(lib: str, chart: Chart, got, expected) -> None:
    leaves, ctx = got
    exp_leaves, exp_ctx = expected
    if leaves != exp_leaves or (exp_ctx is not None and ctx != exp_ctx):
        raise WrongState(
            f"{lib} / {chart.name}: ended in {sorted(leaves)} {ctx}, expected {sorted(exp_leaves)} {exp_ctx}"
        )


# ----------------------------------------------------------------------------------------------------------------
# xstate in Node
# ----------------------------------------------------------------------------------------------------------------


def node_version() -> str | None:
    node = shutil.which("node")
    if not node:
        return None
    return subprocess.run([node, "--version"], capture_output=True, text=True).stdout.strip() or None


class NodeRun:
    """xstate on one chart: every run is a fresh Node process (bench/xstate_bench.mjs) that warms V8 up with
    `warmup` untimed runs, then times one; so no chart's JIT feedback leaks into another's, and a timed Node run
    can be interleaved with the Python ones."""

    lib = "xstate"
    meta: dict = {}

    def __init__(self, chart: Chart, n: int, warmup: int, clock: str):
        self.node = shutil.which("node")
        if not self.node:
            raise RuntimeError("node not found")
        self.chart, self.n, self.expected = chart, n, chart.expected(n)
        self.spec = json.dumps(
            {
                "charts": [
                    {
                        "name": chart.name,
                        "config": chart.config,
                        "cycle": chart.cycle,
                        "events": n,
                        "reps": 1,
                        "warmup": warmup,
                        "clock": clock,
                    }
                ]
            }
        )

    def warm_up(self, runs: int) -> None:  # every Node run warms itself up
        pass

    def run_once(self) -> float:
        proc = subprocess.run(
            [self.node, str(MJS)], input=self.spec, capture_output=True, text=True, cwd=ROOT, timeout=3600
        )
        if proc.returncode != 0:
            raise RuntimeError(f"xstate_bench.mjs failed ({proc.returncode}): {proc.stderr.strip()[-2000:]}")
        data = json.loads(proc.stdout)
        NodeRun.meta = {"xstate": data["xstate"], "node": data["node"]}
        res = data["charts"][self.chart.name]
        for fin in res["finals"]:
            if fin["status"] != "active":
                raise WrongState(f"xstate / {self.chart.name}: status {fin['status']}")
            ctx = fin["context"] or {}
            got_ctx = {k: ctx.get(k) for k in ("count", "laps")} if self.expected[1] is not None else None
            check("xstate", self.chart, (leaves_of_value(fin["value"]), got_ctx), self.expected)
        return res["rates"][0]


def bench_chart(
    chart: Chart, libs: list[str], n: int, reps: int, py_warmup: int, node_warmup: int, stat: str, clock: str
) -> tuple[dict, list[str]]:
    """All libraries on one chart, their timed runs interleaved (run 1 of each, then run 2 of each, ...) so that
    a burst of load on the machine hits every library alike. Returns ({lib: result}, failures)."""
    runners: dict = {}
    results: dict = {}
    failures: list[str] = []

    def fail(lib: str, exc: Exception) -> None:
        results[lib] = {"error": f"{type(exc).__name__}: {exc}"}
        failures.append(f"{lib} / {chart.name}: {results[lib]['error']}")
        runners.pop(lib, None)

    for lib in libs:
        try:
            runner = NodeRun(chart, n, node_warmup, clock) if lib == "xstate" else PythonRun(lib, chart, n, clock)
            runner.warm_up(py_warmup)
            runners[lib] = runner
        except Exception as exc:
            fail(lib, exc)
    rates: dict[str, list[float]] = {lib: [] for lib in runners}
    for _ in range(reps):
        for lib, runner in list(runners.items()):
            try:
                rates[lib].append(runner.run_once())
            except Exception as exc:
                fail(lib, exc)
    for lib in runners:
        rs = rates[lib]
        results[lib] = {"rates": rs, "median": statistics.median(rs), "best": max(rs)}
    for lib in libs:
        r = results[lib]
        shown = "FAILED " + r["error"] if "error" in r else f"{r[stat]:>12,.0f} events/s"
        print(f"  {chart.name:5} {lib:20} {shown}", flush=True)
    return results, failures


# ----------------------------------------------------------------------------------------------------------------
# Snapshot round trip (ours, 500-state chart)
# ----------------------------------------------------------------------------------------------------------------


def _per_call_us(fn, inner: int, samples: int, timer=time.perf_counter) -> float:
    """Median over `samples` of the mean time of `inner` consecutive calls, in microseconds."""
    fn()
    out = []
    for _ in range(samples):
        t0 = timer()
        for _ in range(inner):
            fn()
        out.append((timer() - t0) / inner * 1e6)
    return statistics.median(out)


def bench_snapshot(chart: Chart, inner: int, samples: int, clock: str = "wall") -> dict:
    from engine.core.statechart import create_actor

    machine = ours_machine(chart)
    actor = machine.start()
    steps = 257  # somewhere in the middle of the ring: g25c7
    for _ in range(steps):
        actor.send({"type": "NEXT"})
    snap = actor.snapshot
    data = snap.to_json()
    restored = machine.resolve_snapshot(data)
    if restored.value != snap.value or leaves_of_value(restored.value) != chart.expected(steps)[0]:
        raise WrongState(f"resolve_snapshot(to_json()) gave {restored.value!r}, expected {snap.value!r}")
    # the restored snapshot must also run on: one more NEXT lands where the reference model says
    again = create_actor(machine, snapshot=restored).start()
    again.send({"type": "NEXT"})
    if leaves_of_value(again.snapshot.value) != chart.expected(steps + 1)[0]:
        raise WrongState(f"restored actor went to {again.snapshot.value!r}")

    is_text = isinstance(data, str)
    timer = time.perf_counter if clock == "wall" else time.thread_time

    def per_call_us(fn, inner, samples):
        return _per_call_us(fn, inner, samples, timer)

    out = {
        "to_json_returns": type(data).__name__,
        "to_json_us": per_call_us(snap.to_json, inner, samples),
        "resolve_snapshot_us": per_call_us(lambda: machine.resolve_snapshot(data), inner, samples),
    }
    out["round_trip_us"] = out["to_json_us"] + out["resolve_snapshot_us"]
    if not is_text:  # what persisting really costs: to text and back
        text = json.dumps(data)
        out["json_text_bytes"] = len(text)
        out["dumps_us"] = per_call_us(lambda: json.dumps(snap.to_json()), inner, samples) - out["to_json_us"]
        out["loads_us"] = per_call_us(lambda: json.loads(text), inner, samples)
        out["round_trip_text_us"] = out["round_trip_us"] + out["dumps_us"] + out["loads_us"]
    else:
        out["json_text_bytes"] = len(data)
    return out


# ----------------------------------------------------------------------------------------------------------------
# Profile (ours, deep chart)
# ----------------------------------------------------------------------------------------------------------------


def profile_ours(chart: Chart, n: int, top: int = 15) -> str:
    make, convert = RUNNERS["ours"](chart)
    events = [convert(t) for t in chart.events(n)]
    send, final = make()
    prof = cProfile.Profile()
    prof.enable()
    for e in events:
        send(e)
    prof.disable()
    check("ours", chart, final(), chart.expected(n))
    buf = io.StringIO()
    stats = pstats.Stats(prof, stream=buf)
    stats.sort_stats("tottime").print_stats(top)
    return buf.getvalue()


# ----------------------------------------------------------------------------------------------------------------
# Report
# ----------------------------------------------------------------------------------------------------------------


def fmt_rate(r: dict | None, stat: str) -> str:
    if r is None:
        return "n/a"
    if "error" in r:
        return "FAILED"
    return f"{r[stat]:,.0f}"


def fmt_ratio(ours: dict | None, peer: dict | None, stat: str) -> str:
    if not ours or not peer or "error" in ours or "error" in peer:
        return "n/a"
    return f"{ours[stat] / peer[stat]:.2f}x"


def table(selected: list[Chart], results: dict, stat: str) -> str:
    head = ["chart", "states", "events"] + ALL_LIBS + [f"ours/{p}" for p in PEERS]
    rows = [
        "| " + " | ".join(head) + " |",
        "| " + " | ".join(["---"] * 3 + ["---:"] * (len(head) - 3)) + " |",
    ]
    for c in selected:
        r = results.get(c.name, {})
        cells = [c.name, str(c.states), "/".join(dict.fromkeys(c.cycle))]
        cells += [fmt_rate(r.get(lib), stat) for lib in ALL_LIBS]
        cells += [fmt_ratio(r.get("ours"), r.get(p), stat) for p in PEERS]
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def env_info(node: dict | None) -> dict:
    def ver(dist):
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            return None

    return {
        "nproc": os.cpu_count(),
        "cpu": cpu_model(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "python-statemachine": ver("python-statemachine"),
        "transitions": ver("transitions"),
        "node": (node or {}).get("node") or node_version(),
        "xstate": (node or {}).get("xstate"),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.statechart", description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="smoke run: 2,000 events, 3 repetitions")
    ap.add_argument("--events", type=int, help="events per timed run (default 20,000; --quick 2,000)")
    ap.add_argument("--reps", type=int, help="timed runs per chart and library (default 5; --quick 3)")
    ap.add_argument("--stat", choices=["median", "best"], default="median", help="statistic shown (default median)")
    ap.add_argument(
        "--clock",
        choices=["wall", "cpu"],
        default="wall",
        help="wall (default): elapsed time; cpu: CPU time of the sending thread (Python) / process (Node), "
        "steadier on a busy machine",
    )
    ap.add_argument("--charts", default="flat,deep,big", help="comma-separated subset of flat,deep,big")
    ap.add_argument("--libs", default=",".join(ALL_LIBS), help="comma-separated subset of " + ",".join(ALL_LIBS))
    ap.add_argument("--profile", action="store_true", help="cProfile our engine on the deep chart")
    ap.add_argument("--json", type=Path, default=RESULTS, help=f"results file (default {RESULTS.relative_to(ROOT)})")
    args = ap.parse_args(argv)

    n = args.events or (2_000 if args.quick else 20_000)
    reps = args.reps or (3 if args.quick else 5)
    py_warmup = 1
    node_warmup = 3  # V8 needs a few runs before its optimising compiler settles
    snap_inner, snap_samples = (20, 7) if args.quick else (100, 21)

    all_charts = charts()
    selected = [all_charts[c] for c in args.charts.split(",") if c]
    libs = [lib for lib in args.libs.split(",") if lib]
    failures: list[str] = []
    notes: list[str] = []

    why_not_ours = ours_importable()
    if why_not_ours and "ours" in libs:
        libs.remove("ours")
        notes.append(f"ours: not benchmarked, engine.core.statechart is not importable ({why_not_ours})")

    print(
        f"# statechart benchmark: {n:,} events per run, {reps} timed runs ({args.stat} shown, {args.clock} clock)",
        flush=True,
    )
    load_before = os.getloadavg()
    results: dict[str, dict] = {}
    for chart in selected:
        results[chart.name], failed = bench_chart(chart, libs, n, reps, py_warmup, node_warmup, args.stat, args.clock)
        failures += failed
    load_after = os.getloadavg()

    snapshot = None
    if "ours" in libs:
        try:
            snapshot = bench_snapshot(all_charts["big"], snap_inner, snap_samples, args.clock)
        except Exception as exc:
            snapshot = {"error": f"{type(exc).__name__}: {exc}"}
            failures.append(f"snapshot: {snapshot['error']}")

    profile = None
    if args.profile and "ours" in libs:
        profile = profile_ours(all_charts["deep"], n)

    env = env_info(NodeRun.meta)
    env["loadavg_before"] = [round(x, 2) for x in load_before]
    env["loadavg_after"] = [round(x, 2) for x in load_after]
    print()
    print(
        f"machine: {env['nproc']} CPU ({env['cpu']}), {env['platform']}; Python {env['python']}, "
        f"Node {env['node']}; python-statemachine {env['python-statemachine']}, transitions "
        f"{env['transitions']}, xstate {env['xstate']}"
    )
    print(f"load average (1, 5, 15 min) before: {env['loadavg_before']}, after: {env['loadavg_after']}")
    print()
    print(f"Events per second through send ({args.clock} clock), {args.stat} of {reps} runs of {n:,} events")
    print("(higher is better; ours/peer > 1 means ours is faster):")
    print()
    print(table(selected, results, args.stat))
    if snapshot:
        print()
        if "error" in snapshot:
            print(f"snapshot round trip (big chart): FAILED {snapshot['error']}")
        else:
            s = snapshot
            print(
                f"Snapshot of the {all_charts['big'].states}-state chart ({args.clock} clock, median us per call; "
                "target: round trip < 1000 us):"
            )
            print()
            print("| to_json() | resolve_snapshot(json) | round trip | + json.dumps/loads (text) | JSON size |")
            print("| ---: | ---: | ---: | ---: | ---: |")
            text = f"{s['round_trip_text_us']:.1f}" if "round_trip_text_us" in s else "(already text)"
            print(
                f"| {s['to_json_us']:.1f} | {s['resolve_snapshot_us']:.1f} | {s['round_trip_us']:.1f} | {text} "
                f"| {s['json_text_bytes']:,} B |"
            )
    for note in notes:
        print(f"\nnote: {note}")
    if profile:
        print("\ncProfile, ours, deep chart, by tottime:\n")
        print(profile)

    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(
        json.dumps(
            {
                "command": "python -m bench.statechart " + " ".join(argv if argv is not None else sys.argv[1:]),
                "events_per_run": n,
                "reps": reps,
                "statistic": args.stat,
                "clock": args.clock,
                "env": env,
                "charts": {c.name: {"title": c.title, "states": c.states, "cycle": c.cycle} for c in selected},
                "results": results,
                "snapshot": snapshot,
                "failures": failures,
                "notes": notes,
            },
            indent=2,
        )
        + "\n"
    )
    if failures:
        print("\nFAILURES:", *failures, sep="\n  ", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
