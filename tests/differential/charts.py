"""A seeded generator of random xstate v5 charts, for the differential test.

`generate(seed)` returns `{"seed", "config", "events"}`: a JSON-serializable xstate machine config and a sequence
of event types. The same seed always gives the same chart, in any Python version (only `random.Random(seed)` is
used, never hash order).

What a chart may hold: nested compound states, parallel states, shallow and deep history states (with or without
a default target), final states with `onDone` on their compound parent (and on parallel states), guarded `always`
transitions, targetless transitions, `reenter: true`, multiple targets into the regions of a parallel state, and
targets written in every form xstate accepts (a sibling key, `.child`, `sibling.child`, `#id`, `#id.path`, and a
default id such as `#(machine).a.b`), and "targetless" spelled as a missing key, `null` (the runner drops it: Python's
None is JS's undefined), `""` and `[]`. Event descriptors include `x.*`, `x.a.*` and `*`. A root final state makes
the machine done; the events keep coming after that (xstate's pure `transition` still takes transitions then).

Every action is one of three named actions, all run by xstate's pure `transition` itself (assigns and a raise):

- `{"type": "log", "params": {"tag": "s3+"}}` appends the tag to `context.log` (with `"ev": true`, it appends
  `"s3+@EVENT.TYPE"`, so the event each action sees is compared too);
- `{"type": "bump"}` adds 1 to `context.count`;
- `{"type": "raiseEv", "params": {"event": "A"}}` raises the event to the internal queue (xstate's `raise`, our
  `raise_`). Only bounded transitions (below) raise, so raised events cannot feed an endless cycle.

Guards are named and read only `context.count`: `countIs {n}`, `countLt {n}`, `countGe {n}`, `countOdd`. So
guards change over a run.

Termination (both engines must terminate, so no chart may loop forever on its own): every `always` transition is
guarded by `countIs`/`countLt` and bumps the counter, so each can fire only a bounded number of times in a run; so
is every transition on `"*"` (it also matches the internal `xstate.done.state.*` events); an
`onDone` transition that could re-enter a state that is immediately done again is guarded the same way. Only
bounded transitions (these, and any guarded by `countIs`/`countLt` that bumps) raise events. No delays or invokes.

Tags: `<state>+` entry, `<state>-` exit, `<state>/<event>#<i>` a transition, `<state>/always#<i>`,
`<state>/done#<i>`. Run this file to print a chart: `python -m tests.differential.charts SEED`.
"""

from __future__ import annotations

import json
import random
import sys
from dataclasses import dataclass, field

KNOWN_EVENTS = ["A", "B", "C", "D", "E", "x.a", "x.b", "x.a.b"]
PARTIAL_DESCRIPTORS = ["x.*", "x.a.*"]
UNKNOWN_EVENTS = ["Z", "x", "y.a", "AA"]
N_EVENTS = 30
ROOT_ID = "m"
DEFAULT_ROOT_ID = "(machine)"


@dataclass(eq=False)
class Node:
    key: str
    kind: str  # "atomic" | "compound" | "parallel" | "final" | "history"
    parent: Node | None
    children: list[Node] = field(default_factory=list)
    explicit_id: str | None = None
    history: str | None = None  # "shallow" | "deep"
    history_target: str | None = None
    initial: Node | None = None
    config: dict = field(default_factory=dict)

    @property
    def path(self) -> list[str]:
        out: list[str] = []
        node: Node | None = self
        while node is not None and node.parent is not None:
            out.append(node.key)
            node = node.parent
        return out[::-1]

    def ancestors(self) -> list[Node]:
        """Proper ancestors, nearest first."""
        out = []
        node = self.parent
        while node is not None:
            out.append(node)
            node = node.parent
        return out

    def descendants(self) -> list[Node]:
        out = []
        for child in self.children:
            out.append(child)
            out.extend(child.descendants())
        return out

    def is_descendant_of(self, other: Node) -> bool:
        return other in self.ancestors()


class _Gen:
    def __init__(self, seed: int):
        self.seed = seed
        self.r = random.Random(seed)
        self.n_keys = 0
        self.n_ids = 0
        self.root_id = ROOT_ID if self.r.random() < 0.7 else None
        self.max_depth = self.r.choice([2, 3, 3, 4])
        self.budget = self.r.randint(4, 16)
        self.events_used: set[str] = set()
        self.descriptors_used: set[str] = set()

    # --- structure ---------------------------------------------------------------------------------------------

    def key(self) -> str:
        self.n_keys += 1
        return f"s{self.n_keys}"

    def build(self) -> Node:
        kind = "parallel" if self.r.random() < 0.15 else "compound"
        root = Node(key="", kind=kind, parent=None)
        self.fill(root, 0)
        return root

    def fill(self, node: Node, depth: int) -> None:
        r = self.r
        if node.kind == "compound":
            n = r.randint(1, 4) if depth < self.max_depth else r.randint(1, 2)
            for _ in range(n):
                node.children.append(self.make_child(node, depth, region=False))
            if r.random() < 0.45 and depth > 0 or r.random() < 0.1:
                node.children.append(Node(key=self.key(), kind="final", parent=node))
            normal = [c for c in node.children if c.kind != "history"]
            if not normal:
                node.children.append(Node(key=self.key(), kind="atomic", parent=node))
                normal = [c for c in node.children if c.kind != "history"]
            # Rarely start in a final state (immediately done).
            candidates = [c for c in normal if c.kind != "final"] or normal
            if r.random() < 0.05:
                candidates = normal
            node.initial = r.choice(candidates)
            self.add_histories(node)
        elif node.kind == "parallel":
            n = r.randint(2, 3)
            for _ in range(n):
                node.children.append(self.make_child(node, depth, region=True))
            if r.random() < 0.15:
                self.add_histories(node, force_one=True)

    def make_child(self, parent: Node, depth: int, region: bool) -> Node:
        r = self.r
        key = self.key()
        self.budget -= 1
        can_nest = depth + 1 < self.max_depth and self.budget > 0
        if region:
            kind = r.choices(["compound", "atomic", "parallel"], [7, 2, 1])[0] if can_nest else "atomic"
        else:
            kind = r.choices(["atomic", "compound", "parallel"], [6, 3, 1])[0] if can_nest else "atomic"
        node = Node(key=key, kind=kind, parent=parent)
        if r.random() < 0.2:
            self.n_ids += 1
            node.explicit_id = f"id{self.n_ids}"
        if kind in ("compound", "parallel"):
            self.fill(node, depth + 1)
        return node

    def add_histories(self, node: Node, force_one: bool = False) -> None:
        r = self.r
        count = 1 if force_one else r.choices([0, 1, 2], [6, 3, 1])[0]
        for _ in range(count):
            h = Node(key=self.key(), kind="history", parent=node)
            h.history = r.choice(["shallow", "deep"])
            if r.random() < 0.5:
                targetable = [d for d in node.descendants() if d.kind != "history"]
                if node.kind == "compound":
                    # A child (or a deeper path) of the history's parent.
                    targetable = [d for d in targetable if d.kind != "final" or r.random() < 0.5]
                if targetable:
                    t = r.choice(targetable)
                    h.history_target = ".".join(t.path[len(node.path) :])
            node.children.append(h)

    # --- behaviour -----------------------------------------------------------------------------------------------

    def all_nodes(self, root: Node) -> list[Node]:
        return [root] + root.descendants()

    def log(self, tag: str) -> dict:
        params: dict = {"tag": tag}
        if self.r.random() < 0.35:
            params["ev"] = True
        return {"type": "log", "params": params}

    def actions(self, tag: str, n_max: int = 2, bump: bool | None = None) -> list[dict]:
        r = self.r
        out = [self.log(tag if i == 0 else f"{tag}.{i}") for i in range(r.randint(0, n_max))]
        if bump is None:
            bump = r.random() < 0.25
        if bump:
            out.insert(r.randint(0, len(out)), {"type": "bump"})
        return out

    def maybe_raise(self, actions: list[dict]) -> None:
        """Sometimes raise an event (to the internal queue) from a bounded transition: only those, so a raised event
        can never feed an unbounded cycle."""
        r = self.r
        if r.random() < 0.3:
            event = r.choice(KNOWN_EVENTS) if r.random() < 0.9 else r.choice(UNKNOWN_EVENTS)
            actions.insert(r.randint(0, len(actions)), {"type": "raiseEv", "params": {"event": event}})

    def guard(self, count_only: bool = False) -> dict:
        r = self.r
        kinds = ["countIs", "countLt"] if count_only else ["countIs", "countLt", "countGe", "countOdd"]
        kind = r.choice(kinds)
        if kind == "countOdd":
            return {"type": "countOdd"}
        n = r.randint(0, 6) if kind != "countLt" else r.randint(1, 12)
        return {"type": kind, "params": {"n": n}}

    def target_string(self, source: Node, target: Node) -> str:
        """One of the ways xstate can name `target` from a transition on `source`."""
        r = self.r
        options: list[str] = []
        if source.parent is not None:
            if target.parent is source.parent:
                options += [target.key] * 3
            elif target.is_descendant_of(source.parent):
                options.append(".".join(target.path[len(source.parent.path) :]))
        if target.is_descendant_of(source):
            options += ["." + ".".join(target.path[len(source.path) :])] * 2
        if target.explicit_id:
            options += ["#" + target.explicit_id] * 2
        for anc in target.ancestors():
            if anc.explicit_id:
                options.append("#" + anc.explicit_id + "." + ".".join(target.path[len(anc.path) :]))
                break
        if target.explicit_id is None:
            root_id = self.root_id or DEFAULT_ROOT_ID
            options.append("#" + ".".join([root_id] + target.path) if target.path else "#" + root_id)
        return r.choice(options)

    def pick_targets(self, source: Node, nodes: list[Node], parallels: list[Node]) -> list[Node] | None:
        r = self.r
        roll = r.random()
        if roll < 0.22:
            return None
        if roll < 0.32 and parallels:
            p = r.choice(parallels)
            regions = [c for c in p.children if c.kind != "history"]
            k = r.randint(2, len(regions))
            chosen = r.sample(regions, k)
            out = []
            for region in chosen:
                inside = [region] + region.descendants()
                out.append(r.choice(inside))
            return out
        candidates = [n for n in nodes if n.parent is not None]
        # Finals and histories are what most often goes wrong: make them three times as likely.
        candidates += [n for n in candidates if n.kind in ("final", "history")] * 2
        if r.random() < 0.02:
            return [nodes[0]]  # the root itself
        # Prefer nearby targets a little: siblings and children.
        near = [n for n in candidates if n.parent is source.parent or n.parent is source]
        if near and r.random() < 0.4:
            return [r.choice(near)]
        return [r.choice(candidates)]

    def transition(self, source: Node, tag: str, nodes, parallels, *, always: bool = False) -> dict:
        r = self.r
        t: dict = {}
        targets = self.pick_targets(source, nodes, parallels)
        if targets is not None:
            strings = [self.target_string(source, x) for x in targets]
            t["target"] = strings[0] if len(strings) == 1 and r.random() < 0.8 else strings
            if r.random() < 0.18:
                t["reenter"] = True
        elif r.random() < 0.15:
            # Other spellings of "targetless": null (the runner turns it into undefined), "" and [].
            t["target"] = r.choice([None, "", []])
        if always:
            t["guard"] = self.guard(count_only=True)
            t["actions"] = self.actions(tag, bump=True)
            self.maybe_raise(t["actions"])
        else:
            if r.random() < 0.4:
                t["guard"] = self.guard()
            acts = self.actions(tag)
            guard_type = t.get("guard", {}).get("type")
            if guard_type in ("countIs", "countLt") and any(a["type"] == "bump" for a in acts):
                self.maybe_raise(acts)  # bounded too: it bumps the counter its guard reads
            if acts or r.random() < 0.5:
                t["actions"] = acts[0] if len(acts) == 1 and r.random() < 0.3 else acts
        return t

    def decorate(self, root: Node) -> None:
        r = self.r
        nodes = self.all_nodes(root)
        parallels = [
            n for n in nodes if n.kind == "parallel" and len([c for c in n.children if c.kind != "history"]) >= 2
        ]
        for node in nodes:
            if node.kind == "history":
                continue
            name = node.key or "root"
            cfg = node.config
            if r.random() < 0.6:
                cfg["entry"] = self.actions(name + "+")
            if r.random() < 0.5:
                cfg["exit"] = self.actions(name + "-")
            if node.kind == "final":
                if r.random() < 0.3:
                    cfg["output"] = {"from": name}
                continue
            # Event transitions.
            n_on = r.choices([0, 1, 2, 3], [3, 4, 3, 1])[0] if node.parent is not None else r.choice([0, 0, 1, 2])
            on: dict = {}
            for _ in range(n_on):
                roll = r.random()
                if roll < 0.08:
                    desc = r.choice(PARTIAL_DESCRIPTORS)
                elif roll < 0.11:
                    desc = "*"
                else:
                    desc = r.choice(KNOWN_EVENTS)
                if desc in on:
                    continue
                self.descriptors_used.add(desc)
                n_t = r.choices([1, 2, 3], [6, 3, 1])[0]
                # "*" also matches the internal `xstate.done.state.*` events, so (like `always`) it could loop
                # forever on its own: it is bounded the same way.
                ts = [
                    self.transition(node, f"{name}/{desc}#{i}", nodes, parallels, always=desc == "*")
                    for i in range(n_t)
                ]
                on[desc] = self.simplify(ts)
            if on:
                cfg["on"] = on
            # Eventless transitions.
            if r.random() < 0.15:
                n_t = r.choice([1, 1, 2])
                ts = [self.transition(node, f"{name}/always#{i}", nodes, parallels, always=True) for i in range(n_t)]
                cfg["always"] = ts[0] if len(ts) == 1 and r.random() < 0.5 else ts
            # Done transitions.
            if node.parent is not None and self.can_be_done(node) and r.random() < 0.75:
                cfg["onDone"] = self.done_transitions(node, name, nodes, parallels)

    def can_be_done(self, node: Node) -> bool:
        if node.kind == "compound":
            return any(c.kind == "final" for c in node.children)
        if node.kind == "parallel":
            regions = [c for c in node.children if c.kind != "history"]
            return all(self.can_be_done(c) for c in regions)
        return False

    def done_transitions(self, node: Node, name: str, nodes, parallels):
        r = self.r
        ts = []
        for i in range(r.choice([1, 1, 2])):
            tag = f"{name}/done#{i}"
            t = self.transition(node, tag, nodes, parallels)
            target = t.get("target")
            safe = not target or (
                # Entering an atomic, non-final sibling cannot make anything done again (in a compound parent: in a
                # parallel one, the transition's domain is the parent, which re-enters every region).
                node.parent.kind == "compound"
                and isinstance(target, str)
                and target in {c.key for c in node.parent.children if c.kind == "atomic" and c is not node}
            )
            if not safe:
                t["guard"] = self.guard(count_only=True)
                acts = t.get("actions", [])
                acts = [acts] if isinstance(acts, dict) else list(acts)
                if not any(a.get("type") == "bump" for a in acts):
                    acts.append({"type": "bump"})
                self.maybe_raise(acts)
                t["actions"] = acts
            ts.append(t)
        return self.simplify(ts)

    def simplify(self, ts: list[dict]):
        """xstate accepts a transition list, a single transition object, or a bare target string."""
        r = self.r
        if len(ts) == 1:
            t = ts[0]
            if set(t) == {"target"} and isinstance(t["target"], str) and r.random() < 0.5:
                return t["target"]
            if r.random() < 0.5:
                return t
        return ts

    # --- output ----------------------------------------------------------------------------------------------------

    def emit(self, node: Node) -> dict:
        if node.kind == "history":
            out: dict = {"type": "history", "history": node.history}
            if node.history == "shallow" and self.r.random() < 0.3:
                del out["history"]  # shallow is the default
            if node.history_target is not None:
                out["target"] = node.history_target
            return out
        out = {}
        if node.explicit_id:
            out["id"] = node.explicit_id
        if node.kind == "parallel":
            out["type"] = "parallel"
        elif node.kind == "final":
            out["type"] = "final"
        if node.kind == "compound":
            out["initial"] = node.initial.key
        out.update(node.config)
        if node.children:
            out["states"] = {c.key: self.emit(c) for c in node.children}
        return out

    def events(self) -> list[str]:
        r = self.r
        pool: list[str] = []
        for d in sorted(self.descriptors_used):
            if d == "*":
                pool.append(r.choice(KNOWN_EVENTS))
            elif d.endswith(".*"):
                prefix = d[:-2]
                pool += [e for e in KNOWN_EVENTS if e.startswith(prefix + ".")] + [prefix + ".q"]
            else:
                pool.append(d)
        if not pool:
            pool = list(KNOWN_EVENTS)
        out = []
        for _ in range(N_EVENTS):
            out.append(r.choice(UNKNOWN_EVENTS) if r.random() < 0.08 else r.choice(pool))
        return out


def generate(seed: int) -> dict:
    g = _Gen(seed)
    root = g.build()
    g.decorate(root)
    config = g.emit(root)
    config = {**({"id": g.root_id} if g.root_id else {}), "context": {"count": 0, "log": []}, **config}
    return {"seed": seed, "config": config, "events": g.events()}


if __name__ == "__main__":
    for arg in sys.argv[1:] or ["0"]:
        print(json.dumps(generate(int(arg)), indent=2))
