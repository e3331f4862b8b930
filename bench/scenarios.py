"""Scenario benchmark: `jr2 test` on 1,000 scenarios of the examples (notes, code_review, triage).

    python -m bench.scenarios              # the full run (`make bench-scenarios`, and `make bench`)
    python -m bench.scenarios --quick      # a smoke run: 60 scenarios, one sample
    python -m bench.scenarios --count 5000 # another number of scenarios

A temporary workflows folder gets the three examples and, in each one's `<workflow>.scenarios/`, copies of the
scenarios shipped in workflows/ until there are `--count` in all (round robin over the six). Two measurements:

1. The command: `jr2 test --workflows DIR` run as a child process (`python manage.py jr2 test`), wall time, which
   includes starting Python and Django and loading the workflows. It must exit 0 and print one `ok` line per
   scenario and the summary `1000 scenarios of 3 workflows: 1000 ok`. Timed in CPU (user + system of the child,
   the verdict: < 10 s) and wall time; beside it the start-up alone (`jr2 test --schema`: Python, Django, the
   command; nothing loaded or replayed), since on a busy machine the wall time is mostly waiting for a core.
2. The replay alone, in this process: every file read and validated, and each scenario replayed and checked
   (`engine.core.journal.scenario_replay.check`), CPU time per scenario. No target.

A wrong result (a non-zero exit, a line that is not `ok`) exits 1 and reports no number. Results go to stdout
(markdown) and bench/results/scenarios.json. See docs/benchmarks.md, "Scenarios: jr2 test".
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ("notes", "code_review", "triage")
TARGET_S = 10.0


def _folder(root: Path, count: int) -> int:
    """The examples and `count` scenarios copied from the shipped ones into `root`; how many were written."""
    shipped = [
        (name, path) for name in EXAMPLES for path in sorted((ROOT / "workflows" / f"{name}.scenarios").glob("*.json"))
    ]
    for name in EXAMPLES:
        shutil.copy(ROOT / "workflows" / f"{name}.py", root / f"{name}.py")
        (root / f"{name}.scenarios").mkdir()
    for index in range(count):
        name, path = shipped[index % len(shipped)]
        shutil.copy(path, root / f"{name}.scenarios" / f"{path.stem}-{index:05d}.json")
    return count


def _child(args: list[str], cwd: Path) -> tuple[subprocess.CompletedProcess[str], float, float]:
    """Run `python manage.py jr2 ...`; its result, wall seconds and CPU seconds (user + system of the child)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "DJANGO_SETTINGS_MODULE": "jr2.settings"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), "jr2", *args], capture_output=True, text=True, env=env, cwd=cwd
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return done, wall, cpu


def _startup(root: Path) -> tuple[float, float]:
    """`jr2 test --schema`: Python, Django and the command started, no workflow loaded and nothing replayed."""
    done, wall, cpu = _child(["test", "--schema"], root)
    if done.returncode != 0:
        sys.exit(f"bench.scenarios: jr2 test --schema failed: {done.stderr[-2000:]}")
    return wall, cpu


def _command(root: Path, count: int) -> tuple[float, float]:
    done, wall, cpu = _child(["test", "--workflows", str(root)], root)
    lines = done.stdout.splitlines()
    oks = [line for line in lines[:-1] if line.split(": ", 1)[1].startswith("ok (")]
    if done.returncode != 0 or len(oks) != count or lines[-1] != f"{count} scenarios of 3 workflows: {count} ok":
        sys.exit(f"bench.scenarios: wrong result (exit {done.returncode}):\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return wall, cpu


def _in_process(root: Path, count: int) -> float:
    """CPU seconds to read, validate, replay and check every scenario, the workflows already loaded."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "jr2.settings")
    from engine.core.journal.scenario_replay import check
    from engine.runtime.loader import load_workflows
    from engine.runtime.scenario_files import read_scenarios, scenario_folder

    found = load_workflows(root)
    start = time.process_time()
    checked = 0
    for name in EXAMPLES:
        loaded = found[name]
        assert loaded.machine is not None
        for item in read_scenarios(scenario_folder(loaded), name):
            assert item.scenario is not None, item.error
            result = check(loaded.machine, item.scenario)
            if not result.ok:
                sys.exit(f"bench.scenarios: {name}/{item.name}: {result.message}")
            checked += 1
    elapsed = time.process_time() - start
    assert checked == count
    return elapsed


def main() -> int:
    from bench.common import finish

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=1000, help="scenarios in all (default 1000)")
    parser.add_argument("--reps", type=int, default=3, help="timed runs of the command (default 3)")
    parser.add_argument("--quick", action="store_true", help="60 scenarios, one run")
    parser.add_argument("--strict", action="store_true", help="exit 1 when the target is missed")
    parser.add_argument("--json", default=str(ROOT / "bench" / "results" / "scenarios.json"))
    args = parser.parse_args()
    count, reps = (60, 1) if args.quick else (args.count, args.reps)
    with tempfile.TemporaryDirectory(prefix="jr2-bench-scenarios-") as tmp:
        root = Path(tmp)
        _folder(root, count)
        command = [_command(root, count) for _ in range(reps)]
        startup = [_startup(root) for _ in range(reps)]
        replay_cpu = _in_process(root, count)
    wall = statistics.median(w for w, _ in command)
    median = statistics.median(c for _, c in command)
    base_wall = statistics.median(w for w, _ in startup)
    base_cpu = statistics.median(c for _, c in startup)
    results = {
        "scenarios": count,
        "command_wall_s": [w for w, _ in command],
        "command_cpu_s": [c for _, c in command],
        "command_wall_median_s": wall,
        "command_cpu_median_s": median,
        "startup_wall_median_s": base_wall,
        "startup_cpu_median_s": base_cpu,
        "load_average": os.getloadavg()[0],
        "replay_cpu_s": replay_cpu,
        "replay_cpu_ms_per_scenario": replay_cpu * 1000 / count,
        "python": sys.version.split()[0],
    }
    print(f"| measurement ({count} scenarios of the examples) | result | target |")
    print("| --- | --- | --- |")
    print(f"| `jr2 test` (child process, CPU, median of {reps}) | {median:.2f} s | < {TARGET_S:.0f} s |")
    print(f"| `jr2 test` (child process, wall, median of {reps}) | {wall:.2f} s | |")
    print(f"| start-up alone, `jr2 test --schema` (CPU / wall) | {base_cpu:.2f} s / {base_wall:.2f} s | |")
    print(
        f"| replay and check alone (CPU) | {replay_cpu:.2f} s ({results['replay_cpu_ms_per_scenario']:.2f} ms each) | |"
    )
    missed = [] if median < TARGET_S else [f"jr2 test on {count} scenarios < {TARGET_S:.0f} s"]
    return finish(results, Path(args.json), missed, args.strict)


if __name__ == "__main__":
    raise SystemExit(main())
