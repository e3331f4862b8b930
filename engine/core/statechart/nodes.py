"""The state node tree, built once from a config: ids, document order, formatted transitions, cached candidates.

Nothing here runs at transition time except lookups; `transition()` never reads the raw config dicts.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from engine.core.statechart.actions.cancel import cancel
from engine.core.statechart.actions.raise_ import raise_
from engine.core.statechart.errors import ConfigError
from engine.core.statechart.events import after_event, matches_descriptor

if TYPE_CHECKING:
    from engine.core.statechart.machine import StateMachine

__all__ = ["StateNode", "Transition", "InvokeDef", "to_state_path"]

_NODE_KEYS = {
    "id",
    "key",
    "initial",
    "states",
    "type",
    "history",
    "target",
    "context",
    "on",
    "always",
    "after",
    "entry",
    "exit",
    "invoke",
    "onDone",
    "output",
    "description",
    "meta",
    "tags",
    "input",
    "version",
    "schemas",
    "types",
    "options",
}


def to_list(value: Any) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return list(value)
    return [value]


def to_state_path(path: str | list[str] | tuple[str, ...]) -> list[str]:
    """Split `"a.b"` into `["a", "b"]`, honouring `\\.` escapes as xstate does."""
    if isinstance(path, (list, tuple)):
        return list(path)
    result: list[str] = []
    segment = ""
    i = 0
    while i < len(path):
        ch = path[i]
        if ch == "\\" and i + 1 < len(path):
            segment += path[i + 1]
            i += 2
            continue
        if ch == ".":
            result.append(segment)
            segment = ""
        else:
            segment += ch
        i += 1
    result.append(segment)
    return result


def _transition_configs(config: Any) -> list[dict[str, Any]]:
    """xstate's `toTransitionConfigArray`: a target string, a dict, or a list of either."""
    out = []
    for item in to_list(config) if config is not None else [None]:
        if item is None or isinstance(item, str):
            out.append({"target": item})
        elif isinstance(item, dict):
            out.append(item)
        else:
            raise ConfigError(f"a transition is a target string or a dict; got {item!r}")
    return out


def _format_delay_key(delay: Any) -> Any:
    if isinstance(delay, (int, float)) and not isinstance(delay, bool):
        return int(delay) if float(delay).is_integer() else delay
    try:
        number = float(delay)
    except (TypeError, ValueError):
        return delay
    return int(number) if number.is_integer() else number


class Transition:
    """One formatted transition: its source node, resolved targets (None for targetless), guard and actions."""

    __slots__ = (
        "source",
        "event_type",
        "target",
        "guard",
        "actions",
        "reenter",
        "delay",
        "description",
        "config",
        "_target_config",
        "static",
        "domain_cache",
        "entry_cache",
    )

    def __init__(self, source: StateNode, event_type: str | None, config: dict[str, Any]) -> None:
        if "cond" in config:
            raise ConfigError(f"state '#{source.id}' uses `cond` on a transition; it is called `guard` now")
        self.source = source
        self.event_type = event_type
        self.config = config
        self._target_config = config.get("target")
        self.target: tuple[StateNode, ...] | None = None
        self.guard = config.get("guard")
        self.actions = tuple(to_list(config.get("actions")))
        self.reenter = bool(config.get("reenter", False))
        self.delay = config.get("delay")
        self.description = config.get("description")
        self.static = False
        self.domain_cache: Any = None
        self.entry_cache: Any = None

    def _resolve(self) -> None:
        target = self._target_config
        if target is None or target == "":
            self.target = None
            return
        self.target = tuple(self.source.resolve_target(t, self.event_type) for t in to_list(target))

    def __repr__(self) -> str:
        targets = None if self.target is None else [f"#{t.id}" for t in self.target]
        return f"Transition(#{self.source.id} --{self.event_type}--> {targets})"


class InitialTransition(Transition):
    __slots__ = ()


class InvokeDef:
    """An `invoke` entry, with xstate's default id `"<index>.<state id>"`."""

    __slots__ = ("id", "src", "input", "system_id", "on_done", "on_error", "on_snapshot", "config", "spawn")

    def __init__(self, node: StateNode, index: int, config: Any) -> None:
        if not isinstance(config, dict):
            config = {"src": config}
        if "src" not in config:
            raise ConfigError(f"state '#{node.id}' has an invoke without `src`")
        self.config = config
        self.id: str = config.get("id") or f"{index}.{node.id}"
        self.src = config["src"]
        self.input = config.get("input")
        self.system_id = config.get("system_id", config.get("systemId"))
        self.on_done = config.get("onDone")
        self.on_error = config.get("onError")
        self.on_snapshot = config.get("onSnapshot")
        self.spawn: Any = None


class StateNode:
    """One state of a machine. Built recursively; `order` is the document (pre-)order used everywhere."""

    def __init__(self, config: dict[str, Any], machine: StateMachine, key: str, parent: StateNode | None) -> None:
        if not isinstance(config, dict):
            where = f"'{parent.id}.{key}'" if parent else "the root"
            raise ConfigError(f"the config of state {where} must be a dict; got {type(config).__name__}")
        self.config = config
        self.machine = machine
        self.key = key
        self.parent = parent
        self.path: tuple[str, ...] = (*parent.path, key) if parent else ()
        self.id: str = config.get("id") or ".".join([machine.id, *self.path])
        states_config = config.get("states") or {}
        if config.get("type"):
            self.type: str = config["type"]
        elif states_config:
            self.type = "compound"
        elif config.get("history"):
            self.type = "history"
        else:
            self.type = "atomic"
        if self.type not in ("atomic", "compound", "parallel", "final", "history"):
            raise ConfigError(f"state '#{self.id}' has unknown type {self.type!r}")
        if self.id in machine.id_map:
            raise ConfigError(
                f"two states have the id '#{self.id}'; state ids must be unique in machine '{machine.id}'"
            )
        self.order = len(machine.id_map)
        machine.id_map[self.id] = self
        self.ancestors: tuple[StateNode, ...] = (parent, *parent.ancestors) if parent else ()
        self.ancestor_set = frozenset(self.ancestors)
        self.depth = len(self.ancestors)
        self.states: dict[str, StateNode] = {k: StateNode(v, machine, k, self) for k, v in states_config.items()}
        self.children: tuple[StateNode, ...] = tuple(s for s in self.states.values() if s.type != "history")
        self.history_nodes: tuple[StateNode, ...] = tuple(s for s in self.states.values() if s.type == "history")
        if self.type == "compound" and not config.get("initial"):
            raise ConfigError(
                f"compound state '#{self.id}' has no initial state; add \"initial\": "
                f"{next(iter(self.states))!r} (one of {sorted(self.states)})"
            )
        history = config.get("history")
        self.history: str | bool = "shallow" if history is True else (history or False)
        if self.type == "history" and not history:
            self.history = "shallow"
        if self.type == "history" and self.history not in ("shallow", "deep"):
            raise ConfigError(f"history state '#{self.id}' needs history: 'shallow' or 'deep'; got {history!r}")
        self.entry: list[Any] = to_list(config.get("entry"))
        self.exit: list[Any] = to_list(config.get("exit"))
        self.meta = config.get("meta")
        self.description = config.get("description")
        self.tags: tuple[str, ...] = tuple(to_list(config.get("tags")))
        self.output = config.get("output") if (self.type == "final" or parent is None) else None
        self.has_output = "output" in config and (self.type == "final" or parent is None)
        self.invoke: tuple[InvokeDef, ...] = tuple(
            InvokeDef(self, i, inv) for i, inv in enumerate(to_list(config.get("invoke")))
        )
        self.invoke_ids: tuple[str, ...] = tuple(i.id for i in self.invoke)
        self.transitions: dict[str, list[Transition]] = {}
        self.always: tuple[Transition, ...] = ()
        self.after: tuple[Transition, ...] = ()
        self.initial: InitialTransition | None = None
        self._candidates: dict[str, tuple[Transition, ...]] = {}
        self.entry_actions: tuple[Any, ...] | None = None  # entry, then the invokes' spawns (built on first entry)
        self.exit_actions: tuple[Any, ...] | None = None  # exit, then stopping the invokes (built on first exit)
        unknown = set(config) - _NODE_KEYS
        if unknown & {"onEntry", "onExit", "activities", "parallel", "strict"}:
            raise ConfigError(f"state '#{self.id}' uses retired keys {sorted(unknown)}")

    # -- built once every id exists -------------------------------------------------------------------------

    def initialize(self) -> None:

        config = self.config
        transitions: dict[str, list[Transition]] = {}
        for descriptor, tconfig in (config.get("on") or {}).items():
            if descriptor == "":
                raise ConfigError(f"state '#{self.id}' has an empty event key; use `always` for eventless transitions")
            transitions[descriptor] = [Transition(self, descriptor, c) for c in _transition_configs(tconfig)]
        if config.get("onDone") is not None:
            descriptor = f"xstate.done.state.{self.id}"
            transitions[descriptor] = [Transition(self, descriptor, c) for c in _transition_configs(config["onDone"])]
        for inv in self.invoke:
            for attr, prefix in (
                ("on_done", "xstate.done.actor."),
                ("on_error", "xstate.error.actor."),
                ("on_snapshot", "xstate.snapshot."),
            ):
                handler = getattr(inv, attr)
                if handler is not None:
                    descriptor = prefix + inv.id
                    transitions[descriptor] = [Transition(self, descriptor, c) for c in _transition_configs(handler)]
        after: list[Transition] = []
        for delay_key, tconfig in (config.get("after") or {}).items():
            delay = _format_delay_key(delay_key)
            event_type = after_event(delay, self.id)["type"]
            self.entry.append(raise_({"type": event_type}, id=event_type, delay=delay))
            self.exit.append(cancel(event_type))
            for c in _transition_configs(tconfig):
                t = Transition(self, event_type, c)
                t.delay = delay
                after.append(t)
                transitions.setdefault(event_type, []).append(t)
        self.after = tuple(after)
        self.transitions = transitions
        if config.get("always") is not None:
            self.always = tuple(Transition(self, None, c) for c in _transition_configs(config["always"]))
        for ts in transitions.values():
            for t in ts:
                t._resolve()
        for t in self.always:
            t._resolve()
        self._format_initial()
        for child in self.states.values():
            child.initialize()

    def _format_initial(self) -> None:
        initial = self.config.get("initial")
        if self.type not in ("compound",) and not initial:
            self.initial = None
            return
        if isinstance(initial, dict):
            key, actions = initial.get("target"), to_list(initial.get("actions"))
        else:
            key, actions = initial, []
        child = self.states.get(key) if isinstance(key, str) else None
        if child is None:
            raise ConfigError(
                f"initial state {key!r} of state '#{self.id}' is not one of its children {sorted(self.states)}"
            )
        t = InitialTransition(self, None, {"actions": actions})
        t.target = (child,)
        self.initial = t

    # -- lookups ---------------------------------------------------------------------------------------------

    def resolve_target(self, target: Any, event_type: str | None) -> StateNode:
        if isinstance(target, StateNode):
            return target
        if not isinstance(target, str):
            raise ConfigError(f"state '#{self.id}': a target is a string; got {target!r}")
        on = f"on event '{event_type}'" if event_type else "in an eventless transition"
        try:
            if target.startswith("#"):
                return self.machine.get_state_node_by_id(target)
            internal = target.startswith(".")
            if internal and self.parent is None:
                return self.get_by_path(target[1:])
            if self.parent is None:
                raise ConfigError(f"'{target}' is not a state of the root; did you mean '.{target}'?")
            return self.parent.get_by_path(self.key + target if internal else target)
        except ConfigError as err:
            raise ConfigError(f"unknown target '{target}' in state '#{self.id}' {on}: {err}") from None

    def get_child(self, key: str) -> StateNode:
        if key.startswith("#"):
            return self.machine.get_state_node_by_id(key)
        child = self.states.get(key)
        if child is None:
            if not self.states:
                raise ConfigError(f"state '#{self.id}' has no child states (looked for '{key}')")
            raise ConfigError(f"state '#{self.id}' has no child '{key}' (its children: {sorted(self.states)})")
        return child

    def get_by_path(self, path: str | list[str]) -> StateNode:
        if isinstance(path, str) and path.startswith("#"):
            try:
                return self.machine.get_state_node_by_id(path)
            except ConfigError:
                pass
        node = self
        for key in to_state_path(path):
            if not key:
                break
            node = node.get_child(key)
        return node

    def candidates(self, event_type: str) -> tuple[Transition, ...]:
        """Transitions that may take `event_type`: exact ones first, then partial descriptors, longest first."""
        try:
            return self._candidates[event_type]
        except KeyError:
            pass
        exact = self.transitions.get(event_type, [])
        partial = sorted(
            (d for d in self.transitions if d != event_type and matches_descriptor(event_type, d)),
            key=len,
            reverse=True,
        )
        result = tuple(exact) + tuple(t for d in partial for t in self.transitions[d])
        self._candidates[event_type] = result
        return result

    @property
    def is_atomic(self) -> bool:
        return self.type in ("atomic", "final")

    def all_transitions(self) -> Iterable[Transition]:
        for ts in self.transitions.values():
            yield from ts
        yield from self.always

    @property
    def events(self) -> list[str]:
        """Every event descriptor this state or its descendants handle (xstate's `stateNode.events`)."""
        seen = dict.fromkeys(self.own_events)
        for child in self.states.values():
            if child.states:
                seen.update(dict.fromkeys(child.events))
        return list(seen)

    @property
    def own_events(self) -> list[str]:
        return [
            d for d, ts in self.transitions.items() if any(t.target is not None or t.actions or t.reenter for t in ts)
        ]

    def __repr__(self) -> str:
        return f"StateNode(#{self.id})"
