"""Prints a case's run in both engines microstep by microstep (values, active nodes, context), for debugging.

    .venv/bin/python -m tests.differential.trace SEED
    .venv/bin/python -m tests.differential.trace --file case.json      # {"config": ..., "events": [...]}
    .venv/bin/python -m tests.differential.trace --json '{"config": ..., "events": [...]}'

Our side uses `machine.microsteps(snapshot, event)` (the initial transition is shown as one step).
"""

from __future__ import annotations

import argparse
import copy
import json

from tests.differential import harness
from tests.differential.charts import generate


def _ours_micro(case: dict) -> list[list[dict] | str]:
    create_machine, actions, guards = harness._engine()
    machine = create_machine(copy.deepcopy(case["config"]), actions=actions, guards=guards)

    def row(s):
        nodes = getattr(s, "nodes", None) or []
        return {"value": s.value, "nodes": [getattr(n, "id", str(n)) for n in nodes], "context": s.context}

    out: list = []
    try:
        snapshot, _ = machine.initial_transition()
        out.append([row(snapshot)])
        for event in case["events"]:
            try:
                out.append([row(s) for s in machine.microsteps(snapshot, {"type": event})])
            except Exception as exc:
                out.append(f"microsteps raised {type(exc).__name__}: {exc}")
            snapshot, _ = machine.transition(snapshot, {"type": event})
    except Exception as exc:
        out.append(f"raised {type(exc).__name__}: {exc}")
    return out


def trace(case: dict) -> None:
    theirs = harness.run_xstate([{**case, "trace": True}])[0]
    ours = harness.run_ours(case)
    ours_micro = _ours_micro(case)
    for i, step in enumerate(theirs):
        label = "init" if i == 0 else f"event #{i} {case['events'][i - 1]!r}"
        same = i < len(ours) and {k: v for k, v in step.items() if k != "micro"} == ours[i]
        print(f"== {label} {'(same)' if same else '(DIFFERENT)'}")
        for m in step.get("micro", []):
            print(f"   xstate micro: {json.dumps(m['value'])}  nodes={m['nodes']}  ctx={json.dumps(m['context'])}")
        om = ours_micro[i] if i < len(ours_micro) else "(none)"
        for m in om if isinstance(om, list) else [om]:
            print(
                f"   ours   micro: {json.dumps(m['value'])}  nodes={m['nodes']}  ctx={json.dumps(m['context'])}"
                if isinstance(m, dict)
                else f"   ours: {m}"
            )
        print(f"   xstate: {json.dumps({k: v for k, v in step.items() if k != 'micro'})}")
        print(f"   ours:   {json.dumps(ours[i]) if i < len(ours) else '(none)'}")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("seed", nargs="?", type=int)
    parser.add_argument("--file")
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    if args.file:
        with open(args.file) as f:
            case = json.load(f)
    elif args.json:
        case = json.loads(args.json)
    else:
        case = generate(args.seed)
    trace(case)


if __name__ == "__main__":
    main()
