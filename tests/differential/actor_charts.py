"""A seeded generator of random charts run as actors, for the differential test's actor mode.

`generate(seed)` returns `{"seed", "config", "children", "spawns", "events"}`: the root machine's config (as in
charts.py, plus what only a running actor does), the configs of the child machines it may invoke or spawn (actor
sources `"k1"`, `"k2"`), the spawn actions (`{"spawn1": {"src": "k1", "id": "sp1"}}`), and the steps that drive
it: an event type to send, or `"+10"` to move the simulated clock 10 ms on. The structure, the assign actions
(`log`, `bump`), the guards and the bounded raises come from charts.py; on top of it:

- custom and built-in actions that only a running actor performs, each a named action both runners implement
  alike (harness_actors.py, xstate_actor_runner.mjs): `note` (a custom action: appends `<actor id>:<tag>` to
  the observed log), `say` (`log`), `shout` (`emit`), `later`/`laterX`/`laterY` (a delayed raise, without an id
  or under the id X or Y), `unlater` (`cancel`), `tell`/`tellLater` (`sendTo` a child, now or delayed),
  `tellParent` (`sendParent`, children only), `spawn<N>` (`spawnChild`), `unspawn` (`stopChild`), and `choose`
  (`enqueueActions` that checks named guards and `stateIn` before it enqueues);
- `after` transitions, `invoke`s of the child machines with `onDone`, and transitions on the messages M1-M3.

Termination: every delay is at least one clock step, so a step fires finitely many timers. Events that one
actor sends another or itself later (M1-M3, timers, done events) only ever trigger bounded transitions (guarded
by `countIs`/`countLt`, bumping the counter), so each actor takes finitely many of them; a raise of a known event
stays in bounded transitions, as in charts.py. Run this file to print a chart:
`python -m tests.differential.actor_charts SEED`.
"""

from __future__ import annotations

import json
import sys

from tests.differential.charts import KNOWN_EVENTS, Node, _Gen

MESSAGES = ["M1", "M2", "M3"]
EMITTED = ["EV1", "EV2"]
DELAYS = [10, 20, 30, 50]
TICK = "+10"
N_STEPS = 30


class _ActorGen(_Gen):
    def __init__(self, seed: int, child_srcs: list[str] | None = None):
        super().__init__(seed)
        self.is_child = child_srcs is None
        self.child_srcs = child_srcs or []
        if self.is_child:
            self.max_depth = self.r.choice([1, 2, 2])
            self.budget = self.r.randint(2, 5)
        self.n_invokes = 0
        self.spawns: dict[str, dict] = {}
        self.invoke_ids: dict[Node, str] = {}

    # --- actions only an actor performs ----------------------------------------------------------------------

    def _reachable_children(self, node: Node) -> list[str]:
        """Ids of children invoked by `node` or its ancestors: alive whenever `node` is active."""
        return [self.invoke_ids[n] for n in [node, *node.ancestors()] if n in self.invoke_ids]

    def _child_id(self, node: Node) -> str | None:
        r = self.r
        known = self._reachable_children(node)
        spawned = [s["id"] for s in self.spawns.values()]
        if spawned and (not known or r.random() < 0.1):
            return r.choice(spawned)  # alive only after its spawn action: else the send fails the actor
        return r.choice(known) if known else None

    def _simple_action(self, node: Node, tag: str) -> dict:
        """One action an enqueueActions may pick (nothing that raises a known event: it may run unbounded)."""
        r = self.r
        kind = r.choice(["note", "note", "say", "later", "log", "bump"] + ([] if self.is_child else ["shout"]))
        if kind in ("log", "bump"):
            return self.log(tag) if kind == "log" else {"type": "bump"}
        return self._actor_action(node, tag, kind)

    def _actor_action(self, node: Node, tag: str, kind: str) -> dict:
        r = self.r
        if kind == "note":
            params: dict = {"tag": tag}
            if r.random() < 0.5:
                params["ev"] = True
            if r.random() < 0.15:
                params["out"] = True
            return {"type": "note", "params": params}
        if kind == "say":
            return {"type": "say", "params": {"text": tag}}
        if kind == "shout":
            return {"type": "shout", "params": {"event": r.choice(EMITTED)}}
        if kind == "later":
            name = r.choice(["later", "laterX", "laterX", "laterY"])
            return {"type": name, "params": {"event": r.choice(MESSAGES), "delay": r.choice(DELAYS)}}
        if kind == "unlater":
            return {"type": "unlater", "params": {"id": r.choice(["X", "Y"])}}
        if kind == "tellParent":
            return {"type": "tellParent", "params": {"event": r.choice(MESSAGES)}}
        if kind == "unspawn":
            return {"type": "unspawn", "params": {"id": r.choice([s["id"] for s in self.spawns.values()])}}
        if kind == "spawn":
            return {"type": r.choice(sorted(self.spawns))}
        if kind in ("tell", "tellLater"):
            params = {"to": self._child_id(node), "event": r.choice(MESSAGES)}
            if kind == "tellLater":
                params["delay"] = r.choice(DELAYS)
            return {"type": kind, "params": params}
        assert kind == "choose"
        items = []
        for i in range(r.randint(1, 3)):
            item: dict = {"action": self._simple_action(node, f"{tag}?{i}")}
            roll = r.random()
            if roll < 0.5:
                item["guard"] = {"in": self._state_in_value()}
            elif roll < 0.75:
                item["guard"] = self.guard()
            items.append(item)
        return {"type": "choose", "params": {"items": items}}

    def _state_in_value(self) -> str:
        r = self.r
        nodes = [n for n in self.all_nodes(self.root) if n.parent is not None and n.kind != "history"]
        target = r.choice(nodes)
        if target.explicit_id and r.random() < 0.5:
            return "#" + target.explicit_id
        return ".".join(target.path)

    def _kinds(self, node: Node) -> list[str]:
        kinds = ["note"] * 5 + ["say"] * 2 + ["later"] * 3 + ["unlater"] * 2 + ["choose"] * 2
        if self.is_child:
            return kinds + ["tellParent"] * 4
        kinds += ["shout"] * 2
        if self._reachable_children(node):
            kinds += ["tell"] * 4 + ["tellLater"]
        elif self.spawns:
            kinds += ["tell"]
        if self.spawns:
            kinds += ["spawn"] * 2 + ["unspawn"]
        return kinds

    def _sprinkle(self, node: Node, actions: list[dict], tag: str) -> list[dict]:
        """Actor actions added at random places of an action list."""
        r = self.r
        if r.random() >= 0.4:
            return actions
        out = list(actions)
        for i in range(r.choice([1, 1, 2])):
            kind = r.choice(self._kinds(node))
            out.insert(r.randint(0, len(out)), self._actor_action(node, f"{tag}~{i}", kind))
        return out

    # --- structure only an actor has -------------------------------------------------------------------------

    def _bounded(self, node: Node, tag: str, nodes, parallels) -> dict:
        return self.transition(node, tag, nodes, parallels, always=True)

    def decorate(self, root: Node) -> None:
        self.root = root
        super().decorate(root)
        r = self.r
        nodes = self.all_nodes(root)
        parallels = [
            n for n in nodes if n.kind == "parallel" and len([c for c in n.children if c.kind != "history"]) >= 2
        ]
        live = [n for n in nodes if n.kind not in ("history", "final")]
        if not self.is_child:
            for i in range(r.choice([0, 1, 1, 2])):
                self.spawns[f"spawn{i + 1}"] = {"src": r.choice(self.child_srcs), "id": f"sp{i + 1}"}
            for node in live:
                if r.random() < 0.3:
                    self.n_invokes += 1
                    self.invoke_ids[node] = f"c{self.n_invokes}"
        for node in live:
            name = node.key or "root"
            cfg = node.config
            if node in self.invoke_ids:
                invoke: dict = {"id": self.invoke_ids[node], "src": r.choice(self.child_srcs)}
                if r.random() < 0.6:
                    invoke["onDone"] = self._bounded(node, f"{name}/done.{invoke['id']}", nodes, parallels)
                cfg["invoke"] = invoke
            p_message = 0.6 if self.is_child else 0.35
            for message in MESSAGES:
                if r.random() < p_message / 2:
                    on = cfg.setdefault("on", {})
                    on[message] = self._bounded(node, f"{name}/{message}", nodes, parallels)
            if r.random() < (0.45 if self.is_child else 0.25):
                cfg["after"] = {
                    str(delay): self._bounded(node, f"{name}/after{delay}", nodes, parallels)
                    for delay in sorted(r.sample(DELAYS, r.choice([1, 1, 2])))
                }
        for node in nodes:
            if node.kind == "history":
                continue
            name = node.key or "root"
            cfg = node.config
            for key, sign in (("entry", "+"), ("exit", "-")):
                actions = self._sprinkle(node, cfg.get(key) or [], name + sign)
                if actions:
                    cfg[key] = actions
            for transition in self._transitions_of(cfg):
                acts = transition.get("actions") or []
                acts = [acts] if isinstance(acts, dict) else list(acts)
                acts = self._sprinkle(node, acts, f"{name}>")
                if acts:
                    transition["actions"] = acts

    @staticmethod
    def _transitions_of(cfg: dict) -> list[dict]:
        """The transition dicts of a state's config (a bare target string has no actions to add to)."""
        groups = list((cfg.get("on") or {}).values()) + list((cfg.get("after") or {}).values())
        groups += [cfg.get("always"), cfg.get("onDone"), (cfg.get("invoke") or {}).get("onDone")]
        out = []
        for group in groups:
            for t in group if isinstance(group, list) else [group]:
                if isinstance(t, dict):
                    out.append(t)
        return out

    def steps(self) -> list[str]:
        r = self.r
        pool = sorted(self.descriptors_used & set(KNOWN_EVENTS)) or list(KNOWN_EVENTS)
        out = []
        for _ in range(N_STEPS):
            roll = r.random()
            out.append(TICK if roll < 0.4 else r.choice(MESSAGES) if roll < 0.47 else r.choice(pool))
        return out


def _context(gen: _Gen, config: dict) -> dict:
    return {**({"id": gen.root_id} if gen.root_id else {}), "context": {"count": 0, "log": []}, **config}


def generate(seed: int) -> dict:
    gen = _ActorGen(seed, child_srcs=[])
    n_children = gen.r.choice([1, 2, 2])
    gen.child_srcs = [f"k{i + 1}" for i in range(n_children)]
    children = {}
    for i, src in enumerate(gen.child_srcs):
        child = _ActorGen(seed * 4 + i + 1_000_003)
        child_root = child.build()
        child.decorate(child_root)
        children[src] = _context(child, child.emit(child_root))
    root = gen.build()
    gen.decorate(root)
    return {
        "seed": seed,
        "config": _context(gen, gen.emit(root)),
        "children": children,
        "spawns": gen.spawns,
        "events": gen.steps(),
    }


if __name__ == "__main__":
    for arg in sys.argv[1:] or ["0"]:
        print(json.dumps(generate(int(arg)), indent=2))
