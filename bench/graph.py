"""Graph benchmark: how fast the Console draws a Machine (console/graph.py), first and from the cache.

    python -m bench.graph              # the full run (`make bench-graph`, and `make bench`)
    python -m bench.graph --quick      # a smoke run: fewer samples
    python -m bench.graph --strict     # exit 1 when a target is missed too (default: only on a wrong result)

The Machine is generated (`big_machine`, built with `jr2_setup(...).create_machine`, so it is a real jr2 Machine):
300 states below the root: 8 Agent states `team<k>` (each a compound of 3 groups of 8 leaves, guarded steps from
leaf to leaf, a guarded jump between groups, an Effect with onDone/onError in each group's last leaf, an `after`
timeout on each group's first leaf), a parallel state `watch` with 3 dashed regions of 20 leaves chained by
guarded `always` and `after` edges, a Gate state `review` with a deep history state and 7 leaves, a `failed` state
that invokes `fail`, and two final states.

Five measurements, each against its target where it has one:

1. The first draw: `machine_svg(machine)` with an empty cache (the DOT built, graphviz's `dot` run, the SVG's
   groups named). Target: < 2 s. Each sample clears the cache first.
2. The cached draw of the same Machine object (what the Console does: it keeps its Machines for the life of the
   process): the Machine remembers its cache key, so this is two dict lookups. Target: < 10 ms.
3. The cached draw of an equal Machine built anew (a process that loads its workflows again): the DOT built and
   hashed, the cache keyed by shape digest plus DOT hash hit, the same string returned. Target: < 10 ms.
4. `lit_svg(svg, active, visited)` with 12 active and 40 visited states, as a run page calls it on every render.
   No target.
5. `lit_svg`'s first call on an SVG, which indexes the SVG's state groups once. No target.

The first draw is timed on wall time (graphviz runs in a child process, which this process's CPU clock does not
see); the others on wall and this process's CPU time, the verdict reading CPU (--clock wall to judge on wall time).
Correctness is checked on every sample: the SVG has one `<g id="state-...">` per state path, with clusters for the
compound states, edges of every kind and the invokes of every kind; a cached draw must return the very same string;
`lit_svg` must mark exactly the states asked. A wrong result exits 1 and reports no number. Results go to stdout
(markdown) and bench/results/graph.json. See docs/benchmarks.md, "Console: drawing a Machine".
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import re
import statistics
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).resolve().parent / "results" / "graph.json"

if str(ROOT) not in sys.path:  # `python bench/graph.py` as well as `python -m bench.graph`
    sys.path.insert(0, str(ROOT))

from bench.common import finish  # noqa: E402
from bench.host import cpu_model  # noqa: E402
from engine import Machine, agent, define_event, effect, fail, jr2_setup  # noqa: E402
from engine.runtime.graph import clear_cache, lit_svg, machine_svg, state_paths  # noqa: E402


class WrongResult(AssertionError):
    """The drawing is not what the bench expects: no number is reported for it."""


def expect(got: Any, want: Any, what: str) -> None:
    if got != want:
        raise WrongResult(f"{what}: got {got!r:.300}, expected {want!r:.300}")


# ----------------------------------------------------------------------------------------------------------------
# The Machine
# ----------------------------------------------------------------------------------------------------------------

TEAMS, GROUPS, LEAVES = 8, 3, 8  # 8 x (1 + 3 x (1 + 8)) = 224 states
REGIONS, REGION_LEAVES = 3, 20  # 1 + 3 x (1 + 20) = 64 states
REVIEW_LEAVES = 7  # 1 + 1 (history) + 7 = 9 states; with `failed`, `done` and `cancelled`: 300


class Step(BaseModel):
    """No params: an Effect entered by a pick must read the pick's params, and these carry none."""


def ready(context: dict[str, Any]) -> bool:
    """A named guard: shown as `[ready]` on its edges."""
    return context["level"] >= 1


def big_machine() -> Machine:
    """The 300-state Machine described in the module's docstring."""
    events = [
        define_event(name="approve", input=Step, description="The reviewer approves."),
        define_event(name="cancel", input=Step, description="Stop everything."),
    ]
    actors: dict[str, Any] = {"lint": effect.command(["true"], timeout=5.0), "fail": fail()}
    states: dict[str, Any] = {}
    for k in range(TEAMS):
        slot = f"agent{k}"
        actors[slot] = agent(model=f"script/{slot}", instructions=f"You are Agent {k} of the graph benchmark.")
        groups: dict[str, Any] = {}
        for g in range(GROUPS):
            leaves: dict[str, Any] = {}
            for i in range(LEAVES):
                name = f"a{k}_g{g}_s{i}"
                events.append(define_event(name=name, input=Step, description=f"Step {i} of group {g}."))
                nxt = f"l{i + 1}" if i + 1 < LEAVES else "l0"
                leaf: dict[str, Any] = {
                    "on": {name: {"target": nxt, "guard": ready if i % 2 else (lambda context: True)}}
                }
                if i == 0:
                    leaf["after"] = {30000: f"#big.team{k}.g{g}.l{LEAVES - 1}"}
                if i == LEAVES - 1:
                    leaf["invoke"] = {
                        "src": "lint",
                        "onDone": "l0",
                        "onError": {"target": f"#big.team{k}.g{(g + 1) % GROUPS}"},
                    }
                leaves[f"l{i}"] = leaf
            jump = f"a{k}_jump{g}"
            events.append(define_event(name=jump, input=Step, description=f"Leave group {g}."))
            groups[f"g{g}"] = {
                "initial": "l0",
                "states": leaves,
                "on": {jump: {"target": f"g{(g + 1) % GROUPS}", "guard": "ready"}},
            }
        states[f"team{k}"] = {
            "invoke": {"src": slot, "input": {"prompt": f"Work, Agent {k}."}},
            "initial": "g0",
            "states": groups,
            "on": {"agent.fault": "#big.failed"},
        }
        if k + 1 < TEAMS:
            states[f"team{k}"]["onDone"] = f"team{k + 1}"
    regions: dict[str, Any] = {}
    for r in range(REGIONS):
        leaves = {}
        for i in range(REGION_LEAVES):
            nxt = f"w{i + 1}" if i + 1 < REGION_LEAVES else "w0"
            leaves[f"w{i}"] = (
                {"always": {"target": nxt, "guard": "ready"}} if i % 2 == 0 else {"after": {1000 * (i + 1): nxt}}
            )
        regions[f"r{r}"] = {"initial": "w0", "states": leaves}
    states["watch"] = {"type": "parallel", "states": regions, "on": {"cancel": "cancelled"}}
    review: dict[str, Any] = {"hist": {"type": "history", "history": "deep"}}
    for i in range(REVIEW_LEAVES):
        review[f"v{i}"] = {"on": {"approve": f"v{i + 1}" if i + 1 < REVIEW_LEAVES else "#big.done"}}
    states["review"] = {"invoke": {"src": "gate", "id": "review"}, "initial": "v0", "states": review}
    states["failed"] = {"invoke": {"src": "fail", "input": {"reason": "an Agent's Turn could not go on"}}}
    states["done"] = {"type": "final"}
    states["cancelled"] = {"type": "final"}
    return jr2_setup(events=events, actors=actors, guards={"ready": ready}).create_machine(
        {
            "id": "big",
            "context": {"level": 1},
            "initial": "team0",
            "states": states,
            "on": {"cancel": ".cancelled"},
        }
    )


# ----------------------------------------------------------------------------------------------------------------
# Checks
# ----------------------------------------------------------------------------------------------------------------

SVG_NS = "{http://www.w3.org/2000/svg}"


def check_drawing(machine: Machine, svg: str) -> None:
    """The drawing is whole: one group per state path (clusters for the compound states), every edge kind, every
    invoke kind, and nothing left of graphviz's own ids."""
    root = ET.fromstring(svg)
    ids: dict[str, list[str]] = {}
    for g in root.iter(SVG_NS + "g"):
        if g.get("id") is not None:
            if g.get("id") in ids:
                raise WrongResult(f"two groups have the id {g.get('id')!r}")
            ids[g.get("id") or ""] = (g.get("class") or "").split()
    want = {"state-" + p for p in state_paths(machine)}
    expect({i for i in ids if i.startswith("state-")}, want, "state groups")
    for node in machine.nodes:
        kind = "cluster" if node.states else "node"
        got = ids["state-" + ".".join(node.path)]
        if kind not in got:
            raise WrongResult(f"state {'.'.join(node.path)!r} is drawn as {got}, not a {kind}")
    kinds = {c for classes in ids.values() for c in classes}
    for needed in (
        "edge-event",
        "edge-always",
        "edge-after",
        "edge-done",
        "edge-error",
        "edge-initial",
        "invokes-agent",
        "invokes-gate",
        "invokes-effect",
        "invokes-fail",
        "state-parallel",
        "region",
        "state-history",
        "state-final",
    ):
        if needed not in kinds:
            raise WrongResult(f"nothing in the drawing has the class {needed!r}")
    edges = sum("edge" in classes for classes in ids.values())
    transitions = sum(len(t.target or ()) for n in machine.nodes for t in n.all_transitions())
    initials = sum(1 for n in machine.nodes if n.type == "compound")
    expect(edges, transitions + initials, "edges (one per transition target, one per initial marker)")
    if re.search(r'id="jr2_\d+"', svg):
        raise WrongResult("a group still has the id graphviz was given")


def check_lit(svg: str, lit: str, active: list[str], visited: list[str]) -> None:
    marked: dict[str, set[str]] = {"active": set(), "visited": set()}
    for g in ET.fromstring(lit).iter(SVG_NS + "g"):
        classes = (g.get("class") or "").split()
        for mark in marked:
            if mark in classes:
                marked[mark].add(g.get("id") or "")
    expect(marked["active"], {"state-" + p for p in active}, "groups lit active")
    expect(marked["visited"], {"state-" + p for p in visited}, "groups lit visited")
    expect(lit.replace(" active", "").replace(" visited", ""), svg, "lit_svg changed nothing but the classes")


# ----------------------------------------------------------------------------------------------------------------
# Timing
# ----------------------------------------------------------------------------------------------------------------


def measure(
    call: Callable[[], Any],
    check: Callable[[Any], None],
    samples: int,
    per_sample: int,
    before: Callable[[], None] | None = None,
) -> dict[str, Any]:
    """`samples` samples of `per_sample` calls each; every call's result is checked (outside the timing). Each
    sample is timed on wall time (perf_counter) and this process's CPU time (process_time), per call."""
    wall, cpu = [], []
    for _ in range(samples):
        gc.collect()
        total_wall = total_cpu = 0.0
        for _ in range(per_sample):
            if before is not None:
                before()
            w0, c0 = time.perf_counter(), time.process_time()
            result = call()
            total_wall += time.perf_counter() - w0
            total_cpu += time.process_time() - c0
            check(result)
        wall.append(total_wall / per_sample)
        cpu.append(total_cpu / per_sample)
    return {"calls": per_sample, "wall_s": wall, "cpu_s": cpu}


@dataclass
class Row:
    what: str
    result: dict[str, Any]
    target_ms: float | None
    clock: str  # the clock the verdict reads: "wall" for the first draw (graphviz runs in a child process)

    def ms(self, clock: str) -> float:
        return statistics.median(self.result[f"{clock}_s"]) * 1e3

    def ok(self) -> bool:
        return self.target_ms is None or self.ms(self.clock) < self.target_ms

    @staticmethod
    def shown(ms: float) -> str:
        return f"{ms:,.0f} ms" if ms >= 100 else f"{ms:,.2f} ms" if ms >= 0.1 else f"{ms * 1e3:,.1f} us"

    def target_text(self) -> str:
        return "" if self.target_ms is None else f"< {self.target_ms:g} ms ({self.clock})"


def dot_version() -> str:
    try:
        out = subprocess.run(["dot", "-V"], capture_output=True, text=True, timeout=10)
        return (out.stderr or out.stdout).strip()
    except (OSError, subprocess.SubprocessError) as err:
        return f"dot not found ({err})"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.graph", description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="smoke run: 3 samples of fewer calls")
    ap.add_argument("--samples", type=int, help="timed samples per measurement (default 7; --quick 3)")
    ap.add_argument("--strict", action="store_true", help="exit 1 when a target is missed, too")
    ap.add_argument(
        "--clock",
        choices=["cpu", "wall"],
        default="cpu",
        help="the clock the cached draws' verdict reads (default cpu: this process's CPU time, which "
        "other processes on a shared machine do not inflate); the first draw is always judged on "
        "wall time, since `dot` runs in a child process",
    )
    ap.add_argument("--json", type=Path, default=RESULTS, help=f"results file (default {RESULTS.relative_to(ROOT)})")
    args = ap.parse_args(argv)
    samples = args.samples or (3 if args.quick else 7)
    scale = 10 if args.quick else 1

    load = " / ".join(f"{x:.1f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "?"
    t0 = time.perf_counter()
    machine = big_machine()
    build_ms = (time.perf_counter() - t0) * 1e3
    paths = state_paths(machine)
    states = len(paths) - 1
    transitions = sum(len(t.target or ()) for n in machine.nodes for t in n.all_transitions())
    print(f"# Graph bench — Python {platform.python_version()} on {cpu_model()}, {dot_version()}", flush=True)
    print(
        f"big Machine: {states} states below the root, {transitions} transition edges, built in {build_ms:.0f} ms",
        flush=True,
    )
    results: dict[str, Any] = {
        "python": platform.python_version(),
        "cpu": cpu_model(),
        "dot": dot_version(),
        "samples": samples,
        "load_average": load,
        "verdict_clock": args.clock,
        "machine": {"states": states, "transition_edges": transitions, "build_ms": build_ms},
    }
    rows: list[Row] = []
    try:
        if states != 300:
            raise WrongResult(f"the generated Machine has {states} states below the root, not 300")
        clear_cache()
        svg = machine_svg(machine)
        check_drawing(machine, svg)
        results["svg_bytes"] = len(svg.encode("utf-8"))
        print(f"  SVG: {results['svg_bytes']:,} bytes", flush=True)

        def first_check(result: str) -> None:
            expect(result, svg, "a first draw (the same SVG as before)")

        rows.append(
            Row(
                "first draw: `machine_svg` with an empty cache (DOT, `dot`, naming the groups)",
                measure(lambda: machine_svg(machine), first_check, samples, 1, before=clear_cache),
                2000,
                "wall",
            )
        )
        print(f"  first draw: {rows[-1].shown(rows[-1].ms('wall'))} wall", flush=True)

        cached = machine_svg(machine)

        def same_object(result: str) -> None:
            if result is not cached:
                raise WrongResult("a cached draw returned another string than the cached one")

        rows.append(
            Row(
                "cached draw: `machine_svg` again, same Machine",
                measure(lambda: machine_svg(machine), same_object, samples, 1000 // scale),
                10,
                args.clock,
            )
        )
        print(f"  cached draw: {rows[-1].shown(rows[-1].ms(args.clock))} {args.clock}", flush=True)

        anew = [big_machine() for _ in range(max(2, 20 // scale))]
        queue = list(anew)

        def next_anew() -> str:
            return machine_svg(queue.pop())

        def refill() -> None:
            if not queue:
                queue.extend(anew)
                clear_keys(anew)

        rows.append(
            Row(
                "cached draw: an equal Machine built anew (DOT built and hashed, cache hit)",
                measure(next_anew, same_object, samples, len(anew), before=refill),
                10,
                args.clock,
            )
        )
        print(f"  cached draw of an equal Machine: {rows[-1].shown(rows[-1].ms(args.clock))} {args.clock}", flush=True)

        active = [p for p in paths if p.startswith("team3")][:11] + [""]
        visited = [p for p in paths if p.startswith(("team0", "team1"))][:40]
        lit_svg(svg, active, visited)  # indexes the SVG once, as a run page's first render does
        rows.append(
            Row(
                f"`lit_svg`: {len(active)} active, {len(visited)} visited states",
                measure(
                    lambda: lit_svg(svg, active, visited),
                    lambda lit: check_lit(svg, lit, active, visited),
                    samples,
                    200 // scale,
                ),
                None,
                args.clock,
            )
        )
        print(f"  lit_svg: {rows[-1].shown(rows[-1].ms(args.clock))} {args.clock}", flush=True)
        rows.append(
            Row(
                "`lit_svg`, the first call on an SVG (indexing its state groups)",
                measure(
                    lambda: lit_svg(svg, active, visited),
                    lambda lit: check_lit(svg, lit, active, visited),
                    samples,
                    50 // scale,
                    before=clear_cache,
                ),
                None,
                args.clock,
            )
        )
        print(f"  lit_svg, first call: {rows[-1].shown(rows[-1].ms(args.clock))} {args.clock}", flush=True)
    except WrongResult as err:
        print(f"\nWRONG RESULT: {err}\nno numbers are reported for a drawing that is wrong", file=sys.stderr)
        return 1

    print()
    print(f"| measurement | wall, median of {samples} | CPU, median of {samples} | target | |")
    print("| --- | ---: | ---: | ---: | --- |")
    for row in rows:
        verdict = "" if row.target_ms is None else "ok" if row.ok() else "MISSED"
        print(
            f"| {row.what} | {row.shown(row.ms('wall'))} | {row.shown(row.ms('cpu'))} | {row.target_text()} | "
            f"{verdict} |"
        )
    print(
        f"\nms per call (us = microseconds); CPU is this process's only, so the first draw's CPU leaves out `dot`. "
        f"Load average {load} on {os.cpu_count()} CPUs."
    )
    results["rows"] = [
        {
            "measurement": r.what,
            "target": r.target_text(),
            "wall_ms": r.ms("wall"),
            "cpu_ms": r.ms("cpu"),
            "ok": r.ok(),
            **r.result,
        }
        for r in rows
    ]
    missed = [row.what for row in rows if not row.ok()]
    return finish(results, args.json, missed, args.strict)


def clear_keys(machines: list[Machine]) -> None:
    """Make these Machine objects forget their cache key, as new objects would (the drawing stays cached)."""
    from engine.runtime import graph

    for machine in machines:
        graph._keys.pop(machine, None)


if __name__ == "__main__":
    sys.exit(main())
