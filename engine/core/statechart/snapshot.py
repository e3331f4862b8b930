"""Snapshots: immutable values of a machine at rest between macrosteps, and their plain-JSON form."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from engine.core.statechart.configuration import configuration_of
from engine.core.statechart.encoding import snapshot_to_json
from engine.core.statechart.entry_exit import initial_state_nodes
from engine.core.statechart.events import Event, to_event
from engine.core.statechart.nodes import to_state_path

if TYPE_CHECKING:
    from engine.core.statechart.configuration import Configuration
    from engine.core.statechart.machine import StateMachine
    from engine.core.statechart.nodes import StateNode
    from engine.core.statechart.refs import ActorRef

__all__ = ["Snapshot", "Timer", "matches_state", "to_state_value"]


_UNKNOWN: Any = object()  # a snapshot's configuration not looked up yet


class Timer:
    """A scheduled event (a delayed `raise_`/`send_to` or an `after`), kept as data so it persists.

    `target` is None (this machine), `"#_parent"`, a child id, or an ActorRef; `started_at` is filled in by the
    host's clock when it schedules the timer, so a restored run can schedule only what remains.
    """

    __slots__ = ("id", "event", "delay", "target", "started_at")

    def __init__(
        self, id: str, event: Event, delay: float, target: Any = None, started_at: float | None = None
    ) -> None:
        self.id, self.event, self.delay, self.target, self.started_at = id, event, delay, target, started_at

    def to_json(self) -> dict[str, Any]:
        target = self.target
        if target is not None and not isinstance(target, str):
            target = {"ref": target.id}
        return {
            "id": self.id,
            "event": dict(self.event),
            "delay": self.delay,
            "target": target,
            "started_at": self.started_at,
        }

    def __repr__(self) -> str:
        return f"Timer({self.id!r}, {self.event.get('type')!r}, delay={self.delay})"


def to_state_value(value: Any) -> Any:
    """`"a.b.c"` → `{"a": {"b": "c"}}`; dicts pass through."""
    if isinstance(value, dict):
        return value
    path = to_state_path(value)
    if len(path) == 1:
        return path[0]
    out: Any = path[-1]
    for key in reversed(path[:-1]):
        out = {key: out}
    return out


def matches_state(parent_value: Any, child_value: Any) -> bool:
    """Whether `child_value` (a full state value) is in the (partial) `parent_value`."""
    parent = to_state_value(parent_value)
    child = to_state_value(child_value)
    if isinstance(child, str):
        return isinstance(parent, str) and parent == child
    if isinstance(parent, str):
        return parent in child
    return all(key in child and matches_state(sub, child[key]) for key, sub in parent.items())


class Snapshot:
    """A machine's state: the active state nodes (in xstate's insertion order), context, status and children.

    Snapshots are never changed in place: every step builds a new one with `replace`.
    """

    __slots__ = (
        "machine",
        "nodes",
        "context",
        "status",
        "output",
        "error",
        "children",
        "history_value",
        "timers",
        "seq",
        "_value",
        "_node_set",
        "_tags",
        "_adjacency",
        "_configuration",
    )

    def __init__(
        self,
        machine: StateMachine,
        nodes: tuple[StateNode, ...],
        context: Any,
        status: str = "active",
        output: Any = None,
        error: Any = None,
        children: dict[str, ActorRef] | None = None,
        history_value: dict[str, tuple[StateNode, ...]] | None = None,
        timers: dict[str, Timer] | None = None,
        seq: int = 0,
    ) -> None:
        self.machine = machine
        self.nodes = nodes
        self.context = context
        self.status = status
        self.output = output
        self.error = error
        self.children = children if children is not None else {}
        self.history_value = history_value if history_value is not None else {}
        self.timers = timers if timers is not None else {}
        self.seq = seq
        self._value: Any = None
        self._node_set: frozenset[StateNode] | None = None
        self._tags: frozenset[str] | None = None
        self._adjacency: dict[StateNode, list[StateNode]] | None = None
        self._configuration: Any = _UNKNOWN

    def replace(self, **changes: Any) -> Snapshot:
        new = Snapshot.__new__(Snapshot)
        new.machine = self.machine
        new.nodes = self.nodes
        new.context = self.context
        new.status = self.status
        new.output = self.output
        new.error = self.error
        new.children = self.children
        new.history_value = self.history_value
        new.timers = self.timers
        new.seq = self.seq
        new._value = self._value
        new._node_set = self._node_set
        new._tags = self._tags
        new._adjacency = self._adjacency
        new._configuration = self._configuration
        for name, value in changes.items():
            setattr(new, name, value)
        if new.nodes is not self.nodes:
            new._value = new._node_set = new._tags = new._adjacency = None
            new._configuration = _UNKNOWN
        return new

    def moved(self, configuration: Configuration) -> Snapshot:
        """This snapshot in another (interned) configuration: `replace(nodes=...)` without the generic copy."""
        new = Snapshot.__new__(Snapshot)
        new.machine = self.machine
        new.nodes = configuration.nodes
        new.context = self.context
        new.status = self.status
        new.output = self.output
        new.error = self.error
        new.children = self.children
        new.history_value = self.history_value
        new.timers = self.timers
        new.seq = self.seq
        new._value = new._node_set = new._tags = new._adjacency = None
        new._configuration = configuration
        return new

    # -- derived views ---------------------------------------------------------------------------------------

    @property
    def adjacency(self) -> dict[StateNode, list[StateNode]]:
        """Each active state's active children, in configuration order (xstate's `getAdjList`)."""
        if self._adjacency is None:
            nodes = self.nodes
            cache = self.machine.adjacency_cache
            cached = cache.get(nodes)
            if cached is not None:
                self._adjacency = cached
                return cached
            if not _is_complete(nodes):
                # as xstate's getStateValue: history leaves a configuration incomplete, and so does the
                # pre-initial snapshot (only the root), whose value a guard checked during the initial entry reads
                nodes = tuple(all_state_nodes(nodes))
            adjacency: dict[StateNode, list[StateNode]] = {}
            for node in nodes:
                parent = node.parent
                if parent is not None:
                    kids = adjacency.get(parent)
                    if kids is None:
                        adjacency[parent] = [node]
                    else:
                        kids.append(node)
            self._adjacency = adjacency
            if len(cache) < 4096:
                cache[self.nodes] = adjacency
        return self._adjacency

    @property
    def configuration(self) -> Configuration | None:
        """The interned configuration whose selections and steps are cached (None: this machine is not cached)."""
        configuration = self._configuration
        if configuration is _UNKNOWN:
            configuration = self._configuration = configuration_of(self.machine, self.nodes)
        return configuration

    @property
    def value(self) -> Any:
        """The state value, exactly xstate's shape: `"a"`, `{"a": "b"}`, `{"p": {"x": "x1", "y": "y1"}}`."""
        if self._value is None:
            self._value = _value_from_adjacency(self.machine.root, self.adjacency)
        return self._value

    @property
    def node_set(self) -> frozenset[StateNode]:
        if self._node_set is None:
            self._node_set = frozenset(self.nodes)
        return self._node_set

    @property
    def tags(self) -> frozenset[str]:
        if self._tags is None:
            self._tags = frozenset(tag for node in self.nodes for tag in node.tags)
        return self._tags

    def matches(self, value: Any) -> bool:
        return matches_state(value, self.value)

    def has_tag(self, tag: str) -> bool:
        return tag in self.tags

    def can(self, event: Any) -> bool:
        """Whether `event` would select a transition that changes something (a target or actions)."""
        transitions = self.machine.get_transition_data(self, to_event(event))
        return any(t.target is not None or t.actions for t in transitions)

    def get_meta(self) -> dict[str, Any]:
        return {node.id: node.meta for node in self.nodes if node.meta is not None}

    # -- timers and ids (pure bookkeeping for the host) -------------------------------------------------------

    def next_id(self, prefix: str) -> tuple[Snapshot, str]:
        return self.replace(seq=self.seq + 1), f"{prefix}:{self.seq}"

    def with_timer(self, send_id: str | None, event: Event, delay: float, target: Any = None) -> tuple[Snapshot, Timer]:
        """This snapshot with one more scheduled event (replacing the listing of a pending one with the same id),
        and that event's Timer."""
        snapshot = self
        if send_id is None:
            snapshot, send_id = snapshot.next_id("xstate.timer")
        timer = Timer(send_id, event, delay, target)
        return snapshot.replace(timers={**snapshot.timers, send_id: timer}), timer

    def without_timer(self, send_id: str) -> Snapshot:
        if send_id not in self.timers:
            return self
        timers = dict(self.timers)
        del timers[send_id]
        return self.replace(timers=timers)

    # -- JSON ------------------------------------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        """Plain JSON: what `machine.resolve_snapshot` needs to restore this snapshot, children and timers included."""
        return snapshot_to_json(self)

    def __repr__(self) -> str:
        return f"Snapshot(value={self.value!r}, status={self.status!r}, context={self.context!r})"


def _initial_with_ancestors(node: StateNode) -> list[StateNode]:
    out = initial_state_nodes(node)
    for initial in list(out):
        for anc in initial.ancestors:
            if anc is node:
                break
            out.append(anc)
    return out


def all_state_nodes(nodes: Iterable[StateNode]) -> list[StateNode]:
    """xstate's `getAllStateNodes`: complete a set of nodes into a configuration (initial descendants of compound
    states with no active child, every region of a parallel state, every ancestor), keeping insertion order."""
    node_set = dict.fromkeys(nodes)
    has_child = {n.parent for n in node_set if n.parent is not None}
    queue = list(node_set)
    i = 0
    while i < len(queue):
        s = queue[i]
        i += 1
        added: list[StateNode] = []
        if s.type == "compound" and s not in has_child:
            added = _initial_with_ancestors(s)
        elif s.type == "parallel":
            for child in s.children:
                if child not in node_set:
                    added.extend(_initial_with_ancestors(child))
        for n in added:
            if n not in node_set:
                node_set[n] = None
                queue.append(n)
    for n in list(node_set):
        for anc in n.ancestors:
            node_set.setdefault(anc, None)
    return list(node_set)


def _is_complete(nodes: tuple[StateNode, ...]) -> bool:
    node_set = set(nodes)
    for n in nodes:
        if n.parent is not None and n.parent not in node_set:
            return False
        if n.type == "compound" and not any(c in node_set for c in n.children):
            return False
        if n.type == "parallel" and not all(c in node_set for c in n.children):
            return False
    return True


def _value_from_adjacency(root: StateNode, adjacency: dict[StateNode, list[StateNode]]) -> Any:
    def value_of(node: StateNode) -> Any:
        kids = adjacency.get(node)
        if not kids:
            return {}
        if node.type == "compound" and kids[0].is_atomic:
            return kids[0].key
        return {kid.key: value_of(kid) for kid in kids}

    return value_of(root)
