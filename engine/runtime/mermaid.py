"""A Machine as a Mermaid `stateDiagram-v2`, for a README, a pull request or any page that renders Mermaid: the
graph's export beside SVG, PNG and DOT (`jr2 graph --format mermaid`, the workflow page's "Mermaid" link).

    text = machine_mermaid(machine)

The same reading as the Console's graph (engine/runtime/graph.py): compound and parallel states are composite states
(a parallel state's regions split by `--`), each with its `[*] -->` initial; final states go `--> [*]`; every
transition that leaves its state is an arrow labelled `event [guard]` as the graph labels it, declared in the
innermost composite that holds both ends; targetless ones are a note on their state; the Machine's own
transitions leave a "from any state" state. Names come from the workflow, so labels are written with Mermaid's
entity codes (`#58;` for `:`) and every state has a generated id (`s3`), its key as its label.
"""

from __future__ import annotations

from engine.core.statechart.nodes import StateNode, Transition
from engine.core.workflow import Machine
from engine.runtime.graph import transition_label

__all__ = ["machine_mermaid"]

ANY = "from_any_state"
# Mermaid reads these in a label; each is written as its entity code, in one pass (the codes hold `#` and `;`).
_ENTITIES = {"#": "#35;", '"': "#quot;", ":": "#58;", ";": "#59;", "<": "#lt;", ">": "#gt;", "{": "#123;", "}": "#125;"}


def machine_mermaid(machine: Machine) -> str:
    """The Machine as Mermaid `stateDiagram-v2` source, ending in a newline."""
    return _Mermaid(machine).text()


def _text(text: str) -> str:
    """A label Mermaid shows as written: one line, its special characters as entity codes."""
    return "".join(_ENTITIES.get(char, char) for char in " ".join(str(text).split()))


def _own(node: StateNode) -> list[Transition]:
    return [*(t for ts in node.transitions.values() for t in ts), *node.always]


class _Mermaid:
    """One Machine's Mermaid: the states' nesting first, then each arrow in the composite that holds both ends."""

    def __init__(self, machine: Machine) -> None:
        self.machine = machine
        self.arrows: dict[StateNode, list[str]] = {}  # the composite (or the root) an arrow is declared in

    def ident(self, node: StateNode) -> str:
        return f"s{node.order}"

    def text(self) -> str:
        root = self.machine.statechart.root
        self.collect(root)
        lines = ["stateDiagram-v2", "  direction TB", f"  %% {_text(self.machine.id)}"]
        self.body(root, lines, "  ")
        return "\n".join(lines) + "\n"

    def collect(self, root: StateNode) -> None:
        for node in self.machine.nodes:
            for t in _own(node):
                if t.target is None:
                    continue
                _kind, label = transition_label(self.machine, t)
                for target in t.target:
                    if node is root and root in target.ancestor_set:
                        tail, holder = ANY, root
                    else:
                        tail, holder = self.ident(node), self.common(node, target)
                    head = self.ident(target) if target is not root else "[*]"
                    self.arrows.setdefault(holder, []).append(f"{tail} --> {head} : {_text(label)}")

    def common(self, a: StateNode, b: StateNode) -> StateNode:
        """The innermost compound (not a parallel region's split) state holding both ends, or the root."""
        ancestors = {id(n) for n in (a, *a.ancestor_set)}
        node = b.parent
        while node is not None and (id(node) not in ancestors or node in (a, b)):
            node = node.parent
        while node is not None and node.parent is not None and node.parent.type == "parallel":
            node = node.parent  # a region: declare it in the parallel state
        return node if node is not None else self.machine.statechart.root

    def body(self, node: StateNode, lines: list[str], pad: str) -> None:
        """The states inside `node`, its initial, its finals, then the arrows it holds."""
        root = node.parent is None
        if root and self.arrows.get(node) and any(a.startswith(ANY) for a in self.arrows[node]):
            lines.append(f'{pad}state "from any state" as {ANY}')
        if node.initial is not None and node.initial.target and node.type != "parallel":
            lines.append(f"{pad}[*] --> {self.ident(node.initial.target[0])}")
        children = list(node.states.values())
        for i, child in enumerate(children):
            if node.type == "parallel" and i:
                lines.append(f"{pad}--")
            self.state(child, lines, pad)
        for arrow in self.arrows.get(node, []):
            lines.append(pad + arrow)

    def state(self, node: StateNode, lines: list[str], pad: str) -> None:
        ident = self.ident(node)
        label = ("H*" if node.history == "deep" else "H") if node.type == "history" else node.key
        if node.states:
            lines.append(f'{pad}state "{_text(label)}" as {ident} {{')
            self.body(node, lines, pad + "  ")
            lines.append(f"{pad}}}")
        else:
            lines.append(f'{pad}state "{_text(label)}" as {ident}')
        if node.type == "final":
            lines.append(f"{pad}{ident} --> [*]")
        stays = [transition_label(self.machine, t)[1] for t in _own(node) if t.target is None]
        if stays:
            lines.append(f"{pad}note right of {ident} : {_text('takes ' + ', '.join(stays) + ' without leaving')}")
