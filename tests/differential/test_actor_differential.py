"""Differential test, actor mode: our running actors against xstate 5's, on random actor charts.

Each seed gives a root machine, the child machines it invokes or spawns, and 30 steps (actor_charts.py). xstate
runs them with `createActor` and its `SimulatedClock` (xstate_actor_runner.mjs), we with `create_actor` and ours
(harness_actors.py); after `start()` and after every step, the value, status, context, output, the children
(id, status, value) and the observed log (custom actions, the logger, emitted events, in order) must be
identical. The pure-transition mode (test_differential.py) stays as it is.

Size: 300 charts by default; `JR2_DIFF_ACTOR_CHARTS` sets it (else `JR2_DIFF_CHARTS`, the nightly knob of both
modes); `JR2_DIFF_SEED_START` moves the seed window; `JR2_DIFF_ACTOR_SEEDS=3,17` runs only those seeds.
actor_regressions.json keeps minimal charts of past mismatches. xstate comes from `make node`.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from tests.differential import harness, harness_actors
from tests.differential.actor_charts import generate
from tests.differential.test_differential import _require_xstate

DEFAULT_CHARTS = 300
MAX_REPORTED = 3


def _seeds() -> list[int]:
    if os.environ.get("JR2_DIFF_ACTOR_SEEDS"):
        return [int(s) for s in os.environ["JR2_DIFF_ACTOR_SEEDS"].replace(",", " ").split()]
    n = int(os.environ.get("JR2_DIFF_ACTOR_CHARTS") or os.environ.get("JR2_DIFF_CHARTS") or DEFAULT_CHARTS)
    start = int(os.environ.get("JR2_DIFF_SEED_START") or 0)
    return list(range(start, start + n))


def test_actor_generator_is_deterministic_and_valid():
    """A seed always gives the same chart, and xstate never throws outright on one (an actor that fails is fine:
    its status says so)."""
    _require_xstate()
    charts = [generate(seed) for seed in range(50)]
    assert charts == [generate(seed) for seed in range(50)]
    for chart, steps in zip(charts, harness_actors.run_xstate(charts)):
        errors = [s["error"] for s in steps if "error" in s]
        assert not errors, f"xstate threw on the actor chart of seed {chart['seed']}: {errors[0]}"
        assert len(steps) == len(chart["events"]) + 1


def test_actor_regressions():
    """The minimal actor charts where the engine once differed from xstate still agree."""
    _require_xstate()
    cases = json.loads((Path(__file__).parent / "actor_regressions.json").read_text())["cases"]
    failures = []
    for case, theirs in zip(cases, harness_actors.run_xstate(cases)):
        assert not any("error" in s for s in theirs), f"xstate throws on regression case {case['name']}"
        ours = harness_actors.run_ours(case)
        step = harness.first_mismatch(theirs, ours)
        if step is not None:
            failures.append(f"[{case['name']}] {case['note']}\n"
                            + harness_actors.describe({**case, "seed": case["name"]}, theirs, ours, step))
    if failures:
        pytest.fail("\n\n".join(failures), pytrace=False)


def test_actor_differential():
    _require_xstate()
    t0 = time.perf_counter()
    charts = [generate(seed) for seed in _seeds()]
    theirs_future = harness_actors.run_xstate_async(charts)
    ours_all = [harness_actors.run_ours(chart) for chart in charts]
    theirs_all = theirs_future.result()
    elapsed = time.perf_counter() - t0

    invalid, failures = [], []
    for chart, theirs, ours in zip(charts, theirs_all, ours_all):
        if any("error" in s for s in theirs):
            invalid.append(f"seed {chart['seed']}: xstate threw {next(s['error'] for s in theirs if 'error' in s)}")
            continue
        step = harness.first_mismatch(theirs, ours)
        if step is not None:
            failures.append((chart, theirs, ours, step))

    assert not invalid, "actor_charts.py made charts xstate throws on (fix the generator):\n" + "\n".join(invalid[:20])
    if failures:
        kinds: dict[str, list[int]] = {}
        for chart, theirs, ours, step in failures:
            kinds.setdefault(harness_actors.mismatch_kind(theirs, ours, step), []).append(chart["seed"])
        summary = "\n".join(f"  {k}: {len(v)} charts, seeds {v[:15]}" for k, v in sorted(kinds.items()))
        details = "\n\n".join(harness_actors.describe(*f) for f in failures[:MAX_REPORTED])
        pytest.fail(
            f"{len(failures)} of {len(charts)} actor charts differ from xstate ({elapsed:.1f}s). By kind:\n{summary}\n\n"
            f"The first {min(MAX_REPORTED, len(failures))}:\n\n{details}",
            pytrace=False,
        )
