"""Differential test: our statechart interpreter against xstate 5 itself, on random charts.

Each seed gives a random chart and 30 events (charts.py). xstate runs them in one node process per batch
(xstate_runner.mjs); our engine runs the same charts through its pure `initial_transition` / `transition`; value,
status, context (the action log and the counter) and output must be identical after every event.

Size: 500 charts by default (`JR2_DIFF_CHARTS=20000` for the nightly run); `JR2_DIFF_SEED_START` moves the seed
window; `JR2_DIFF_SEEDS=3,17` runs only those seeds. xstate comes from `make node`; without it the test fails,
unless `JR2_DIFF_ALLOW_SKIP=1`. A mismatch prints the seed, the chart, the events so far and both results;
`python -m tests.differential.shrink SEED` shrinks it to a minimal chart, `python -m tests.differential.trace SEED`
shows both engines microstep by microstep. regressions.json keeps the minimal charts of past mismatches.
"""

from __future__ import annotations

from tests.differential import harness, xstate
from tests.differential.charts import generate
from tests.differential.checks import Mode, check_differential, check_generator, check_regressions

DEFAULT_CHARTS = 500
MAX_REPORTED = 5
PURE = Mode(
    noun="chart",
    generator="charts.py",
    generate=generate,
    run_xstate=harness.run_xstate,
    run_ours=harness.run_ours,
    describe=harness.describe,
    mismatch_kind=harness.mismatch_kind,
    regressions=xstate.HERE / "regressions.json",
)


def test_runner_is_deterministic_and_generator_is_valid():
    """The generator never makes a chart xstate rejects, and a seed always gives the same chart."""
    xstate.require_xstate()
    check_generator(PURE, 100)


def test_regressions():
    """The minimal charts where the engine once differed from xstate (regressions.json) still agree."""
    xstate.require_xstate()
    check_regressions(PURE)


def test_differential():
    xstate.require_xstate()
    check_differential(PURE, xstate.seeds("JR2_DIFF_SEEDS", ("JR2_DIFF_CHARTS",), DEFAULT_CHARTS), MAX_REPORTED)
