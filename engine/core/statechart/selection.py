"""Transition selection: which transitions an event (or no event) enables, and which of them conflict.

Follows xstate's `transitionNode` (deepest states first, a parent only when no child takes the event) and SCXML's
`removeConflictingTransitions`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.core.statechart.errors import GuardError, ImplementationError, StatechartError
from engine.core.statechart.guards import evaluate_guard, guard_name

if TYPE_CHECKING:
    from collections.abc import Sequence

    from engine.core.statechart.events import Event
    from engine.core.statechart.nodes import StateNode, Transition
    from engine.core.statechart.snapshot import Snapshot

__all__ = [
    "select_transitions",
    "select_eventless_transitions",
    "remove_conflicting_transitions",
    "is_descendant",
    "transition_domain",
    "effective_targets",
    "history_default_targets",
]


def is_descendant(node: StateNode, ancestor: StateNode | None) -> bool:
    """xstate's `isDescendant`; every node (the root too) counts as a descendant of `None`."""
    if ancestor is None:
        return True
    return ancestor in node.ancestor_set


def next_transition(node: StateNode, snapshot: Snapshot, event: Event) -> Transition | None:
    """The first candidate of `node` whose guard passes (xstate's `StateNode.next`)."""
    context = snapshot.context
    for candidate in node.candidates(event["type"]):
        guard = candidate.guard
        if guard is None:
            return candidate
        try:
            passed = evaluate_guard(guard, context, event, snapshot)
        except ImplementationError as err:
            raise ImplementationError(
                f"{err}; used in transition for event '{event['type']}' in state '#{node.id}'"
            ) from None
        except StatechartError:
            raise
        except Exception as err:
            name = guard_name(guard)
            label = f"'{name}' " if name and name != "<lambda>" else ""
            raise GuardError(
                f"unable to evaluate guard {label}in transition for event '{event['type']}' in state "
                f"'#{node.id}': {err}"
            ) from err
        if passed:
            return candidate
    return None


def _transition_node(
    node: StateNode, adjacency: dict[StateNode, list[StateNode]], snapshot: Snapshot, event: Event
) -> list[Transition]:
    """xstate's `transitionNode`, walking the active configuration: the deepest states answer first; a state is
    asked only when none of its active children took the event; every region of a parallel state is asked."""
    kids = adjacency.get(node)
    if kids:
        if len(kids) == 1 or (node.type == "compound" and kids[0].is_atomic):
            # the state value's shape decides: a compound state whose first active child is atomic has that
            # child as its value, whatever else an odd (history-made) configuration holds
            found = _transition_node(kids[0], adjacency, snapshot, event)
        else:
            found = []
            for kid in kids:
                found.extend(_transition_node(kid, adjacency, snapshot, event))
        if found:
            return found
    t = next_transition(node, snapshot, event)
    return [t] if t is not None else []


def select_transitions(snapshot: Snapshot, event: Event) -> Sequence[Transition]:
    """Transitions enabled by `event`, children before parents (xstate's `getTransitionData`). Do not change
    what it returns: in a cached configuration it is shared by every event of that type."""
    configuration = snapshot.configuration
    if configuration is not None:
        return configuration.select(snapshot, event)
    return _transition_node(snapshot.machine.root, snapshot.adjacency, snapshot, event)


def select_eventless_transitions(snapshot: Snapshot, event: Event) -> list[Transition]:
    """For each atomic state, the first `always` transition (itself, then ancestors) whose guard passes."""
    if not snapshot.machine.has_always:
        return []
    enabled: dict[Transition, None] = {}
    context = snapshot.context
    for node in snapshot.nodes:
        if not node.is_atomic:
            continue
        for state in (node, *node.ancestors):
            if not state.always:
                continue
            chosen = None
            for t in state.always:
                if t.guard is None or evaluate_guard(t.guard, context, event, snapshot):
                    chosen = t
                    break
            if chosen is not None:
                enabled[chosen] = None
                break
    if not enabled:
        return []
    return remove_conflicting_transitions(list(enabled), dict.fromkeys(snapshot.nodes), snapshot.history_value)


def history_default_targets(history: StateNode) -> tuple[tuple[StateNode, ...], bool]:
    """A history state's default: its `target`, else the parent (parallel) or the parent's initial.

    The flag says whether the default is the parent's initial transition (its ancestors then enter by default).
    """
    parent = history.parent
    assert parent is not None
    target = history.config.get("target")
    if not target:
        if parent.type == "parallel":
            return (parent,), False
        assert parent.initial is not None
        return tuple(parent.initial.target or ()), True
    targets = target if isinstance(target, (list, tuple)) else [target]
    return tuple(parent.get_by_path(t) if isinstance(t, str) else t for t in targets), False


def effective_targets(
    targets: tuple[StateNode, ...] | None, history_value: dict[str, tuple[StateNode, ...]]
) -> list[StateNode]:
    """Targets with history states replaced by what they remember (or their default)."""
    if not targets:
        return []
    out: dict[StateNode, None] = {}
    for target in targets:
        if target.type == "history":
            remembered = history_value.get(target.id)
            if remembered is not None:  # an empty memory is still a memory, as in xstate
                out.update(dict.fromkeys(remembered))
            else:
                out.update(dict.fromkeys(effective_targets(history_default_targets(target)[0], history_value)))
        else:
            out[target] = None
    return list(out)


def _least_common_ancestor(nodes: list[StateNode]) -> StateNode | None:
    head, tail = nodes[0], nodes[1:]
    for ancestor in head.ancestors:
        if all(ancestor in n.ancestor_set for n in tail):
            return ancestor
    return None


def transition_domain(t: Transition, history_value: dict[str, tuple[StateNode, ...]]) -> StateNode | None:
    """The state whose descendants the transition exits and enters (None: the whole machine, root included)."""
    if t.static:
        cached = t.domain_cache
        if cached is not UNSET:
            return cached
        domain = _domain(t, history_value)
        t.domain_cache = domain
        return domain
    return _domain(t, history_value)


UNSET = object()


def _domain(t: Transition, history_value: dict[str, tuple[StateNode, ...]]) -> StateNode | None:
    targets = effective_targets(t.target, history_value)
    source = t.source
    if not t.reenter and all(target is source or source in target.ancestor_set for target in targets):
        return source
    lca = _least_common_ancestor([*targets, source])
    if lca is not None:
        return lca
    if t.reenter:
        return None
    return source.machine.root


def compute_exit_set(
    transitions: list[Transition], active: dict[StateNode, None], history_value: dict[str, tuple[StateNode, ...]]
) -> list[StateNode]:
    to_exit: dict[StateNode, None] = {}
    for t in transitions:
        if not t.target:
            continue
        domain = transition_domain(t, history_value)
        if t.reenter and t.source is domain:
            to_exit[domain] = None
        for node in active:
            if domain is None or domain in node.ancestor_set:
                to_exit[node] = None
    return list(to_exit)


def remove_conflicting_transitions(
    enabled: Sequence[Transition], active: dict[StateNode, None], history_value: dict[str, tuple[StateNode, ...]]
) -> list[Transition]:
    """SCXML's rule: of two transitions that exit a common state, the one from the deeper source wins;
    otherwise the earlier one (in selection order) wins."""
    if len(enabled) < 2:
        return list(enabled)
    exit_sets: dict[Transition, set[StateNode]] = {}

    def exits(t: Transition) -> set[StateNode]:
        if t not in exit_sets:
            exit_sets[t] = set(compute_exit_set([t], active, history_value))
        return exit_sets[t]

    filtered: dict[Transition, None] = {}
    for t1 in enabled:
        preempted = False
        to_remove = []
        for t2 in filtered:
            if exits(t1) & exits(t2):
                if t2.source in t1.source.ancestor_set:
                    to_remove.append(t2)
                else:
                    preempted = True
                    break
        if not preempted:
            for t3 in to_remove:
                del filtered[t3]
            filtered[t1] = None
    return list(filtered)
