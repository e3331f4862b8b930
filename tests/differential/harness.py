"""Runs charts through xstate (a node process) and through `engine.core.statechart`, and compares them step by step.

A run of a chart is a list of steps: steps[0] is the initial snapshot, steps[i] the snapshot after events[i-1].
A step is `{"value", "status", "context", "output"}`, or `{"error": "..."}` when the engine raised (the run stops
there). Both engines' runs have this shape, so they compare with `==` after a JSON round trip.

The named actions and guards here must behave exactly like those in xstate_runner.mjs.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import signal
import subprocess
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
RUNNER = HERE / "xstate_runner.mjs"
NODE_MODULES = Path(os.environ.get("XSTATE_NODE_MODULES") or HERE / ".node" / "node_modules")
BATCH = 1000  # charts per node process
CHART_TIMEOUT_S = 10  # a chart that takes longer in our engine is reported as a (probable) infinite loop


def xstate_missing() -> str | None:
    """Why xstate cannot run here, or None if it can."""
    if shutil.which("node") is None:
        return "node is not on PATH"
    if not (NODE_MODULES / "xstate" / "package.json").exists():
        return f"xstate is not installed in {NODE_MODULES}"
    return None


# --- xstate ------------------------------------------------------------------------------------------------------


def run_xstate(charts: list[dict]) -> list[list[dict]]:
    """xstate's run of each chart (`{"config", "events"}`), in order: one node process per batch."""
    return [steps for i in range(0, len(charts), BATCH) for steps in _run_batch(charts[i : i + BATCH])]


def run_xstate_async(charts: list[dict]) -> Future:
    """`run_xstate` in the background (node works while Python runs our engine)."""
    pool = ThreadPoolExecutor(max_workers=1)
    future = pool.submit(run_xstate, charts)
    pool.shutdown(wait=False)
    return future


def _run_batch(charts: list[dict]) -> list[list[dict]]:
    payload = json.dumps(
        {"charts": [{"config": c["config"], "events": c["events"], "trace": c.get("trace", False)} for c in charts]}
    )
    env = dict(os.environ, XSTATE_NODE_MODULES=str(NODE_MODULES))
    proc = subprocess.run(
        ["node", "--max-old-space-size=4096", str(RUNNER)],
        input=payload,
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"xstate_runner.mjs failed (exit {proc.returncode}):\n{proc.stderr[-4000:]}")
    results = json.loads(proc.stdout)["results"]
    assert len(results) == len(charts)
    return [r["steps"] for r in results]


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

        def countIs(context, params):  # noqa: N802 (xstate's names)
            return context["count"] == params["n"]

        def countLt(context, params):  # noqa: N802
            return context["count"] < params["n"]

        def countGe(context, params):  # noqa: N802
            return context["count"] >= params["n"]

        def countOdd(context):  # noqa: N802
            return context["count"] % 2 == 1

        def raised(params):
            return {"type": params["event"]}

        actions = {"log": assign(log), "bump": assign(bump), "raiseEv": raise_(raised)}
        guards = {"countIs": countIs, "countLt": countLt, "countGe": countGe, "countOdd": countOdd}
        _ENGINE = (create_machine, actions, guards)
    return _ENGINE


class _Timeout(Exception):
    pass


def _on_alarm(signum, frame):
    raise _Timeout(f"timed out after {CHART_TIMEOUT_S}s (an infinite loop?)")


def _view(snapshot) -> dict:
    raw = {
        "value": snapshot.value,
        "status": snapshot.status,
        "context": snapshot.context,
        "output": snapshot.output,
    }
    return json.loads(json.dumps(raw, default=repr))


def _error(exc: BaseException) -> dict:
    return {"error": f"{type(exc).__name__}: {exc}"}


def run_ours(chart: dict, events: list[str] | None = None) -> list[dict]:
    """Our engine's run of a chart, in the same shape as xstate's."""
    create_machine, actions, guards = _engine()
    events = chart["events"] if events is None else events
    use_alarm = hasattr(signal, "SIGALRM") and threading.current_thread() is threading.main_thread()
    if use_alarm:
        old = signal.signal(signal.SIGALRM, _on_alarm)
        signal.alarm(CHART_TIMEOUT_S)
    steps: list[dict] = []
    try:
        try:
            machine = create_machine(copy.deepcopy(chart["config"]), actions=actions, guards=guards)
            snapshot, _ = machine.initial_transition()
            steps.append(_view(snapshot))
        except (Exception, RecursionError) as exc:
            steps.append(_error(exc))
            return steps
        for event in events:
            try:
                snapshot, _ = machine.transition(snapshot, {"type": event})
                steps.append(_view(snapshot))
            except (Exception, RecursionError) as exc:
                steps.append(_error(exc))
                break
        return steps
    finally:
        if use_alarm:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, old)


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
