"""Actor mode of the differential test: runs actor charts (actor_charts.py) through xstate's `createActor` with its
`SimulatedClock` (xstate_actor_runner.mjs) and through our `create_actor` with our `SimulatedClock`, and compares
what each run observed after every step.

A step is `{"value", "status", "context", "output", "children", "log"}`: `children` lists `[id, status, value]`
of the root's children in order; `log` is what happened since the step before, in order (custom `note`s as
`<actor id>:<tag>`, `log:<text>` from the logger, `emit:<type>` from the root's emitted events). `{"error"}` when
the engine raised outright (an actor that fails has status "error" instead: its message is not compared).

The named actions and guards here must behave exactly like those in xstate_actor_runner.mjs.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from tests.differential import harness, xstate

RUNNER = xstate.HERE / "xstate_actor_runner.mjs"
#: What the runner reads of a chart (each None when the chart has none).
SENT = {"config": None, "children": None, "spawns": None, "events": None}
BATCH = 500


# --- xstate ------------------------------------------------------------------------------------------------------


def run_xstate(charts: list[dict]) -> list[list[dict]]:
    return xstate.run_runner(RUNNER, charts, SENT, BATCH)


# --- our engine --------------------------------------------------------------------------------------------------


def _implementations(out: list[str], chart: dict) -> tuple[dict, dict]:
    from engine.core.statechart import (
        cancel,
        emit,
        enqueue_actions,
        log,
        raise_,
        send_parent,
        send_to,
        spawn_child,
        state_in,
        stop_child,
    )

    _, actions, guards = harness._engine()

    def note(event, params, self):
        entry = f"{self.id}:{params['tag']}"
        if params.get("ev"):
            entry += f"@{event['type']}"
        if params.get("out"):
            entry += "=" + json.dumps(event.get("output"), separators=(",", ":"))
        out.append(entry)

    def message(params):
        return {"type": params["event"]}

    def delay(params):
        return params["delay"]

    def choose(enqueue, check, params):
        for item in params["items"]:
            guard = item.get("guard")
            if guard is not None and "in" in guard:
                guard = state_in(guard["in"])
            if guard is None or check(guard):
                enqueue(item["action"])

    actions = {
        **actions,
        "note": note,
        "say": log(lambda params: params["text"]),
        "shout": emit(message),
        "later": raise_(message, delay=delay),
        "laterX": raise_(message, delay=delay, id="X"),
        "laterY": raise_(message, delay=delay, id="Y"),
        "unlater": cancel(lambda params: params["id"]),
        "tell": send_to(lambda params: params["to"], message),
        "tellLater": send_to(lambda params: params["to"], message, delay=delay),
        "tellParent": send_parent(message),
        "unspawn": stop_child(lambda params: params["id"]),
        "choose": enqueue_actions(choose),
    }
    for name, spec in (chart.get("spawns") or {}).items():
        actions[name] = spawn_child(spec["src"], id=spec["id"])
    return actions, guards


def _view(actor: Any, out: list[str]) -> dict:
    snapshot = actor.get_snapshot()
    children = []
    for child_id, ref in getattr(snapshot, "children", {}).items():
        child = ref.get_snapshot()
        children.append([child_id, getattr(child, "status", None), getattr(child, "value", None)])
    # a machine that fails while it builds its initial snapshot has only a status and an error
    raw = {
        "value": getattr(snapshot, "value", None),
        "status": snapshot.status,
        "context": getattr(snapshot, "context", None),
        "output": snapshot.output,
        "children": children,
        "log": list(out),
    }
    out.clear()
    return json.loads(json.dumps(raw, default=repr))


def run_ours(chart: dict) -> list[dict]:
    from engine.core.statechart import SimulatedClock, create_actor, create_machine

    out: list[str] = []
    steps: list[dict] = []
    with xstate.time_limit():
        try:
            actions, guards = _implementations(out, chart)
            children = {
                src: create_machine(copy.deepcopy(cfg), actions=actions, guards=guards)
                for src, cfg in (chart.get("children") or {}).items()
            }
            machine = create_machine(copy.deepcopy(chart["config"]), actions=actions, guards=guards, actors=children)
            clock = SimulatedClock()
            actor = create_actor(
                machine,
                id="root",
                clock=clock,
                logger=lambda *args: out.append("log:" + " ".join(str(a) for a in args)),
            )
            actor.subscribe(error=lambda err: None)
            actor.on("*", lambda event: out.append(f"emit:{event['type']}"))
            actor.start()
            steps.append(_view(actor, out))
        except (Exception, RecursionError, xstate.ChartTimeout) as exc:
            steps.append(xstate.error_step(exc))
            return steps
        for step in chart["events"]:
            try:
                if step.startswith("+"):
                    clock.increment(int(step[1:]))
                else:
                    actor.send({"type": step})
                steps.append(_view(actor, out))
            except (Exception, RecursionError, xstate.ChartTimeout) as exc:
                steps.append(xstate.error_step(exc))
                break
        return steps


# --- comparison --------------------------------------------------------------------------------------------------

FIELDS = ("value", "status", "context", "output", "children", "log")


def mismatch_kind(theirs: list[dict], ours: list[dict], step: int) -> str:
    a = theirs[step] if step < len(theirs) else None
    b = ours[step] if step < len(ours) else None
    if a is None or b is None:
        return "length"
    if "error" in a or "error" in b:
        return "xstate-error" if "error" in a else "our-error:" + b["error"].split(":")[0]
    return ",".join(k for k in FIELDS if a.get(k) != b.get(k))


def describe(chart: dict, theirs: list[dict], ours: list[dict], step: int) -> str:
    events = chart["events"][:step]
    a = theirs[step] if step < len(theirs) else None
    b = ours[step] if step < len(ours) else None
    where = "start()" if step == 0 else f"step #{step} {events[-1]!r}"
    seed = chart.get("seed")
    lines = [f"ACTOR DIFFERENTIAL MISMATCH, seed {seed}, at {where} ({mismatch_kind(theirs, ours, step)})"]
    if isinstance(seed, int):
        lines.append(f"  reproduce: JR2_DIFF_ACTOR_SEEDS={seed} .venv/bin/python -m pytest tests/differential -q")
        lines.append(f"  chart:     .venv/bin/python -m tests.differential.actor_charts {seed}")
    lines += [
        f"  chart:    {json.dumps(chart['config'], separators=(',', ':'))}",
        f"  children: {json.dumps(chart.get('children'), separators=(',', ':'))}",
        f"  spawns:   {json.dumps(chart.get('spawns'), separators=(',', ':'))}",
        f"  steps so far: {json.dumps(events)}",
    ]
    if 0 < step <= len(theirs):
        lines.append(f"  before (both agree): {json.dumps(theirs[step - 1])}")
    lines.append(f"  xstate: {json.dumps(a) if a is not None else '(no step)'}")
    lines.append(f"  ours:   {json.dumps(b) if b is not None else '(no step)'}")
    return "\n".join(lines)
