"""What the interpreter learns about each configuration, kept so the next visit costs a lookup (issue 24).

A machine without history states is a function of its configuration in two places: which transitions an event
*can* select (the active states' candidates, deepest first), and, once selected, which states a microstep exits
and enters and what configuration it lands in. Both are pure functions of the active nodes (in their order) and
of the transitions, so each `Configuration` (one interned per node tuple, at most `MAX_CONFIGURATIONS` per machine)
keeps, per event type, a `Selection` and, per set of selected transitions, a `Step`.

Only guards and actions still run on every event; their results (context, children, timers) are never cached.
History states make exits and entries depend on `history_value` too, so a machine that has any is not cached at
all, nor is a step that enters a final state (it completes states, which depends on what is active by then).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.core.statechart.entry_exit import compute_entry_set, entry_actions_of, exit_actions_of
from engine.core.statechart.selection import compute_exit_set, next_transition, remove_conflicting_transitions

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from engine.core.statechart.events import Event
    from engine.core.statechart.machine import StateMachine
    from engine.core.statechart.nodes import StateNode, Transition
    from engine.core.statechart.snapshot import Snapshot

__all__ = ["Configuration", "Selection", "Step", "configuration_of", "MAX_CONFIGURATIONS"]

MAX_CONFIGURATIONS = 4096


class Configuration:
    """One interned tuple of active nodes, with the selections and steps computed from it so far."""

    __slots__ = ("nodes", "selections", "steps")

    def __init__(self, nodes: tuple[StateNode, ...]) -> None:
        self.nodes = nodes
        self.selections: dict[str, Selection] = {}
        self.steps: dict[Any, Step | None] = {}

    def select(self, snapshot: Snapshot, event: Event) -> Sequence[Transition]:
        """The transitions `event` selects here (its type's Selection is built on the first such event)."""
        event_type = event["type"]
        selection = self.selections.get(event_type)
        if selection is None:
            selection = self.selections[event_type] = Selection.build(snapshot, event_type)
        fixed = selection.fixed
        if fixed is not None:
            return fixed
        assert selection.branch is not None
        return selection.branch.select(snapshot, event)

    def learn_step(self, snapshot: Snapshot, transitions: Sequence[Transition], key: Any) -> Step | None:
        """The microstep of these selected transitions from here, kept in `steps` under `key` (the one
        transition, or the tuple of them); None when it must run uncached."""
        step = self.steps[key] = Step.build(snapshot, transitions)
        return step


def configuration_of(machine: StateMachine, nodes: tuple[StateNode, ...]) -> Configuration | None:
    """The interned Configuration of `nodes`; None when the machine does not cache (it has history states, or
    `caches_configurations` was turned off) or already keeps `MAX_CONFIGURATIONS`."""
    if not machine.caches_configurations:
        return None
    known = machine.configurations
    config = known.get(nodes)
    if config is None:
        if len(known) >= MAX_CONFIGURATIONS:
            return None
        config = known[nodes] = Configuration(nodes)
    return config


class _Branch:
    """One active state that can take the event, or has an active descendant that can, in selection order."""

    __slots__ = ("node", "candidates", "kids")

    def __init__(self, node: StateNode, candidates: tuple[Transition, ...], kids: tuple[_Branch, ...]) -> None:
        self.node, self.candidates, self.kids = node, candidates, kids

    def select(self, snapshot: Snapshot, event: Event) -> list[Transition]:
        """selection._transition_node over only the states that matter: children first, the state itself when
        none of them took the event."""
        found: list[Transition] = []
        for kid in self.kids:
            found.extend(kid.select(snapshot, event))
        if found:
            return found
        if self.candidates:
            t = next_transition(self.node, snapshot, event)
            if t is not None:
                return [t]
        return found

    def select_unguarded(self) -> list[Transition]:
        """`select` when no candidate below has a guard: each state's first candidate answers (worked out once)."""
        found: list[Transition] = []
        for kid in self.kids:
            found.extend(kid.select_unguarded())
        if found or not self.candidates:
            return found
        return [self.candidates[0]]

    def guarded(self) -> bool:
        """Whether a guard below decides, so the selection must be made again on every event."""
        return any(t.guard is not None for t in self.candidates) or any(kid.guarded() for kid in self.kids)


def _branch(node: StateNode, adjacency: dict[StateNode, list[StateNode]], event_type: str) -> _Branch | None:
    """The states under (and including) `node` that selection would ask about `event_type`; None if none can take
    it, so the event selects nothing there."""
    kids = adjacency.get(node)
    asked: list[StateNode] = []
    if kids:
        # the same rule as selection._transition_node: the state value's shape decides which children answer
        asked = [kids[0]] if len(kids) == 1 or (node.type == "compound" and kids[0].is_atomic) else kids
    branches = tuple(b for b in (_branch(kid, adjacency, event_type) for kid in asked) if b is not None)
    candidates = node.candidates(event_type)
    if not candidates:
        if not branches:
            return None
        if len(branches) == 1:
            return branches[0]  # a state that cannot take the event only passes its one child's answer on
    return _Branch(node, candidates, branches)


class Selection:
    """The transitions one event type selects in one configuration: fixed when no candidate has a guard, else
    the branches whose guards are asked on each event."""

    __slots__ = ("fixed", "branch")

    def __init__(self, fixed: tuple[Transition, ...] | None, branch: _Branch | None) -> None:
        self.fixed, self.branch = fixed, branch

    @classmethod
    def build(cls, snapshot: Snapshot, event_type: str) -> Selection:
        """Work out, from the snapshot's configuration, how `event_type` selects transitions there."""
        branch = _branch(snapshot.machine.root, snapshot.adjacency, event_type)
        if branch is None:
            return cls((), None)
        if not branch.guarded():
            return cls(tuple(branch.select_unguarded()), None)
        return cls(None, branch)


class Step:
    """A microstep's structure from one configuration: the transitions left once conflicts are removed, the
    exit and entry actions in the order they run, and the configuration it lands in (None: the same one, whose
    order is kept)."""

    __slots__ = ("transitions", "exits", "entries", "target")

    def __init__(
        self,
        transitions: tuple[Transition, ...],
        exits: tuple[tuple[StateNode, tuple[Any, ...]], ...],
        entries: tuple[tuple[StateNode, tuple[Any, ...]], ...],
        target: Configuration | None,
    ) -> None:
        self.transitions, self.exits, self.entries, self.target = transitions, exits, entries, target

    @classmethod
    def build(cls, snapshot: Snapshot, transitions: Sequence[Transition]) -> Step | None:
        """The step macrostep.microstep would take, worked out without running any action (None: not cacheable)."""
        nodes = snapshot.nodes
        active = dict.fromkeys(nodes)
        history_value = snapshot.history_value
        filtered = remove_conflicting_transitions(list(transitions), active, history_value)
        to_exit = compute_exit_set(filtered, active, history_value)
        to_exit.sort(key=lambda n: n.order, reverse=True)
        exits = []
        for node in to_exit:
            actions = exit_actions_of(node)
            if actions:
                exits.append((node, actions))
            del active[node]
        to_enter: dict[StateNode, None] = {}
        default_entry: dict[StateNode, None] = {}
        compute_entry_set(filtered, history_value, default_entry, to_enter)
        entries = []
        for node in sorted(to_enter, key=lambda n: n.order):
            if node.type == "final":
                return None
            active[node] = None
            actions = entry_actions_of(node)
            if node in default_entry and node.initial is not None and node.initial.actions:
                actions = (*actions, *node.initial.actions)
            if actions:
                entries.append((node, actions))
        landed = tuple(active)
        if len(landed) == len(nodes) and snapshot.node_set.issuperset(landed):
            target = None
        else:
            target = configuration_of(snapshot.machine, landed)
            if target is None:
                return None
        return cls(tuple(filtered), tuple(exits), tuple(entries), target)
