"""The three checks both differential modes make, each against xstate: the chart generator is deterministic and
makes only charts xstate runs, the regression cases still agree, and a window of random charts agrees step by
step (a mismatch reports its seed, kind and both runs)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.differential import xstate
from tests.differential.harness import first_mismatch

Run = list[dict]


@dataclass(frozen=True)
class Mode:
    """One way of comparing the engines: its charts (`noun` in messages, made by `generator`), the two runs of a
    chart, and how a mismatch is told."""

    noun: str
    generator: str
    generate: Callable[[int], dict]
    run_xstate: Callable[[list[dict]], list[Run]]
    run_ours: Callable[[dict], Run]
    describe: Callable[[dict, Run, Run, int], str]
    mismatch_kind: Callable[[Run, Run, int], str]
    regressions: Path


def check_generator(mode: Mode, count: int) -> None:
    """A seed always gives the same chart, and xstate never throws on one outright."""
    charts = [mode.generate(seed) for seed in range(count)]
    assert charts == [mode.generate(seed) for seed in range(count)]
    for chart, steps in zip(charts, mode.run_xstate(charts)):
        errors = [s["error"] for s in steps if "error" in s]
        assert not errors, f"xstate threw on the {mode.noun} of seed {chart['seed']}: {errors[0]}"
        assert len(steps) == len(chart["events"]) + 1


def check_regressions(mode: Mode) -> None:
    """The minimal charts where the engine once differed from xstate still agree."""
    cases = json.loads(mode.regressions.read_text())["cases"]
    failures = []
    for case, theirs in zip(cases, mode.run_xstate(cases)):
        assert not any("error" in s for s in theirs), f"xstate throws on regression case {case['name']}: {theirs[-1]}"
        ours = mode.run_ours(case)
        step = first_mismatch(theirs, ours)
        if step is not None:
            failures.append(
                f"[{case['name']}] {case['note']}\n" + mode.describe({**case, "seed": case["name"]}, theirs, ours, step)
            )
    if failures:
        pytest.fail("\n\n".join(failures), pytrace=False)


def check_differential(mode: Mode, seeds: list[int], max_reported: int) -> None:
    """The charts of `seeds` run the same in both engines (xstate's runs made meanwhile, in the background)."""
    t0 = time.perf_counter()
    charts = [mode.generate(seed) for seed in seeds]
    theirs_future = xstate.in_background(mode.run_xstate, charts)
    ours_all = xstate.run_all(mode.run_ours, charts)
    theirs_all = theirs_future.result()
    elapsed = time.perf_counter() - t0

    invalid, failures = [], []
    for chart, theirs, ours in zip(charts, theirs_all, ours_all):
        if any("error" in s for s in theirs):
            # The generator must only make charts xstate accepts: this is a bug of the generator, not of the engine.
            invalid.append(f"seed {chart['seed']}: xstate threw {next(s['error'] for s in theirs if 'error' in s)}")
            continue
        step = first_mismatch(theirs, ours)
        if step is not None:
            failures.append((chart, theirs, ours, step))

    assert not invalid, f"{mode.generator} made charts xstate throws on (fix the generator):\n" + "\n".join(
        invalid[:20]
    )
    if failures:
        kinds: dict[str, list[int]] = {}
        for chart, theirs, ours, step in failures:
            kinds.setdefault(mode.mismatch_kind(theirs, ours, step), []).append(chart["seed"])
        summary = "\n".join(f"  {k}: {len(v)} charts, seeds {v[:15]}" for k, v in sorted(kinds.items()))
        details = "\n\n".join(mode.describe(*f) for f in failures[:max_reported])
        pytest.fail(
            f"{len(failures)} of {len(charts)} {mode.noun}s differ from xstate ({elapsed:.1f}s). By kind:\n"
            f"{summary}\n\nThe first {min(max_reported, len(failures))}:\n\n{details}",
            pytrace=False,
        )
