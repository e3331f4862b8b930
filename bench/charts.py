"""The three reference charts of the statechart benchmark, built equivalently for every library.

Each chart is one xstate v5 config (plain JSON, guards and actions referenced by name). That same dict is given
to our engine (`create_machine(config, guards=..., actions=...)`) and, through JSON, to xstate in Node
(`bench/xstate_bench.mjs`), so the two can never drift apart. python-statemachine and transitions get a
hand-written equivalent (below), and every chart has a tiny reference model that says, for a given number of
events, which atomic states must be active and what the context must be. The bench checks each library's final
state against it, so a chart that is broken in one library cannot report a fast number.

Atomic state names are unique across a chart so that a configuration can be compared as the set of its active
leaves, whatever shape a library uses for it (xstate's nested value, python-statemachine's configuration,
transitions' "a_b_c" strings and lists).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# ----------------------------------------------------------------------------------------------------------------
# Chart descriptions
# ----------------------------------------------------------------------------------------------------------------


@dataclass
class Chart:
    name: str
    title: str
    config: dict  # xstate v5 config, JSON-able; guards/actions by name
    cycle: list[str]  # the event types sent, repeated
    reference: Callable[[list[str]], tuple[frozenset, dict | None]]  # events -> (active leaves, context)
    states: int = 0  # number of state nodes below the root

    def events(self, n: int) -> list[str]:
        c = self.cycle
        return [c[i % len(c)] for i in range(n)]

    def expected(self, n: int) -> tuple[frozenset, dict | None]:
        return self.reference(self.events(n))


def count_states(config: dict) -> int:
    return sum(1 + count_states(child) for child in config.get("states", {}).values())


# 1. flat: a ring of 10 atomic states, NEXT moves to the next one. ------------------------------------------------

FLAT_N = 10


def _flat_config() -> dict:
    return {
        "id": "flat",
        "initial": "s0",
        "states": {f"s{i}": {"on": {"NEXT": f"s{(i + 1) % FLAT_N}"}} for i in range(FLAT_N)},
    }


def _flat_reference(events: list[str]):
    i = 0
    for e in events:
        if e == "NEXT":
            i = (i + 1) % FLAT_N
    return frozenset({f"s{i}"}), None


# 2. deep: compound + parallel, guards on context, assign actions. -------------------------------------------------
#
#   deep (context: count, laps)
#   ├── idle                         GO -> active
#   └── active  (parallel)           STOP -> idle / laps += 1          (leaves both regions, from any depth)
#       ├── left (compound)
#       │   ├── l1                   TICK -> l2 / count += 1
#       │   ├── l2                   TICK -> l1 if count is even, else -> l3
#       │   └── l3                   TICK -> l1 / count += 1
#       └── right (compound)
#           ├── r1 (compound)
#           │   ├── a                TOCK -> b
#           │   └── b                TOCK -> #r2                      (out of r1, into its sibling)
#           ├── r2                   TOCK -> r1 if laps is even, else -> r3
#           └── r3                   TOCK -> r1                       (re-enters r1 at a)

DEEP_CYCLE = ["GO"] + ["TICK", "TOCK"] * 5 + ["TICK", "STOP"]  # 13: every event takes a transition


def _deep_config() -> dict:
    return {
        "id": "deep",
        "initial": "idle",
        "context": {"count": 0, "laps": 0},
        "states": {
            "idle": {"on": {"GO": "active"}},
            "active": {
                "type": "parallel",
                "on": {"STOP": {"target": "idle", "actions": "lap"}},
                "states": {
                    "left": {
                        "initial": "l1",
                        "states": {
                            "l1": {"on": {"TICK": {"target": "l2", "actions": "inc"}}},
                            "l2": {"on": {"TICK": [{"target": "l1", "guard": "countEven"}, {"target": "l3"}]}},
                            "l3": {"on": {"TICK": {"target": "l1", "actions": "inc"}}},
                        },
                    },
                    "right": {
                        "initial": "r1",
                        "states": {
                            "r1": {
                                "initial": "a",
                                "states": {
                                    "a": {"on": {"TOCK": "b"}},
                                    "b": {"on": {"TOCK": "#r2"}},
                                },
                            },
                            "r2": {
                                "id": "r2",
                                "on": {"TOCK": [{"target": "r1", "guard": "lapsEven"}, {"target": "r3"}]},
                            },
                            "r3": {"on": {"TOCK": "r1"}},
                        },
                    },
                },
            },
        },
    }


def _deep_reference(events: list[str]):
    top, left, right, count, laps = "idle", "l1", "a", 0, 0
    for e in events:
        if top == "idle":
            if e == "GO":
                top, left, right = "active", "l1", "a"
            continue
        if e == "STOP":
            top, laps = "idle", laps + 1
        elif e == "TICK":
            if left == "l1":
                left, count = "l2", count + 1
            elif left == "l2":
                left = "l1" if count % 2 == 0 else "l3"
            else:
                left, count = "l1", count + 1
        elif e == "TOCK":
            if right == "a":
                right = "b"
            elif right == "b":
                right = "r2"
            elif right == "r2":
                right = "a" if laps % 2 == 0 else "r3"
            else:
                right = "a"
    leaves = frozenset({"idle"}) if top == "idle" else frozenset({left, right})
    return leaves, {"count": count, "laps": laps}


# 3. big: 50 compound states x 10 atomic children = 550 state nodes, 500 of them atomic. ---------------------------
#
#   gNN (compound, initial gNNc0)    NEXT -> g(NN+1)   (taken from gNNc9, which has no NEXT of its own)
#   └── gNNc0 .. gNNc9               NEXT -> next child (c0..c8)

BIG_G, BIG_C = 50, 10


def big_group(g: int) -> str:
    return f"g{g:02d}"


def big_leaf(g: int, c: int) -> str:
    return f"g{g:02d}c{c}"


def _big_config() -> dict:
    states = {}
    for g in range(BIG_G):
        children = {}
        for c in range(BIG_C):
            children[big_leaf(g, c)] = {"on": {"NEXT": big_leaf(g, c + 1)}} if c < BIG_C - 1 else {}
        states[big_group(g)] = {
            "initial": big_leaf(g, 0),
            "on": {"NEXT": big_group((g + 1) % BIG_G)},
            "states": children,
        }
    return {"id": "big", "initial": big_group(0), "states": states}


def _big_reference(events: list[str]):
    i = sum(1 for e in events if e == "NEXT") % (BIG_G * BIG_C)
    return frozenset({big_leaf(i // BIG_C, i % BIG_C)}), None


def charts() -> dict[str, Chart]:
    out = {
        "flat": Chart("flat", f"ring of {FLAT_N} atomic states", _flat_config(), ["NEXT"], _flat_reference),
        "deep": Chart(
            "deep",
            "parallel + 3-level compound, guards on context, assign",
            _deep_config(),
            DEEP_CYCLE,
            _deep_reference,
        ),
        "big": Chart(
            "big",
            f"{BIG_G} compound x {BIG_C} atomic states",
            _big_config(),
            ["NEXT"],
            _big_reference,
        ),
    }
    for chart in out.values():
        chart.states = count_states(chart.config)
    return out


# ----------------------------------------------------------------------------------------------------------------
# Active leaves, from each library's representation of a configuration
# ----------------------------------------------------------------------------------------------------------------


def leaves_of_value(value: Any) -> frozenset:
    """xstate-shaped state value ("a", {"p": {"x": "x1", "y": {"r1": "a"}}}) -> its atomic state keys."""
    if isinstance(value, str):
        return frozenset({value})
    out: set = set()
    for key, sub in value.items():
        out |= leaves_of_value(sub) if sub not in (None, {}) else {key}
    return frozenset(out)


def _leaves_of_transitions_state(state: Any, sep: str = "_") -> set:
    if isinstance(state, str):
        return {state.split(sep)[-1]}
    out: set = set()
    for s in state:
        out |= _leaves_of_transitions_state(s, sep)
    return out


# ----------------------------------------------------------------------------------------------------------------
# Runners: make() -> (send, final), send(event_type) and final() -> (leaves, context or None)
# ----------------------------------------------------------------------------------------------------------------


def ours_implementations(chart: Chart) -> dict:
    """Named guards and actions for our engine (the same names xstate_bench.mjs implements)."""
    from engine.core.statechart import assign

    if chart.name != "deep":
        return {}
    return {
        "guards": {
            "countEven": lambda context: context["count"] % 2 == 0,
            "lapsEven": lambda context: context["laps"] % 2 == 0,
        },
        "actions": {
            "inc": assign({"count": lambda context: context["count"] + 1}),
            "lap": assign({"laps": lambda context: context["laps"] + 1}),
        },
    }


def ours_machine(chart: Chart):
    from engine.core.statechart import create_machine

    return create_machine(chart.config, **ours_implementations(chart))


def ours_runner(chart: Chart):
    """Our engine: create_machine(config).start(), then actor.send({"type": ...})."""
    machine = ours_machine(chart)
    with_context = chart.name == "deep"

    def make():
        actor = machine.start()

        def final():
            snap = actor.snapshot
            if snap.status != "active":
                raise AssertionError(f"status {snap.status!r}, error {snap.error!r}")
            ctx = {k: snap.context[k] for k in ("count", "laps")} if with_context else None
            return leaves_of_value(snap.value), ctx

        return actor.send, final

    # xstate-style event objects, built once (the same objects are sent again and again, as in Node)
    return make, lambda t: {"type": t}


# python-statemachine 3.x ----------------------------------------------------------------------------------------


class _Counters:
    """The model a python-statemachine / transitions chart updates in place of an xstate context: the actions
    ("inc", "lap") and guards ("count_even", "laps_even") are looked up on it by name."""

    def __init__(self):
        self.count = 0
        self.laps = 0

    def inc(self):
        self.count += 1

    def lap(self):
        self.laps += 1

    def count_even(self):
        return self.count % 2 == 0

    def laps_even(self):
        return self.laps % 2 == 0


def _psm_flat():
    from statemachine import State, StateChart

    attrs: dict = {}
    ring = [State(initial=(i == 0)) for i in range(FLAT_N)]
    for i, s in enumerate(ring):
        attrs[f"s{i}"] = s
    tl = ring[0].to(ring[1])
    for i in range(1, FLAT_N):
        tl |= ring[i].to(ring[(i + 1) % FLAT_N])
    attrs["NEXT"] = tl
    return type(StateChart)("FlatChart", (StateChart,), attrs)


def _psm_deep():
    from statemachine import State, StateChart

    class DeepChart(StateChart):
        idle = State(initial=True)

        class active(State.Parallel):
            class left(State.Compound):
                l1 = State(initial=True)
                l2 = State()
                l3 = State()
                TICK = l1.to(l2, on="inc") | l2.to(l1, cond="count_even") | l2.to(l3) | l3.to(l1, on="inc")

            class right(State.Compound):
                class r1(State.Compound):
                    a = State(initial=True)
                    b = State()
                    TOCK = a.to(b)

                r2 = State()
                r3 = State()
                TOCK = r1.b.to(r2) | r2.to(r1, cond="laps_even") | r2.to(r3) | r3.to(r1)

        GO = idle.to(active)
        STOP = active.to(idle, on="lap")

    # "inc", "lap", "count_even", "laps_even" resolve on the model (_Counters), python-statemachine's stand-in
    # for a context. (Defining them on the class as well would run both: the machine and its model are both
    # listeners.)
    return DeepChart


def _psm_big():
    from statemachine import State, StateChart

    factory = type(State.Compound)  # NestedStateFactory: what `class gNN(State.Compound)` does
    attrs: dict = {}
    groups = []
    for g in range(BIG_G):
        ns = {big_leaf(g, c): State(initial=(c == 0)) for c in range(BIG_C)}
        groups.append(factory(big_group(g), (State.Compound,), ns, initial=(g == 0)))
        attrs[big_group(g)] = groups[-1]
    tl = None
    for g, grp in enumerate(groups):
        for c in range(BIG_C - 1):
            t = getattr(grp, big_leaf(g, c)).to(getattr(grp, big_leaf(g, c + 1)))
            tl = t if tl is None else tl | t
        tl |= grp.to(groups[(g + 1) % BIG_G])
    attrs["NEXT"] = tl
    return type(StateChart)("BigChart", (StateChart,), attrs)


def psm_runner(chart: Chart):
    """python-statemachine: a StateChart subclass (SCXML semantics), sm.send("TYPE")."""
    cls = {"flat": _psm_flat, "deep": _psm_deep, "big": _psm_big}[chart.name]()
    with_context = chart.name == "deep"

    def make():
        model = _Counters()
        sm = cls(model=model)

        def final():
            leaves = frozenset(s.id for s in sm.configuration if s.is_atomic)
            ctx = {"count": model.count, "laps": model.laps} if with_context else None
            return leaves, ctx

        return sm.send, final

    return make, lambda t: t


# transitions (HierarchicalMachine) ------------------------------------------------------------------------------


def _tr_spec(chart: Chart):
    if chart.name == "flat":
        states = [f"s{i}" for i in range(FLAT_N)]
        trans = [["NEXT", f"s{i}", f"s{(i + 1) % FLAT_N}"] for i in range(FLAT_N)]
        return states, trans, "s0"
    if chart.name == "deep":
        states = [
            "idle",
            {
                "name": "active",
                "parallel": [
                    {"name": "left", "initial": "l1", "children": ["l1", "l2", "l3"]},
                    {
                        "name": "right",
                        "initial": "r1",
                        "children": [{"name": "r1", "initial": "a", "children": ["a", "b"]}, "r2", "r3"],
                    },
                ],
            },
        ]
        L, R = "active_left_", "active_right_"
        trans = [
            ["GO", "idle", "active"],
            {"trigger": "STOP", "source": "active", "dest": "idle", "after": "lap"},
            {"trigger": "TICK", "source": L + "l1", "dest": L + "l2", "after": "inc"},
            {"trigger": "TICK", "source": L + "l2", "dest": L + "l1", "conditions": "count_even"},
            {"trigger": "TICK", "source": L + "l2", "dest": L + "l3"},
            {"trigger": "TICK", "source": L + "l3", "dest": L + "l1", "after": "inc"},
            {"trigger": "TOCK", "source": R + "r1_a", "dest": R + "r1_b"},
            {"trigger": "TOCK", "source": R + "r1_b", "dest": R + "r2"},
            {"trigger": "TOCK", "source": R + "r2", "dest": R + "r1", "conditions": "laps_even"},
            {"trigger": "TOCK", "source": R + "r2", "dest": R + "r3"},
            {"trigger": "TOCK", "source": R + "r3", "dest": R + "r1"},
        ]
        return states, trans, "idle"
    if chart.name == "big":
        states = [
            {"name": big_group(g), "initial": big_leaf(g, 0), "children": [big_leaf(g, c) for c in range(BIG_C)]}
            for g in range(BIG_G)
        ]
        trans = []
        for g in range(BIG_G):
            for c in range(BIG_C - 1):
                trans.append(["NEXT", f"{big_group(g)}_{big_leaf(g, c)}", f"{big_group(g)}_{big_leaf(g, c + 1)}"])
            trans.append(["NEXT", big_group(g), big_group((g + 1) % BIG_G)])
        return states, trans, big_group(0)
    raise KeyError(chart.name)


def transitions_runner(chart: Chart):
    """transitions: HierarchicalMachine (auto_transitions off), model.trigger("TYPE")."""
    from transitions.extensions import HierarchicalMachine

    states, trans, initial = _tr_spec(chart)
    with_context = chart.name == "deep"

    def make():
        model = _Counters()
        HierarchicalMachine(
            model=model,
            states=copy.deepcopy(states),
            transitions=copy.deepcopy(trans),
            initial=initial,
            auto_transitions=False,
        )

        def final():
            leaves = frozenset(_leaves_of_transitions_state(model.state))
            ctx = {"count": model.count, "laps": model.laps} if with_context else None
            return leaves, ctx

        return model.trigger, final

    return make, lambda t: t


RUNNERS = {
    "ours": ours_runner,
    "python-statemachine": psm_runner,
    "transitions": transitions_runner,
}
