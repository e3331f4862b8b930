"""Snapshots to plain JSON and back; state values to state nodes; a machine's definition as data."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from engine.core.statechart.encoding import REF_MARK
from engine.core.statechart.errors import ConfigError, SnapshotError
from engine.core.statechart.events import Event
from engine.core.statechart.refs import ActorRef
from engine.core.statechart.snapshot import Snapshot, Timer, all_state_nodes

if TYPE_CHECKING:
    from engine.core.statechart.machine import StateMachine
    from engine.core.statechart.nodes import StateNode

__all__ = ["snapshot_from_json", "nodes_for_value", "node_definition"]
log = logging.getLogger("engine.core.statechart")


def _decode(value: Any, children: Mapping[str, ActorRef]) -> Any:
    if isinstance(value, dict):
        if value.get(REF_MARK) == 1 and "id" in value:
            return children.get(value["id"], value)
        return {k: _decode(v, children) for k, v in value.items()}
    if isinstance(value, list):
        return [_decode(v, children) for v in value]
    return value


def snapshot_from_json(machine: StateMachine, data: Mapping[str, Any]) -> Snapshot:
    if not isinstance(data, Mapping) or "value" not in data:
        raise SnapshotError(f"a persisted snapshot is a dict with a 'value'; got {data!r:.200}")
    owner = data.get("machine")
    if owner is not None and owner != machine.id:
        raise SnapshotError(f"this snapshot belongs to machine '{owner}', not '{machine.id}'")
    nodes = nodes_for_value(machine, data["value"])
    children: dict[str, ActorRef] = {}
    for child_id, child in (data.get("children") or {}).items():
        src = child.get("src")
        logic = machine.resolve_logic(src, None) if src else machine.logic_for_child(child_id)
        if logic is None:
            raise SnapshotError(f"child '{child_id}' of the snapshot has no logic in machine '{machine.id}'")
        children[child_id] = ActorRef(
            child_id,
            src or logic,
            logic,
            input=child.get("input"),
            system_id=child.get("system_id"),
            sync_snapshot=bool(child.get("sync_snapshot")),
            persisted=child.get("snapshot"),
        )
    history = _revive_history(machine, data.get("history_value"))
    timers: dict[str, Timer] = {}
    for t in data.get("timers") or []:
        target = t.get("target")
        if isinstance(target, dict):
            ref_id = str(target.get("ref"))
            target = children.get(ref_id, ref_id)
        timers[t["id"]] = Timer(t["id"], Event(t["event"]), t["delay"], target, t.get("started_at"))
    return Snapshot(
        machine,
        tuple(nodes),
        _decode(data.get("context"), children),
        status=data.get("status", "active"),
        output=data.get("output"),
        error=data.get("error"),
        children=children,
        history_value=history,
        timers=timers,
        seq=int(data.get("seq") or 0),
    )


def _revive_history(machine: StateMachine, data: Any) -> dict[str, tuple[StateNode, ...]]:
    """History as xstate revives it: entries naming unknown states are dropped (with a warning), not fatal,
    because a history entry only matters if its state is entered again."""
    if not isinstance(data, Mapping):
        return {}
    revived: dict[str, tuple[StateNode, ...]] = {}
    for hid, ids in data.items():
        nodes = []
        for sid in ids if isinstance(ids, (list, tuple)) else ():
            sid = sid.get("id") if isinstance(sid, Mapping) else sid
            node = machine.id_map.get(sid) if isinstance(sid, str) else None
            if node is None:
                log.warning("machine '%s': dropping history entry %r of '%s': no such state", machine.id, sid, hid)
                continue
            nodes.append(node)
        if nodes:
            revived[hid] = tuple(nodes)
    return revived


def nodes_for_value(machine: StateMachine, value: Any) -> list[StateNode]:
    """The full configuration for a (possibly partial) state value: xstate's getAllStateNodes(getStateNodes())."""
    root = machine.root
    try:
        listed = _state_nodes(root, value)
    except ConfigError as err:
        raise SnapshotError(f"state value {value!r} does not fit machine '{machine.id}': {err}") from None
    return all_state_nodes(listed)


def _state_nodes(node: StateNode, value: Any) -> list[StateNode]:
    if isinstance(value, str):
        return [node, node.get_child(value)]
    if not isinstance(value, dict):
        raise ConfigError(f"a state value is a string or a dict; got {value!r}")
    out = [node.machine.root, node]
    kids = [node.get_child(k) for k in value]
    out.extend(kids)
    for key, kid in zip(value, kids):
        out.extend(_state_nodes(kid, value[key]))
    return out


def _describe(action: Any) -> Any:
    if isinstance(action, (str, dict)):
        return action if isinstance(action, str) else {"type": action.get("type"), "params": action.get("params")}
    return {"type": getattr(action, "type", None) or getattr(action, "__name__", "(anonymous)")}


def node_definition(node: StateNode) -> dict[str, Any]:
    """A JSON-friendly description of a state node and its subtree (for graphs and inspection)."""

    def transition(t: Any) -> dict[str, Any]:
        return {
            "event": t.event_type,
            "target": None if t.target is None else [f"#{n.id}" for n in t.target],
            "guard": _describe(t.guard) if t.guard is not None else None,
            "actions": [_describe(a) for a in t.actions],
            "reenter": t.reenter,
            "description": t.description,
        }

    return {
        "id": node.id,
        "key": node.key,
        "type": node.type,
        "initial": f"#{node.initial.target[0].id}" if node.initial and node.initial.target else None,
        "history": node.history,
        "states": {k: node_definition(s) for k, s in node.states.items()},
        "on": {d: [transition(t) for t in ts] for d, ts in node.transitions.items()},
        "always": [transition(t) for t in node.always],
        "entry": [_describe(a) for a in node.entry],
        "exit": [_describe(a) for a in node.exit],
        "invoke": [
            {"id": i.id, "src": i.src if isinstance(i.src, str) else getattr(i.src, "id", "(inline)")}
            for i in node.invoke
        ],
        "tags": list(node.tags),
        "meta": node.meta,
        "description": node.description,
        "order": node.order,
    }
