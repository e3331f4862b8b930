"""Runs charts through xstate (a node process) and through `engine.core.statechart`, and compares them step by step.

A run of a chart is a list of steps: steps[0] is the initial snapshot, steps[i] the snapshot after events[i-1].
A step is `{"value", "status", "context", "output"}`, or `{"error": "..."}` when the engine raised (the run stops
there). Both engines' runs have this shape, so they compare with `==` after a JSON round trip.

The named actions and guards here must behave exactly like those in xstate_runner.mjs.
"""

from __future__ import annotations

import copy
import json

from tests.differential import xstate

RUNNER = xstate.HERE / "xstate_runner.mjs"
#: What the runner reads of a chart, and the default of each.
SENT = {"config": None, "events": None, "trace": False}
BATCH = 1000  # charts per node process


# --- xstate ------------------------------------------------------------------------------------------------------


def run_xstate(charts: list[dict]) -> list[list[dict]]:
    """xstate's run of each chart (`{"config", "events"}`), in order: one node process per batch."""
    return xstate.run_runner(RUNNER, charts, SENT, BATCH)


# --- our engine --------------------------------------------------------------------------------------------------

_ENGINE = None


def _engine():
    """(create_machine, actions, guards), built on first use (the engine may not import yet when this loads)."""
    global _ENGINE
    if _ENGINE is None:
        from engine.core.statechart import assign, create_machine, raise_

        def log(context, event, params):
            tag = f"{params['tag']}@{event['type']}" if params.get("ev") else params["tag"]
            return {"log": [*context["log"], tag]}

        def bump(context):
            return {"count": context["count"] + 1}

        def countIs(context, params):
            return context["count"] == params["n"]

        def countLt(context, params):
            return context["count"] < params["n"]

        def countGe(context, params):
            return context["count"] >= params["n"]

        def countOdd(context):
            return context["count"] % 2 == 1

        def raised(params):
            return {"type": params["event"]}

        actions = {"log": assign(log), "bump": assign(bump), "raiseEv": raise_(raised)}
        guards = {"countIs": countIs, "countLt": countLt, "countGe": countGe, "countOdd": countOdd}
        _ENGINE = (create_machine, actions, guards)
    return _ENGINE


def _view(snapshot) -> dict:
    raw = {
        "value": snapshot.value,
        "status": snapshot.status,
        "context": snapshot.context,
        "output": snapshot.output,
    }
    return json.loads(json.dumps(raw, default=repr))


def run_ours(chart: dict, events: list[str] | None = None) -> list[dict]:
    """Our engine's run of a chart, in the same shape as xstate's."""
    create_machine, actions, guards = _engine()
    events = chart["events"] if events is None else events
    steps: list[dict] = []
    with xstate.time_limit():
        try:
            machine = create_machine(copy.deepcopy(chart["config"]), actions=actions, guards=guards)
            snapshot, _ = machine.initial_transition()
            steps.append(_view(snapshot))
        except (Exception, RecursionError, xstate.ChartTimeout) as exc:
            steps.append(xstate.error_step(exc))
            return steps
        for event in events:
            try:
                snapshot, _ = machine.transition(snapshot, {"type": event})
                steps.append(_view(snapshot))
            except (Exception, RecursionError, xstate.ChartTimeout) as exc:
                steps.append(xstate.error_step(exc))
                break
        return steps


# --- comparison --------------------------------------------------------------------------------------------------


def first_mismatch(theirs: list[dict], ours: list[dict]) -> int | None:
    """The index of the first step where the runs differ, or None if they agree."""
    for i in range(max(len(theirs), len(ours))):
        a = theirs[i] if i < len(theirs) else None
        b = ours[i] if i < len(ours) else None
        if a != b:
            return i
    return None


def kind_of(theirs: dict | None, ours: dict | None, before: dict | None = None) -> str:
    """A short name for how two steps differ (the shrinker keeps it fixed).

    `before` is the (agreed) step before: a mismatch on an event sent to a snapshot that is already "done" is
    marked "after-done:" (xstate's pure `transition` still takes transitions from a done snapshot).
    """
    prefix = "after-done:" if before is not None and before.get("status") == "done" else ""
    if theirs is None or ours is None:
        return prefix + "length"
    if "error" in theirs or "error" in ours:
        return prefix + ("xstate-error" if "error" in theirs else "our-error:" + ours["error"].split(":")[0])
    return prefix + ",".join(k for k in ("value", "status", "context", "output") if theirs.get(k) != ours.get(k))


def mismatch_kind(theirs: list[dict], ours: list[dict], step: int) -> str:
    a = theirs[step] if step < len(theirs) else None
    b = ours[step] if step < len(ours) else None
    return kind_of(a, b, theirs[step - 1] if 0 < step <= len(theirs) else None)


def describe(chart: dict, theirs: list[dict], ours: list[dict], step: int) -> str:
    """A reproducible account of a mismatch at `step`."""
    events = chart["events"][:step]
    a = theirs[step] if step < len(theirs) else None
    b = ours[step] if step < len(ours) else None
    where = "the initial transition" if step == 0 else f"event #{step} {events[-1]!r}"
    seed = chart.get("seed")
    lines = [f"DIFFERENTIAL MISMATCH, seed {seed}, at {where} ({mismatch_kind(theirs, ours, step)})"]
    if isinstance(seed, int):
        lines += [
            f"  reproduce: JR2_DIFF_SEEDS={seed} .venv/bin/python -m pytest tests/differential -q",
            f"  shrink:    .venv/bin/python -m tests.differential.shrink {seed}",
            f"  trace:     .venv/bin/python -m tests.differential.trace {seed}",
        ]
    lines += [
        f"  chart:  {json.dumps(chart['config'], separators=(',', ':'))}",
        f"  events so far: {json.dumps(events)}",
    ]
    if 0 < step <= len(theirs):
        lines.append(f"  before (both agree): {json.dumps(theirs[step - 1])}")
    lines.append(f"  xstate: {json.dumps(a) if a is not None else '(no step: xstate stopped earlier)'}")
    lines.append(f"  ours:   {json.dumps(b) if b is not None else '(no step: ours stopped earlier)'}")
    return "\n".join(lines)
