"""Menu and Session benchmark: how fast the Allowed picks are read, and how many scripted runs a process does.

    python -m bench.menu              # the full run (`make bench-menu`, and `make bench` after the statechart)
    python -m bench.menu --quick      # a smoke run: fewer calls and samples
    python -m bench.menu --profile    # also cProfile allowed_picks on the 300-state workflow (top functions)
    python -m bench.menu --strict     # exit 1 when a target is missed too (default: only on a wrong result)

Three measurements, each against its target:

1. `session.allowed_picks("writer")` on the notes workflow (workflows/notes.py) after one ask/reply, where both
   `ask` and the guarded `done` are allowed: target < 50 us per call.
2. `session.allowed_picks("agent0")` on a generated workflow (`big_machine`): a parallel root with 10 Agent states,
   each with 29 descendant modes (3 groups of 9/9/8 leaves), 300 states below the root and a 31-pick Menu per Agent
   (guarded picks on the leaves, the groups and the Agent's state, plus a root event whose guard reads the pick's
   input): target < 1 ms per call.
3. Full scripted runs of the notes workflow through Session (start, pick `ask`, the Gate's `reply`, pick `done`,
   drain the outputs): target > 2,000 runs per second in one process.

Each measurement: one untimed warm-up, then --samples timed samples (default 7) of a fixed number of calls or runs,
GC on (a gc.collect() before each sample). Each sample is timed on two clocks: wall (time.perf_counter) and this
process's CPU time (time.process_time); the table shows the median sample on each, and the verdict reads the CPU
column (--clock wall to judge on wall time), because on a shared machine other processes inflate wall time; on an
idle machine the two agree. Every sample is in the JSON. Correctness is checked inside the
timed loops: every allowed_picks call's result is compared with the expected list, every run must end `done` with
the expected output; a wrong result fails the bench (exit 1), so a broken Session cannot produce a fast number.
Results go to stdout (markdown) and bench/results/menu.json. See docs/benchmarks.md, "Menu and Session".
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import os
import platform
import pstats
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).resolve().parent / "results" / "menu.json"

if str(ROOT) not in sys.path:  # `python bench/menu.py` as well as `python -m bench.menu`
    sys.path.insert(0, str(ROOT))

from bench.common import finish  # noqa: E402
from bench.host import cpu_model  # noqa: E402
from engine import Machine, Session, agent, assign, define_event, jr2_setup  # noqa: E402


class WrongResult(AssertionError):
    """The Session answered something else than the bench expects: no number is reported for it."""


# ----------------------------------------------------------------------------------------------------------------
# The workflows
# ----------------------------------------------------------------------------------------------------------------


def notes_machine() -> Machine:
    from workflows.notes import machine

    return machine


AGENTS = 10
LEAVES = (9, 9, 8)  # leaves per group: 3 groups + 26 leaves = 29 modes below each Agent state


class Step(BaseModel):
    why: str = Field(default="", description="Why this step.")


class Note(BaseModel):
    text: str = Field(description="A note for the log.")


def _at_least(level: int) -> Callable[..., bool]:
    def guard(context: dict[str, Any]) -> bool:
        return context["level"] >= level

    return guard


def big_machine(agents: int = AGENTS, leaves: tuple[int, ...] = LEAVES) -> Machine:
    """A parallel root holding `agents` Agent states `agent<k>` (slot `agent<k>`), each a compound of groups
    `g<g>` (modes) of leaves `m<g>_<i>` (modes). Agent k's picks, all guarded by the context's `level`:
      - `a<k>_step<j>` on leaf j (numbered across the groups): to the next leaf; guard level >= j % 3;
      - `a<k>_jump<g>` on group g: to the next group; guard level >= 2;
      - `a<k>_reset` on the Agent state: back to its first group; guard level >= 1;
      - `note` on the root (every Agent's Menu): targetless, guard reads the pick's `text` (stays allowed).
    """
    groups = len(leaves)
    events = [define_event(name="note", input=Note, description="Write a note.")]
    states: dict[str, Any] = {}
    actors: dict[str, Any] = {}
    for k in range(agents):
        slot = f"agent{k}"
        actors[slot] = agent(model=f"script/{slot}", instructions=f"You are Agent {k} of the big benchmark.")
        group_states: dict[str, Any] = {}
        j = 0
        total = sum(leaves)
        for g, count in enumerate(leaves):
            leaf_states: dict[str, Any] = {}
            for i in range(count):
                name = f"a{k}_step{j}"
                events.append(define_event(name=name, input=Step, description=f"Step {j} of Agent {k}."))
                nxt = j + 1
                if nxt == total:
                    target = f"#big.agent{k}.g0.m0_0"
                else:
                    ng = next(x for x in range(groups) if nxt < sum(leaves[: x + 1]))
                    target = f"#big.agent{k}.g{ng}.m{ng}_{nxt - sum(leaves[:ng])}"
                leaf_states[f"m{g}_{i}"] = {"on": {name: {"target": target, "guard": _at_least(j % 3)}}}
                j += 1
            jump = f"a{k}_jump{g}"
            events.append(define_event(name=jump, input=Step, description=f"Jump out of group {g} of Agent {k}."))
            group_states[f"g{g}"] = {
                "initial": f"m{g}_0",
                "states": leaf_states,
                "on": {jump: {"target": f"#big.agent{k}.g{(g + 1) % groups}", "guard": _at_least(2)}},
            }
        reset = f"a{k}_reset"
        events.append(define_event(name=reset, input=Step, description=f"Agent {k} starts over."))
        states[slot] = {
            "invoke": {"src": slot, "input": {"prompt": f"Work through your modes, Agent {k}."}},
            "initial": "g0",
            "states": group_states,
            "on": {reset: {"target": f"#big.agent{k}.g0", "guard": _at_least(1)}},
        }
    return jr2_setup(events=events, actors=actors).create_machine(
        {
            "id": "big",
            "type": "parallel",
            "context": {"level": 1, "notes": 0},
            "on": {
                "note": {
                    "guard": lambda event: bool(event.text),
                    "actions": assign(notes=lambda context: context["notes"] + 1),
                }
            },
            "states": states,
        }
    )


# ----------------------------------------------------------------------------------------------------------------
# The measurements
# ----------------------------------------------------------------------------------------------------------------

CHANGES = "Faster Menus\nA `jr2 check` command"
QUESTION = "Who is the audience?"
REPLY = "Developers who write workflows."
NOTES = "## 0.2\n- Faster Menus\n- `jr2 check`"


def notes_session_ready(machine: Machine) -> Session:
    """A notes run after one ask/reply: the writer may pick `ask` or `done` (whose guard reads the context)."""
    session = Session(machine, {"changes": CHANGES})
    expect(session.pick("writer", "ask", {"question": QUESTION}).outcome, "outstanding", "pick ask")
    expect(session.send_gate(session.gates[0].id, "reply", {"text": REPLY}).outcome, "delivered", "gate reply")
    return session


def scripted_run(machine: Machine) -> Session:
    """One full run of the notes workflow, as its host drives it (outputs drained as it goes)."""
    session = Session(machine, {"changes": CHANGES})
    session.drain()
    session.pick("writer", "ask", {"question": QUESTION})
    gate = session.gates[0].id
    session.drain()
    session.send_gate(gate, "reply", {"text": REPLY})
    session.drain()
    session.pick("writer", "done", {"notes": NOTES})
    session.drain()
    return session


def expect(got: Any, want: Any, what: str) -> None:
    if got != want:
        raise WrongResult(f"{what}: got {got!r}, expected {want!r}")


def measure(loop: Callable[[], int], count: int, samples: int, per: str) -> dict[str, Any]:
    """Run `loop` (which does `count` calls or runs and returns how many went wrong) `samples` times; record each
    sample's wall time (perf_counter) and this process's CPU time (process_time)."""
    wall, cpu = [], []
    for _ in range(samples):
        gc.collect()
        w0, c0 = time.perf_counter(), time.process_time()
        wrong = loop()
        dw, dc = time.perf_counter() - w0, time.process_time() - c0
        if wrong:
            raise WrongResult(f"{wrong} of {count} {per} in a timed sample gave a wrong result")
        wall.append(dw / count)
        cpu.append(dc / count)
    return {"count": count, "wall_s": wall, "cpu_s": cpu}


def time_allowed(session: Session, agent_name: str, expected: list[str], calls: int, samples: int) -> dict[str, Any]:
    """Seconds per allowed_picks call; every result is compared with `expected`."""
    fn = session.allowed_picks
    expect(fn(agent_name), expected, f"allowed_picks({agent_name!r}) (warm-up)")

    def loop() -> int:
        wrong = 0
        for _ in range(calls):
            if fn(agent_name) != expected:
                wrong += 1
        return wrong

    return measure(loop, calls, samples, f"allowed_picks({agent_name!r}) calls")


def time_runs(machine: Machine, runs: int, samples: int) -> dict[str, Any]:
    """Seconds per scripted run; every run must end `done` with the notes it was given."""
    want = {"notes": NOTES}
    check_run(scripted_run(machine), want)

    def loop() -> int:
        bad = 0
        for _ in range(runs):
            session = scripted_run(machine)
            if session.status != "done" or session.output != want:
                bad += 1
        return bad

    return measure(loop, runs, samples, "scripted runs")


def check_run(session: Session, want: dict[str, Any]) -> None:
    expect((session.status, session.output, session.reason), ("done", want, None), "scripted run")
    kinds = [entry["kind"] for entry in session.journal]
    expect(kinds, ["start", "pick", "gate", "pick"], "scripted run's journal")
    replayed = Session.replay(session.machine, session.journal)
    expect((replayed.status, replayed.output), ("done", want), "replay of the scripted run")


def big_expected(session: Session, agents: int) -> dict[str, list[str]]:
    """What each Agent may pick at the start (level 1): its first step (guard level >= 0), its reset (>= 1) and
    `note` (guard reads the pick); not its jump (>= 2). Also checks that every Turn is open."""
    expect(sorted(t.agent for t in session.turns), sorted(f"agent{k}" for k in range(agents)), "open Turns")
    return {f"agent{k}": sorted([f"a{k}_reset", f"a{k}_step0", "note"]) for k in range(agents)}


def check_big_moves(machine: Machine) -> None:
    """The guards decide: a step moves, a jump is unmoved at level 1, the allowed picks follow the mode."""
    session = Session(machine)
    expect(session.pick("agent3", "a3_step0", {}).outcome, "answered", "agent3 step0")
    expect(session.allowed_picks("agent3"), ["a3_reset", "a3_step1", "note"], "agent3 after step0")
    expect(session.pick("agent3", "a3_jump0", {}).outcome, "unmoved", "agent3 jump0 at level 1")
    expect(session.pick("agent3", "a3_step1", {}).outcome, "answered", "agent3 step1")
    expect(session.allowed_picks("agent3"), ["a3_reset", "note"], "agent3 at m0_2 (step2 needs level 2)")
    expect(session.allowed_picks("agent0"), ["a0_reset", "a0_step0", "note"], "agent0 untouched")
    expect(session.pick("agent3", "a3_reset", {}).outcome, "answered", "agent3 reset")
    expect(session.allowed_picks("agent3"), ["a3_reset", "a3_step0", "note"], "agent3 after reset")


def profile_allowed(session: Session, agent_name: str, calls: int, top: int) -> str:
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(calls):
        session.allowed_picks(agent_name)
    profiler.disable()
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out).strip_dirs().sort_stats("tottime")
    stats.print_stats(top)
    return out.getvalue()


# ----------------------------------------------------------------------------------------------------------------
# Main
# ----------------------------------------------------------------------------------------------------------------


@dataclass
class Row:
    what: str
    machine: str
    result: dict[str, Any]
    unit: str  # "us/call" (lower is better) or "runs/s" (higher is better)
    target: float

    def value(self, clock: str) -> float:
        """The median sample on `clock` ("wall" or "cpu"), in the row's unit."""
        seconds = statistics.median(self.result[f"{clock}_s"])
        return seconds * 1e6 if self.unit == "us/call" else 1 / seconds

    def ok(self, clock: str = "cpu") -> bool:
        value = self.value(clock)
        return value < self.target if self.unit == "us/call" else value > self.target

    def shown(self, clock: str) -> str:
        value = self.value(clock)
        return f"{value:,.1f} us" if self.unit == "us/call" else f"{value:,.0f}/s"

    def target_text(self) -> str:
        return f"< {self.target:,.0f} us" if self.unit == "us/call" else f"> {self.target:,.0f}/s"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.menu", description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="smoke run: 10x fewer calls, 3 samples")
    ap.add_argument("--samples", type=int, help="timed samples per measurement (default 7; --quick 3)")
    ap.add_argument("--profile", action="store_true", help="cProfile allowed_picks on the 300-state workflow")
    ap.add_argument("--strict", action="store_true", help="exit 1 when a target is missed, too")
    ap.add_argument(
        "--clock",
        choices=["cpu", "wall"],
        default="cpu",
        help="the clock the verdict reads (default cpu: this process's CPU time, which other processes "
        "on a shared machine do not inflate)",
    )
    ap.add_argument("--json", type=Path, default=RESULTS, help=f"results file (default {RESULTS.relative_to(ROOT)})")
    args = ap.parse_args(argv)
    samples = args.samples or (3 if args.quick else 7)
    scale = 10 if args.quick else 1

    load = " / ".join(f"{x:.1f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "?"
    notes = notes_machine()
    t0 = time.perf_counter()
    big = big_machine()
    build_ms = (time.perf_counter() - t0) * 1e3
    big_states = len(big.nodes) - 1
    menu_size = len(big.menu_names("agent0"))

    print(f"# Menu and Session bench — Python {platform.python_version()} on {cpu_model()}", flush=True)
    print(
        f"big workflow: {big_states} states below the root, {AGENTS} Agents, {menu_size} picks on each Menu, "
        f"built in {build_ms:.0f} ms",
        flush=True,
    )
    rows: list[Row] = []
    results: dict[str, Any] = {
        "python": platform.python_version(),
        "cpu": cpu_model(),
        "samples": samples,
        "load_average": load,
        "verdict_clock": args.clock,
        "big": {"states": big_states, "agents": AGENTS, "menu": menu_size, "build_ms": build_ms},
    }
    try:
        ready = notes_session_ready(notes)
        rows.append(
            Row(
                '`allowed_picks("writer")`',
                "notes, after one ask/reply",
                time_allowed(ready, "writer", ["ask", "done"], 20000 // scale, samples),
                "us/call",
                50,
            )
        )
        print(f"  notes allowed_picks: {rows[-1].shown('wall')} wall, {rows[-1].shown('cpu')} CPU", flush=True)

        check_big_moves(big)
        session = Session(big)
        expected = big_expected(session, AGENTS)
        for name, want in expected.items():
            expect(session.allowed_picks(name), want, f"allowed_picks({name!r})")
        rows.append(
            Row(
                '`allowed_picks("agent0")`',
                f"big: {big_states} states, {AGENTS} Agents, {menu_size}-pick Menus",
                time_allowed(session, "agent0", expected["agent0"], 2000 // scale, samples),
                "us/call",
                1000,
            )
        )
        print(f"  big allowed_picks: {rows[-1].shown('wall')} wall, {rows[-1].shown('cpu')} CPU", flush=True)

        rows.append(
            Row(
                "scripted run: start, ask, reply, done",
                "notes",
                time_runs(notes, 5000 // scale, samples),
                "runs/s",
                2000,
            )
        )
        print(f"  notes scripted runs: {rows[-1].shown('wall')} wall, {rows[-1].shown('cpu')} CPU", flush=True)
    except WrongResult as err:
        print(f"\nWRONG RESULT: {err}\nno numbers are reported for a Session that answers wrongly", file=sys.stderr)
        return 1

    print()
    print(f"| measurement | machine | wall, median of {samples} | CPU, median of {samples} | target | |")
    print("| --- | --- | ---: | ---: | ---: | --- |")
    for row in rows:
        print(
            f"| {row.what} | {row.machine} | {row.shown('wall')} | {row.shown('cpu')} | {row.target_text()} | "
            f"{'ok' if row.ok(args.clock) else 'MISSED'} |"
        )
    print(
        f"\nus = microseconds per call, /s = runs per second; the verdict reads the {args.clock.upper()} column. "
        f"Load average {load} on {os.cpu_count()} CPUs."
    )
    missed = [row.what for row in rows if not row.ok(args.clock)]
    results["rows"] = [
        {
            "measurement": r.what,
            "machine": r.machine,
            "unit": r.unit,
            "target": r.target_text(),
            "wall": r.value("wall"),
            "cpu": r.value("cpu"),
            "ok": r.ok(args.clock),
            **r.result,
        }
        for r in rows
    ]

    if args.profile:
        text = profile_allowed(session, "agent0", 2000 // scale, 15)
        results["profile"] = text
        print('\ncProfile of allowed_picks("agent0") on the big workflow, by tottime:\n')
        print(text)

    return finish(results, args.json, missed, args.strict)


if __name__ == "__main__":
    sys.exit(main())
