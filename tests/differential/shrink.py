"""Shrinks a differential mismatch to a minimal chart and event sequence.

    .venv/bin/python -m tests.differential.shrink SEED [SEED ...]
    .venv/bin/python -m tests.differential.shrink --file case.json     # {"config": ..., "events": [...]}

Greedy: try deleting one thing at a time (an event, a state, a transition, an action, a key of a config dict, an
element of a list), keep the first smaller case that xstate still accepts (no error) and that still differs from
xstate in the same way (the same `harness.kind_of`), repeat until nothing can go. Each round's candidates run
through one node process. Prints the minimal case, both results at the mismatch, and the case as JSON.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys

from tests.differential import harness
from tests.differential.charts import generate

# Deleting these first removes the most at once.
CHUNK = 40  # candidates per node process

_PRIORITY = {"states": 1, "on": 1, "always": 1, "onDone": 1, "entry": 2, "exit": 2, "actions": 2}


def _mismatch(chart: dict, theirs: list[dict]) -> tuple[int, str] | None:
    if any("error" in s for s in theirs):
        return None
    ours = harness.run_ours(chart)
    step = harness.first_mismatch(theirs, ours)
    if step is None:
        return None
    return step, harness.mismatch_kind(theirs, ours, step)


# Never deleted: the context, and what makes a named action or guard work (deleting a log's tag only makes noise).
_KEEP = {"context", "type", "params", "tag", "n"}


def _paths(node, path=()):
    """Every deletable location in a config: (priority, path)."""
    if isinstance(node, dict):
        for k, v in node.items():
            if k in _KEEP and not (k == "type" and path and path[-2:-1] == ("states",)):
                continue
            # A child state (a key under "states") goes first, with its whole subtree.
            priority = 0 if path and path[-1] == "states" else _PRIORITY.get(k, 3)
            yield priority, path + (k,)
            yield from _paths(v, path + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield 2, path + (i,)
            yield from _paths(v, path + (i,))


def _delete(config, path):
    out = copy.deepcopy(config)
    node = out
    for p in path[:-1]:
        node = node[p]
    if isinstance(node, list):
        del node[path[-1]]
    else:
        del node[path[-1]]
    return out


def _unwrap(config, path):
    """A one-element list replaced by its element (xstate accepts both spellings)."""
    out = copy.deepcopy(config)
    node = out
    for p in path[:-1]:
        node = node[p]
    value = node[path[-1]]
    if isinstance(value, list) and len(value) == 1:
        node[path[-1]] = value[0]
        return out
    return None


def _degenerate(node) -> bool:
    """A parallel state without regions: xstate accepts it, but it is no chart anyone writes (and it hides the
    real mismatch behind a different one)."""
    if not isinstance(node, dict):
        return False
    if node.get("type") == "parallel" and not node.get("states"):
        return True
    return any(_degenerate(child) for child in (node.get("states") or {}).values() if isinstance(child, dict))


def _candidates(case: dict):
    config, events = case["config"], case["events"]
    # Fewer events first.
    for i in range(len(events)):
        yield {"config": config, "events": events[:i] + events[i + 1 :]}
    # Then the config, biggest deletions first (a state's subtree, a whole `on`, ...).
    paths = sorted(_paths(config), key=lambda pp: (pp[0], len(pp[1])))
    for _, path in paths:
        smaller = _delete(config, path)
        if not _degenerate(smaller):
            yield {"config": smaller, "events": events}
    for _, path in paths:
        unwrapped = _unwrap(config, path)
        if unwrapped is not None:
            yield {"config": unwrapped, "events": events}


def shrink(case: dict, verbose: bool = True) -> tuple[dict, list[dict], list[dict], int]:
    case = {"seed": case.get("seed"), "config": case["config"], "events": list(case["events"])}
    theirs = harness.run_xstate([case])[0]
    found = _mismatch(case, theirs)
    if found is None:
        raise SystemExit(f"no mismatch for seed {case.get('seed')}: nothing to shrink")
    step, kind = found
    case["events"] = case["events"][:step]
    if verbose:
        print(f"mismatch at step {step} ({kind}); shrinking...", file=sys.stderr)
    while True:
        candidates = list(_candidates(case))
        found = None
        for i in range(0, len(candidates), CHUNK):
            chunk = candidates[i : i + CHUNK]
            for cand, cand_theirs in zip(chunk, harness.run_xstate(chunk)):
                cand = {"seed": case["seed"], **cand}
                got = _mismatch(cand, cand_theirs)
                if got is not None and got[1] == kind:
                    cand["events"] = cand["events"][: got[0]]
                    found = cand
                    break
            if found is not None:
                break
        if found is None:
            break
        case = found
        if verbose:
            print(f"  {len(json.dumps(case['config']))} chars, {len(case['events'])} events", file=sys.stderr)
    theirs = harness.run_xstate([case])[0]
    ours = harness.run_ours(case)
    return case, theirs, ours, harness.first_mismatch(theirs, ours)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("seeds", nargs="*", type=int)
    parser.add_argument("--file")
    args = parser.parse_args(argv)
    cases = [generate(s) for s in args.seeds]
    if args.file:
        with open(args.file) as f:
            cases.append(json.load(f))
    for case in cases:
        small, theirs, ours, step = shrink(case)
        print(harness.describe(small, theirs, ours, step))
        print("  case:  " + json.dumps({"config": small["config"], "events": small["events"]}))
        print()


if __name__ == "__main__":
    main()
