"""The cached path (configuration.py) takes exactly the microsteps the general one does.

Random charts of the differential test (nested, parallel, guards, eventless, final, raised events; those with
history run uncached in both, and are skipped) go through two machines built from the same config: one that
caches its configurations, one that takes the general path every time. Every microstep must agree on the active
nodes in their order, the value, status, context, output, and the actions it produced.
"""

from __future__ import annotations

import copy
import json

import pytest

from engine.core.statechart import create_machine
from tests.differential import harness
from tests.differential.charts import generate

SEEDS = range(400)


def _machines(config: dict):
    _, actions, guards = harness._engine()
    cached = create_machine(copy.deepcopy(config), actions=actions, guards=guards)
    general = create_machine(copy.deepcopy(config), actions=actions, guards=guards)
    general.caches_configurations = False
    return cached, general


def _row(step) -> str:
    snapshot, actions = step
    return json.dumps(
        {
            "nodes": [n.id for n in snapshot.nodes],
            "value": snapshot.value,
            "status": snapshot.status,
            "context": snapshot.context,
            "output": snapshot.output,
            "actions": [a.type for a in actions],
        },
        default=repr,
    )


def _run(machine, events: list[str]) -> list[str]:
    rows: list[str] = []
    try:
        steps = machine.microsteps_with_actions(None)
        rows += [_row(s) for s in steps]
        snapshot = steps[-1][0]
        for event in events:
            steps = machine.microsteps_with_actions(snapshot, {"type": event})
            rows += [_row(s) for s in steps]
            if steps:
                snapshot = steps[-1][0]
    except Exception as exc:
        rows.append(f"raised {type(exc).__name__}: {exc}")
    return rows


def _cases():
    for seed in SEEDS:
        chart = generate(seed)
        if '"history"' not in json.dumps(chart["config"]):
            yield chart


@pytest.mark.parametrize("chart", list(_cases()), ids=lambda c: f"seed{c['seed']}")
def test_cached_steps_are_the_general_ones(chart):
    cached, general = _machines(chart["config"])
    assert cached.caches_configurations and not cached.has_history
    assert _run(cached, chart["events"]) == _run(general, chart["events"])
    assert cached.configurations, "the cached machine learned no configuration"
    assert not general.configurations


def test_a_machine_with_history_is_not_cached():
    machine = create_machine(
        {
            "initial": "a",
            "states": {
                "a": {"initial": "x", "states": {"x": {"on": {"GO": "y"}}, "y": {}, "h": {"type": "history"}}},
                "b": {"on": {"BACK": "a.h"}},
            },
            "on": {"OUT": ".b"},
        }
    )
    snapshot, _ = machine.initial_transition()
    for event in ("GO", "OUT", "BACK"):
        snapshot, _ = machine.transition(snapshot, {"type": event})
    assert snapshot.value == {"a": "y"}
    assert not machine.configurations
