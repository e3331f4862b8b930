"""Which states a microstep exits and enters (SCXML's `computeExitSet` / `computeEntrySet`, as xstate v5 does them).

xstate v5 differs from SCXML in one place that matters: a transition whose targets are all inside its source does
not exit the source unless `reenter: True`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine.core.statechart.actions.spawn import SpawnChild
from engine.core.statechart.actions.stop import stop_child
from engine.core.statechart.selection import effective_targets, history_default_targets, transition_domain

if TYPE_CHECKING:
    from engine.core.statechart.actions.base import BuiltinAction
    from engine.core.statechart.nodes import StateNode, Transition

__all__ = ["compute_entry_set", "initial_state_nodes", "entry_actions_of", "exit_actions_of"]

HistoryValue = dict[str, tuple["StateNode", ...]]


def initial_state_nodes(node: StateNode) -> list[StateNode]:
    """`node` and, recursively, the initial children it enters by default (all regions of a parallel)."""
    out: dict[StateNode, None] = {}

    def visit(n: StateNode) -> None:
        if n in out:
            return
        out[n] = None
        if n.type == "compound":
            assert n.initial is not None and n.initial.target
            visit(n.initial.target[0])
        elif n.type == "parallel":
            for child in n.children:
                visit(child)

    visit(node)
    return list(out)


def _has_descendant_in(to_enter: dict[StateNode, None], child: StateNode) -> bool:
    return any(child in s.ancestor_set for s in to_enter)


def _add_descendants(
    node: StateNode, history_value: HistoryValue, default_entry: dict[StateNode, None], to_enter: dict[StateNode, None]
) -> None:
    if node.type == "history":
        remembered = history_value.get(node.id)
        if remembered is not None:  # an empty memory is still a memory, as in xstate
            for s in remembered:
                to_enter[s] = None
                _add_descendants(s, history_value, default_entry, to_enter)
            for s in remembered:
                _add_ancestors(to_enter, history_value, default_entry, _proper_ancestors(s, node.parent))
        else:
            targets, is_parent_initial = history_default_targets(node)
            for s in targets:
                to_enter[s] = None
                if is_parent_initial and node.parent is not None:
                    default_entry[node.parent] = None
                _add_descendants(s, history_value, default_entry, to_enter)
            for s in targets:
                _add_ancestors(to_enter, history_value, default_entry, _proper_ancestors(s, node.parent))
        return
    if node.type == "compound":
        assert node.initial is not None and node.initial.target
        initial = node.initial.target[0]
        if initial.type != "history":
            to_enter[initial] = None
            default_entry[initial] = None
        _add_descendants(initial, history_value, default_entry, to_enter)
        _add_ancestors(to_enter, history_value, default_entry, _proper_ancestors(initial, node))
    elif node.type == "parallel":
        for child in node.children:
            if not _has_descendant_in(to_enter, child):
                to_enter[child] = None
                default_entry[child] = None
                _add_descendants(child, history_value, default_entry, to_enter)


def _add_ancestors(
    to_enter: dict[StateNode, None],
    history_value: HistoryValue,
    default_entry: dict[StateNode, None],
    ancestors: list[StateNode],
    reentrancy_domain: StateNode | None = None,
) -> None:
    for anc in ancestors:
        if reentrancy_domain is None or reentrancy_domain in anc.ancestor_set:
            to_enter[anc] = None
        if anc.type == "parallel":
            for child in anc.children:
                if not _has_descendant_in(to_enter, child):
                    to_enter[child] = None
                    _add_descendants(child, history_value, default_entry, to_enter)


def _proper_ancestors(node: StateNode, stop: StateNode | None) -> list[StateNode]:
    """Ancestors of `node`, nearest first, up to but excluding `stop` (all of them when `stop` is None)."""
    out: list[StateNode] = []
    if node is stop:
        return out
    for anc in node.ancestors:
        if anc is stop:
            break
        out.append(anc)
    return out


def compute_entry_set(
    transitions: list[Transition],
    history_value: HistoryValue,
    default_entry: dict[StateNode, None],
    to_enter: dict[StateNode, None],
) -> None:
    """Fill `to_enter` with the states the transitions enter, and `default_entry` with those entered by default
    (whose `initial` actions run). Transitions share one entry set (a region entered by one is not entered by
    default by another), so only a lone transition that cannot touch history has its set cached."""
    if len(transitions) == 1 and transitions[0].static:
        t = transitions[0]
        if t.entry_cache is None:
            own_enter: dict[StateNode, None] = {}
            own_default: dict[StateNode, None] = {}
            _add_entry_set(t, history_value, own_default, own_enter)
            t.entry_cache = (tuple(own_enter), tuple(own_default))
        to_enter.update(dict.fromkeys(t.entry_cache[0]))
        default_entry.update(dict.fromkeys(t.entry_cache[1]))
        return
    for t in transitions:
        _add_entry_set(t, history_value, default_entry, to_enter)


def _add_entry_set(
    t: Transition, history_value: HistoryValue, default_entry: dict[StateNode, None], to_enter: dict[StateNode, None]
) -> None:
    domain = transition_domain(t, history_value)
    for s in t.target or ():
        if s.type != "history" and (t.source is not s or t.source is not domain or t.reenter):
            to_enter[s] = None
            default_entry[s] = None
        _add_descendants(s, history_value, default_entry, to_enter)
    for s in effective_targets(t.target, history_value):
        ancestors = _proper_ancestors(s, domain)
        if domain is not None and domain.type == "parallel":
            ancestors.append(domain)
        reentrancy = None if (t.source.parent is None and t.reenter) else domain
        _add_ancestors(to_enter, history_value, default_entry, ancestors, reentrancy)


def exit_actions_of(node: StateNode) -> tuple[Any, ...]:
    """A state's exit actions, then stopping what it invokes (built once per state)."""
    actions = node.exit_actions
    if actions is None:
        actions = node.exit_actions = (*node.exit, *(stop_child(inv_id) for inv_id in node.invoke_ids))
    return actions


def entry_actions_of(node: StateNode) -> tuple[Any, ...]:
    """A state's entry actions, then spawning what it invokes (built once per state)."""
    actions = node.entry_actions
    if actions is None:
        actions = node.entry_actions = (*node.entry, *(_invoke_spawn(inv) for inv in node.invoke))
    return actions


def _invoke_spawn(inv: Any) -> BuiltinAction:
    """The spawn action of an invoke (built once per invoke)."""
    if inv.spawn is None:
        inv.spawn = SpawnChild(
            inv.src,
            id=inv.id,
            input=inv.input,
            system_id=inv.system_id,
            sync_snapshot=inv.on_snapshot is not None,
            state=inv,
        )
    return inv.spawn
