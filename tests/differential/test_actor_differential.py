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

from tests.differential import harness_actors, xstate
from tests.differential.actor_charts import generate
from tests.differential.checks import Mode, check_differential, check_generator, check_regressions

DEFAULT_CHARTS = 300
MAX_REPORTED = 3
ACTORS = Mode(
    noun="actor chart",
    generator="actor_charts.py",
    generate=generate,
    run_xstate=harness_actors.run_xstate,
    run_ours=harness_actors.run_ours,
    describe=harness_actors.describe,
    mismatch_kind=harness_actors.mismatch_kind,
    regressions=xstate.HERE / "actor_regressions.json",
)


def test_actor_generator_is_deterministic_and_valid():
    """A seed always gives the same chart, and xstate never throws outright on one (an actor that fails is fine:
    its status says so)."""
    xstate.require_xstate()
    check_generator(ACTORS, 50)


def test_actor_regressions():
    """The minimal actor charts where the engine once differed from xstate still agree."""
    xstate.require_xstate()
    check_regressions(ACTORS)


def test_actor_differential():
    xstate.require_xstate()
    seeds = xstate.seeds("JR2_DIFF_ACTOR_SEEDS", ("JR2_DIFF_ACTOR_CHARTS", "JR2_DIFF_CHARTS"), DEFAULT_CHARTS)
    check_differential(ACTORS, seeds, MAX_REPORTED)
