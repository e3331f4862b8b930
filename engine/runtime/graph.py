"""A Machine drawn by graphviz as inline SVG, for the Console's workflow, run and replay pages.

    svg = machine_svg(machine)                      # cached: the first call runs `dot`, the next ones do not
    small = machine_svg(machine, collapsed=["writing"])   # `writing` drawn as one node (its states inside it not)
    lit = lit_svg(svg, active=["writing", "writing.asking"], visited=["writing.drafting"])
    hot = overlay_svg(svg, heat={"writing": 1.0}, titles={"writing": "3 Turns"})   # composes with lit_svg
    state_paths(machine)                            # ["", "writing", "writing.drafting", ...]

Every state's SVG group is addressable: `<g id="state-<dotted path below the root>">` (`state-writing.asking`); the
root's group is `state-` (its path below the root is empty; `state-<machine id>` could collide with a top-level state
of the same name). Paths are the keys joined by dots, as `Session.active_paths` writes them.

How each element is drawn (the legend; `static/console/graph.css` styles the classes):

- compound state: a rounded cluster, its key on top; a parallel state: a thick cluster marked "parallel", whose
  regions are dashed clusters; the root is the outermost cluster, labelled with the Machine's id;
- atomic state: a rounded box; final state: a double circle; history state: a small circle with "H" (shallow) or
  "H*" (deep), with a thin dotted edge to its default when it names a `target`;
- initial: a small filled dot in each compound state, with an edge to its initial child;
- what a state invokes, as a coloured row inside it: Agent (blue, its slot), Gate (amber, its id), Effect
  (green, its slot and kind), child Machine (purple, its id), fail (red), any other actor (grey, its src);
- transitions: edges labelled `event [guard]`; eventless (`always`) edges dashed violet, `after 5s` edges dotted
  brown, done edges (`onDone`, `xstate.done.*`) green and bold, error edges (`onError`, `xstate.error.*`) dashed red,
  every other event solid dark grey. A guard is shown as its author wrote it (`engine/core/guard_words.py`): a
  named one by its name and params (`[over(n=2)]`), a lambda by its source text, shortened (`[context["replies"] > 0]`);
  each edge's group carries the Machine's event type in `data-event` (the simulator offers that event when the edge
  is clicked);
- the Machine's own transitions (`agent.fault`, `withdraw`: taken in any state) leave from a dashed "from any state"
  box in the root (`<g id="from-any-state">`), not from a point in space;
- targetless transitions (an event taken without leaving the state) are not edges: they are listed in the state's
  label as `↺ event [guard]`, so they cannot be mistaken for a self-transition (which exits and re-enters).

A collapsed state (`collapsed=`: any state with states inside, but the root) is drawn as one box with a "⊞ N states"
row, class `state-collapsed`; the edges to and from the states inside it end at that box, and those that stay inside
are left out (repeated ones drawn once). A state that invokes child Machines lists their invoke ids in its group's
`data-machines` (URL-quoted, space-separated), so a page can open the child's own graph.

Edges to and from compound states end at the cluster's border (`compound=true`, `lhead`/`ltail`, through an
invisible anchor node in each cluster). Everything that comes from a workflow (keys, event and guard names, slot
names, ids) is escaped; the SVG never carries markup or a `javascript:` URL from a name.
"""

from __future__ import annotations

import hashlib
import html
import re
import threading
import urllib.parse
import weakref
from collections.abc import Iterable, Mapping
from typing import Any

import graphviz
from graphviz.quoting import quote

from engine.core.guard_words import guard_text
from engine.core.slots import AgentSlot, EffectSlot, FailSlot, GateSlot
from engine.core.statechart.nodes import InvokeDef, StateNode, Transition
from engine.core.statechart.selection import history_default_targets
from engine.core.workflow import Machine
from engine.runtime.cache import LRU

__all__ = [
    "machine_svg",
    "machine_dot",
    "machine_png",
    "transition_label",
    "lit_svg",
    "guard_text",
    "overlay_svg",
    "heat_level",
    "state_paths",
    "state_dom_id",
    "GraphError",
    "collapsible",
    "clear_cache",
]

CACHE_SIZE = 128  # drawings kept (one per Machine shape and label set; a Console has a handful of Workflows)
LIT_CACHE_SIZE = 32  # SVGs whose state groups are indexed for `lit_svg`
HEAT_LEVELS = 5  # overlay_svg's steps: heat-0 .. heat-4

FONT = "Helvetica,Arial,sans-serif"
EDGE_STYLES: dict[str, dict[str, str]] = {
    "event": {"color": "#374151", "fontcolor": "#374151"},  # the edges' default
    "always": {"color": "#7c3aed", "fontcolor": "#6d28d9", "style": "dashed"},
    "after": {"color": "#b45309", "fontcolor": "#92400e", "style": "dotted", "penwidth": "1.4"},
    "done": {"color": "#15803d", "fontcolor": "#166534", "style": "bold"},
    "error": {"color": "#dc2626", "fontcolor": "#b91c1c", "style": "dashed", "penwidth": "1.6"},
    "initial": {"color": "#111827", "arrowsize": "0.7"},
    "history": {"color": "#6b7280", "style": "dotted", "arrowsize": "0.6"},
}
# What a state invokes: the word on its row, the row's background and text colour.
INVOKE_STYLES: dict[str, tuple[str, str, str]] = {
    "agent": ("Agent", "#dbeafe", "#1e40af"),
    "gate": ("Gate", "#fef3c7", "#92400e"),
    "effect": ("Effect", "#dcfce7", "#166534"),
    "machine": ("Machine", "#f3e8ff", "#6b21a8"),
    "fail": ("fail", "#fee2e2", "#991b1b"),
    "actor": ("invoke", "#f3f4f6", "#374151"),
}

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ufffe\uffff]")
# Every group this module names is written by graphviz as `<g id="jr2_N" class="node|cluster|edge">` then its
# `<title>`; one pass renames it. Names from a workflow cannot match: graphviz escapes their `<` and `"`.
_TOKEN_GROUP = re.compile(r'<g id="jr2_(\d+)" class="(node|cluster|edge)">\n<title>[^<]*</title>')
_JAVASCRIPT = re.compile(r"javascript:", re.IGNORECASE)
_STATE_GROUP = re.compile(r'<g id="state-([^"]*)" class="([^"]*)')

_cache: LRU[tuple[str, str], str] = LRU(CACHE_SIZE)
_lit_cache: LRU[str, tuple[list[str], list[str]]] = LRU(LIT_CACHE_SIZE)
_lock = threading.Lock()  # for _keys
_keys: weakref.WeakKeyDictionary[Machine, dict[frozenset[str], tuple[str, str]]] = weakref.WeakKeyDictionary()


class GraphError(RuntimeError):
    """The drawing could not be made (graphviz's `dot` is missing or failed)."""


# ----------------------------------------------------------------------------------------------------------------
# Public
# ----------------------------------------------------------------------------------------------------------------


def state_paths(machine: Machine) -> list[str]:
    """Every state's dotted path below the root, in document order, the root (`""`) first: the SVG ids are
    `state-<path>`, so pages and tests can find each state's group from this list."""
    return [_path(node) for node in machine.nodes]


def state_dom_id(path: str) -> str:
    """The id of a state's SVG group, from its dotted path below the root (`""` for the root)."""
    return "state-" + path


def collapsible(machine: Machine) -> list[str]:
    """The paths of the states that can be drawn collapsed: every state with states inside it, but the root."""
    return [_path(node) for node in machine.nodes if node.states and node.parent is not None]


def machine_svg(machine: Machine, collapsed: Iterable[str] = ()) -> str:
    """The Machine's graph as SVG markup to inline in HTML (no XML prolog or doctype), with the states in
    `collapsed` (dotted paths; see `collapsible`, others are ignored) drawn as one node each.

    Cached in-process by the Machine's shape digest plus a hash of the DOT source: the digest leaves out guard
    names and labels, which the drawing shows, so a Machine of the same shape with other guards is drawn anew.
    A Machine never changes once built and the Console keeps its Machines for the life of the process
    (`engine.runtime.registry`), so each Machine object also remembers its key: its next calls skip building the DOT."""
    folded = frozenset(collapsed)
    with _lock:
        known = _keys.get(machine, {}).get(folded)
    drawn = _cache.get(known) if known is not None else None
    if drawn is not None:
        return drawn
    drawing = _Drawing(machine, folded).build()
    source = drawing.graph.source
    key = (machine.digest, hashlib.sha256(source.encode("utf-8")).hexdigest())
    with _lock:
        _keys.setdefault(machine, {})[folded] = key
    drawn = _cache.get(key)
    if drawn is not None:
        return drawn
    return _cache.keep(key, _render(source, drawing.groups, machine))  # a concurrent drawing of it: keep one string


def machine_dot(machine: Machine, collapsed: Iterable[str] = ()) -> str:
    """The graph's DOT source, as `dot` is given it (`jr2 graph --format dot`): to draw it with other tools."""
    return _Drawing(machine, frozenset(collapsed)).build().graph.source


def machine_png(machine: Machine, collapsed: Iterable[str] = ()) -> bytes:
    """The graph as a PNG (not cached: an export, not a page)."""
    return _pipe(machine_dot(machine, collapsed), "png", machine)


def transition_label(machine: Machine, t: Transition) -> tuple[str, str]:
    """(kind, label) of a transition as the graph draws it: `event [guard]`, `always`, `after 5s`, `onDone tests`;
    kind is one of EDGE_STYLES' keys. Mermaid export labels its arrows with these."""
    return _Drawing(machine).edge_text(t)


def lit_svg(svg: str, active: Iterable[str], visited: Iterable[str]) -> str:
    """`svg` (from `machine_svg`) with ` active` / ` visited` added to the class of the groups of those states
    (dotted paths below the root). Paths the drawing does not have are ignored (a run of an older shape).

    A run page calls this on every render, so the SVG is not parsed: its state groups are indexed once per SVG
    string, and each call only joins the pieces with the classes in between."""
    lit, seen = set(active), set(visited)
    if not (lit or seen):
        return svg
    pieces, paths = _lit_template(svg)
    out = [pieces[0]]
    for path, piece in zip(paths, pieces[1:]):
        if path in lit:
            out.append(" active")
        if path in seen:
            out.append(" visited")
        out.append(piece)
    return "".join(out)


def heat_level(heat: float) -> int:
    """The step (0..4) of a heat (0..1): fifths, the top one closed (0.8 up to 1 is `heat-4`, below 0.2 `heat-0`)."""
    return min(HEAT_LEVELS - 1, max(0, int(heat * HEAT_LEVELS)))


def overlay_svg(svg: str, heat: Mapping[str, float], titles: Mapping[str, str] | None = None) -> str:
    """`svg` with ` heat-<step>` (see `heat_level`) added to the class of the groups of the states in `heat`
    (dotted paths below the root, to a share 0..1 of the costliest state's measure), and `titles[path]` added as
    new lines to that group's `<title>` (its tooltip: the path, then the numbers); the text is escaped here.
    Paths the drawing does not have are ignored.

    The same string edit as `lit_svg`, so the two compose either way round: lit_svg(overlay_svg(svg, ...), ...)
    or overlay_svg(lit_svg(svg, ...), ...). A drawing `lit_svg` has indexed is not indexed again; any other (an
    already lit one) is cut once without being kept, so the index stays filled with the drawings pages reuse."""
    titles = titles or {}
    if not (heat or titles):
        return svg
    pieces, paths = _lit_template(svg, remember=False)
    out = [pieces[0]]
    for path, piece in zip(paths, pieces[1:]):
        if path in heat:
            out.append(f" heat-{heat_level(heat[path])}")
        text = titles.get(path)
        if text and piece.startswith('">\n<title>'):
            end = piece.find("</title>")
            if end >= 0:
                piece = f"{piece[:end]}\n{_xml(text)}{piece[end:]}"
        out.append(piece)
    return "".join(out)


def clear_cache() -> None:
    """Forget every drawing (tests and benchmarks time the first draw)."""
    _cache.clear()
    _lit_cache.clear()
    with _lock:
        _keys.clear()


# ----------------------------------------------------------------------------------------------------------------
# The DOT
# ----------------------------------------------------------------------------------------------------------------


def _path(node: StateNode) -> str:
    return ".".join(node.path)


def _attrs(**attrs: str) -> str:
    """A DOT attribute list's inside, quoted as the `graphviz` package quotes it (for the constant ones)."""
    return " ".join(f"{key}={quote(value)}" for key, value in attrs.items())


# Constant attributes, quoted once: building the DOT of a 300-state Machine is on the cached path too.
_ANCHOR = _attrs(label="", shape="point", style="invis", width="0.01", height="0.01")
_INITIAL = _attrs(label="", shape="point", width="0.09", style="filled", fillcolor="#111827", color="#111827")
_HISTORY = _attrs(shape="circle", width="0.3", height="0.3", fixedsize="true", fontsize="10")
_FINAL = _attrs(shape="doublecircle", margin="0.02")
_REGION_NODE = _attrs(style="rounded,filled,dashed")
_EDGE_KIND = {kind: "" if kind == "event" else " " + _attrs(**style) for kind, style in EDGE_STYLES.items()}
_CLUSTER = {"compound": "", "parallel": " " + _attrs(penwidth="2"), "region": " " + _attrs(style="rounded,dashed")}
_PARALLEL_ROW = '<tr><td align="left" cellpadding="0"><font point-size="8" color="#6b7280">parallel</font></td></tr>'
_FOLDED_ROW = (
    '<tr><td align="left" cellpadding="1"><font point-size="8" color="#4b5563">⊞ {n} state{s} inside</font></td></tr>'
)
# The Machine's own transitions (`agent.fault`, `withdraw`) leave from this box in the root, not from a point.
_ANY = "any"
_ANY_STATE = _attrs(
    label="from any state",
    shape="box",
    style="rounded,dashed,filled",
    fillcolor="#f9fafb",
    fontsize="9",
    fontcolor="#4b5563",
    color="#9ca3af",
)
_COLLAPSED = _attrs(style="rounded,filled,bold", fillcolor="#f9fafb", peripheries="2")


class _Drawing:
    """One Machine's DOT (a `graphviz.Digraph`, built in document order) and what the SVG pass needs to name
    each group: graphviz is given short tokens as ids, never a name from the workflow."""

    def __init__(self, machine: Machine, collapsed: frozenset[str] = frozenset()) -> None:
        self.machine = machine
        self.collapsed = collapsed
        self.inside: dict[StateNode, StateNode] = {}  # a state inside a collapsed one -> the collapsed one drawn
        self.graph = graphviz.Digraph("jr2graph")
        self.graph.attr(
            compound="true",
            rankdir="TB",
            fontname=FONT,
            fontsize="11",
            nodesep="0.3",
            ranksep="0.4",
            bgcolor="transparent",
            newrank="true",
            # inherited by every cluster
            color="#6b7280",
            penwidth="1.2",
            labeljust="l",
            style="rounded",
        )
        self.graph.attr(
            "node",
            fontname=FONT,
            fontsize="11",
            shape="box",
            style="rounded,filled",
            fillcolor="white",
            color="#4b5563",
            penwidth="1.2",
            margin="0.08,0.04",
            height="0.3",
        )
        self.graph.attr("edge", fontname=FONT, fontsize="9", arrowsize="0.7", **EDGE_STYLES["event"])
        # token -> (DOM id, classes, title, data-machines, data-event)
        self.groups: dict[str, tuple[str, str, str, str, str]] = {}
        self.name: dict[StateNode, str] = {}  # the DOT node an edge to or from the state uses
        self.clustered: set[StateNode] = set()
        self.initials: list[tuple[str, StateNode, StateNode]] = []
        self.edge_count = 0
        self.drawn: set[tuple[str, StateNode, StateNode, str]] = set()

    def token(self, dom_id: str, classes: str, title: str, machines: str = "", event: str = "") -> str:
        token = str(len(self.groups))
        self.groups[token] = (dom_id, classes, title, machines, event)
        return "jr2_" + token

    def shown(self, node: StateNode) -> StateNode:
        """The state drawn for `node`: itself, or the collapsed state it is inside."""
        return self.inside.get(node, node)

    def title(self, node: StateNode) -> str:
        return _path(node) or self.machine.id

    # -- states ---------------------------------------------------------------------------------------------

    def state(self, parent: graphviz.Digraph, node: StateNode, region: bool) -> None:
        path = _path(node)
        classes = ["state", *(["state-root"] if node.parent is None else []), f"state-{node.type}"]
        if region:
            classes.append("region")
        classes.extend(dict.fromkeys(f"invokes-{self.invoke_of(inv)[0]}" for inv in node.invoke))
        folded = bool(node.states) and node.parent is not None and path in self.collapsed
        if folded:
            classes.append("state-collapsed")
        machines = " ".join(
            urllib.parse.quote(invoke_id, safe="") for invoke_id, _ in self.machine.child_machines(node)
        )
        ident = self.token(state_dom_id(path), " ".join(classes), self.title(node), machines)
        if node.states and not folded:
            self.cluster(parent, node, ident, region)
            return
        inside = 0
        if folded:
            for inner in self.machine.nodes:
                if node in inner.ancestor_set:
                    self.inside[inner] = node
                    inside += 1
        name = self.name[node] = f"s{node.order}"
        if node.type == "history":
            label = "H*" if node.history == "deep" else "H"
            parent.body.append(f"\t{name} [id={ident} label={quote(label)} {_HISTORY}]\n")
            return
        extra = (" " + _FINAL if node.type == "final" else "") + (" " + _REGION_NODE if region else "")
        extra += (" " + _COLLAPSED) if folded else ""
        parent.body.append(f"\t{name} [id={ident} label={self.label(node, inside)}{extra}]\n")

    def cluster(self, parent: graphviz.Digraph, node: StateNode, ident: str, region: bool) -> None:
        """A compound or parallel state: a cluster with an invisible anchor for the edges that end at its border
        and, in a compound state, the initial marker."""
        self.clustered.add(node)
        anchor = self.name[node] = f"a{node.order}"
        with parent.subgraph(name=f"cluster_s{node.order}") as cluster:
            style = _CLUSTER["region" if region else "parallel" if node.type == "parallel" else "compound"]
            cluster.body.append(f"\tid={ident} label={self.label(node)} margin=10{style}\n")
            cluster.body.append(f"\t{anchor} [{_ANCHOR}]\n")
            if node.parent is None and any(t.target for t in _own_transitions(node)):
                ident = self.token("from-any-state", "from-any-state", f"events {self.machine.id} takes in any state")
                cluster.body.append(f"\t{_ANY} [id={ident} {_ANY_STATE}]\n")
            if node.type == "compound" and node.initial is not None and node.initial.target:
                dot = f"i{node.order}"
                path = _path(node)
                ident = self.token("initial-" + path, "initial", f"initial of {self.title(node)}")
                cluster.body.append(f"\t{dot} [id={ident} {_INITIAL}]\n")
                self.initials.append((dot, node, node.initial.target[0]))
            for child in node.states.values():
                self.state(cluster, child, node.type == "parallel")

    def invoke_of(self, inv: InvokeDef) -> tuple[str, str]:
        """(kind, the name shown): an Agent by its slot, a Gate by its invoke id, an Effect by its slot, a child
        Machine by its id."""
        src = inv.src if isinstance(inv.src, str) else None
        slot = self.machine.slots.get(src) if src is not None else None
        if isinstance(slot, AgentSlot):
            return "agent", str(src)
        if isinstance(slot, GateSlot):
            return "gate", inv.id
        if isinstance(slot, EffectSlot):
            return "effect", str(src)
        if isinstance(slot, Machine):
            return "machine", slot.id
        if isinstance(slot, FailSlot):
            return "fail", ""
        return "actor", src or str(getattr(inv.src, "id", None) or "(inline)")

    def label(self, node: StateNode, folded: int = 0) -> str:
        """An HTML-like label (escaped as XML): the key, a coloured row per invoke, the targetless transitions; a
        collapsed state says how many states it holds."""
        key = self.machine.id if node.parent is None else node.key
        rows = [f'<tr><td align="left" cellpadding="1">{_html(key)}</td></tr>']
        if node.type == "parallel":
            rows.append(_PARALLEL_ROW)
        if folded:
            rows.append(_FOLDED_ROW.format(n=folded, s="" if folded == 1 else "s"))
        for inv in node.invoke:
            kind, shown = self.invoke_of(inv)
            word, background, colour = INVOKE_STYLES[kind]
            text = f"{word} {shown}".strip()
            slot = self.machine.slots.get(inv.src) if isinstance(inv.src, str) else None
            if isinstance(slot, EffectSlot):
                text += f" ({slot.effect})"
            rows.append(
                f'<tr><td align="left" bgcolor="{background}" cellpadding="2"><font color="{colour}" '
                f'point-size="9">{_html(text)}</font></td></tr>'
            )
        for t in _own_transitions(node):
            if t.target is None:
                rows.append(
                    '<tr><td align="left" cellpadding="0"><font point-size="8" color="#4b5563">'
                    f"↺ {_html(self.edge_text(t)[1])}</font></td></tr>"
                )
        return '<<table border="0" cellborder="0" cellspacing="0">' + "".join(rows) + "</table>>"

    # -- transitions ----------------------------------------------------------------------------------------

    def edge_text(self, t: Transition) -> tuple[str, str]:
        """(kind, label) of a transition: `event [guard]`, `always`, `after 5s`, `onDone`, `onError tests`."""
        event = t.event_type
        source = t.source
        if event is None:
            kind, text = "always", "always"
        elif t.delay is not None or event.startswith("xstate.after."):
            kind, text = "after", "after " + _delay_text(t.delay if t.delay is not None else event)
        elif event == f"xstate.done.state.{source.id}":
            kind, text = "done", "onDone"
        elif event.startswith("xstate.done."):
            kind, text = "done", self.actor_event(source, event, "xstate.done.actor.", "onDone")
        elif event.startswith("xstate.error."):
            kind, text = "error", self.actor_event(source, event, "xstate.error.actor.", "onError")
        elif event.startswith("xstate.snapshot."):
            kind, text = "event", self.actor_event(source, event, "xstate.snapshot.", "onSnapshot")
        else:
            kind, text = "event", event
        guard = guard_text(t.guard)
        return kind, text if guard is None else f"{text} [{guard}]"

    def actor_event(self, source: StateNode, event: str, prefix: str, word: str) -> str:
        """`onDone tests` for the done event of the state's own invoke; any other descriptor as written."""
        for inv in source.invoke:
            if event == prefix + inv.id:
                kind, shown = self.invoke_of(inv)
                return f"{word} {shown or kind}"
        return event

    def edge(self, source: StateNode, target: StateNode, kind: str, text: str, event: str = "") -> None:
        """One edge; it ends at a cluster's border unless it runs inside that cluster (to a descendant, or from a
        descendant to an ancestor), where graphviz could not clip it. An edge from or to a state inside a collapsed
        one starts or ends at the collapsed one; one that stays inside it is not drawn, and a repeat is drawn once."""
        if source in self.inside or target in self.inside:
            source, target = self.shown(source), self.shown(target)
            if source is target or (kind, source, target, text) in self.drawn:
                return
        self.drawn.add((kind, source, target, text))
        attrs = _EDGE_KIND[kind]
        # the root's own transitions leave from the "from any state" box: no cluster border to clip at
        from_any = source.parent is None and source in target.ancestor_set
        tail = _ANY if from_any else self.name[source]
        if not from_any and source in self.clustered and target is not source and source not in target.ancestor_set:
            attrs += f" ltail=cluster_s{source.order}"
        if target in self.clustered and target is not source and target not in source.ancestor_set:
            attrs += f" lhead=cluster_s{target.order}"
        self.edge_count += 1
        where = "any state" if from_any else self.title(source)
        ident = self.token(f"edge-{self.edge_count}", f"edge-{kind}", f"{where} → {self.title(target)}", event=event)
        label = f" label={quote(_plain(text))}" if text else ""
        self.graph.body.append(f"\t{tail} -> {self.name[target]} [id={ident}{label}{attrs}]\n")

    def build(self) -> _Drawing:
        self.state(self.graph, self.machine.statechart.root, False)
        for dot, node, target in self.initials:
            target = self.shown(target)
            lhead = f" lhead=cluster_s{target.order}" if target in self.clustered else ""
            ident = self.token(f"initial-edge-{_path(node)}", "edge-initial", f"initial of {self.title(node)}")
            self.graph.body.append(f"\t{dot} -> {self.name[target]} [id={ident}{_EDGE_KIND['initial']}{lhead}]\n")
        for node in self.machine.nodes:
            for t in _own_transitions(node):
                if t.target is not None:
                    kind, text = self.edge_text(t)
                    for target in t.target:
                        self.edge(node, target, kind, text, t.event_type or "")
            if node.type == "history" and node.config.get("target"):
                for target in history_default_targets(node)[0]:
                    self.edge(node, target, "history", "")
        return self


def _own_transitions(node: StateNode) -> list[Transition]:
    return [*(t for ts in node.transitions.values() for t in ts), *node.always]


# ----------------------------------------------------------------------------------------------------------------
# Labels and escaping
# ----------------------------------------------------------------------------------------------------------------


def _clean(text: str) -> str:
    """No control characters: XML cannot carry them (and graphviz would pass them through)."""
    return _CONTROL.sub("\ufffd", str(text))


def _xml(text: str) -> str:
    """Text for the SVG: escaped as XML."""
    return html.escape(_clean(text), quote=True)


def _html(text: str) -> str:
    """Text for an HTML-like label: escaped as XML, since graphviz parses the label as XML, and with backslashes
    doubled, since graphviz still expands `\\N` (the node's name) and `\\G` in it."""
    return _xml(text).replace("\\", "\\\\")


def _plain(text: str) -> str:
    """Text for a plain label: graphviz reads `\\` escapes (`\\N`, `\\l`) and HTML entities in it, and the
    `graphviz` package takes `<...>` for an HTML-like label; `graphviz.escape` and `&` as `&amp;` undo all
    three, so the label shows exactly `text`. (The result is the package's `NoHtml` string, which `quote` keeps
    from being read as an HTML-like label: keep it that type.)"""
    escaped: str = graphviz.escape(_clean(text).replace("&", "&amp;"))
    return escaped


def _delay_text(delay: Any) -> str:
    """`5s`, `1.5s`, `250ms`, `2min`; a named delay by its name."""
    if isinstance(delay, str) and delay.startswith("xstate.after."):
        delay = delay.removeprefix("xstate.after.").split(".", 1)[0]
        try:
            delay = float(delay)
        except ValueError:
            return str(delay)
    if isinstance(delay, bool) or not isinstance(delay, (int, float)):
        return str(delay)
    ms = float(delay)
    if ms >= 60_000 and ms % 60_000 == 0:
        return f"{int(ms // 60_000)}min"
    if ms >= 1000:
        return f"{ms / 1000:g}s"
    return f"{ms:g}ms"


# ----------------------------------------------------------------------------------------------------------------
# SVG
# ----------------------------------------------------------------------------------------------------------------


def _render(source: str, groups: dict[str, tuple[str, str, str, str, str]], machine: Machine) -> str:
    """Run `dot`, keep the `<svg>` element, and give each state, initial marker and edge its id, class and title."""
    raw = _pipe(source, "svg", machine).decode("utf-8")
    start = raw.find("<svg")
    if start < 0:
        raise GraphError(f'graphviz drew no SVG for machine "{machine.id}"')
    svg = raw[start:].replace("<svg ", '<svg class="jr2-graph" ', 1)
    svg = svg.replace("<title>jr2graph</title>", f"<title>{_xml(machine.id)}</title>", 1)

    def name(match: re.Match[str]) -> str:
        dom_id, classes, title, machines, event = groups[match.group(1)]
        more = f' data-machines="{_xml(machines)}"' if machines else ""
        more += f' data-event="{_xml(event)}"' if event else ""
        return f'<g id="{_xml(dom_id)}" class="{match.group(2)} {classes}"{more}>\n<title>{_xml(title)}</title>'

    svg = _TOKEN_GROUP.sub(name, svg)
    return _JAVASCRIPT.sub("javascript&#58;", svg)


def _pipe(source: str, fmt: str, machine: Machine) -> bytes:
    """`dot` run on the source, its output in `fmt` (svg, png)."""
    try:
        out: bytes = graphviz.Source(source).pipe(format=fmt, quiet=True)
    except graphviz.ExecutableNotFound as err:
        raise GraphError("graphviz's `dot` is not installed (Debian: apt-get install graphviz)") from err
    except graphviz.CalledProcessError as err:
        raise GraphError(f'graphviz could not draw machine "{machine.id}": {err}') from err
    return out


def _lit_template(svg: str, remember: bool = True) -> tuple[list[str], list[str]]:
    """The SVG cut just before the closing quote of each state group's class, with each group's path (kept for
    the next call on the same SVG unless `remember` is false)."""
    found = _lit_cache.get(svg)
    if found is not None:
        return found
    pieces, paths, last = [], [], 0
    for match in _STATE_GROUP.finditer(svg):
        pieces.append(svg[last : match.end()])
        paths.append(html.unescape(match.group(1)))
        last = match.end()
    pieces.append(svg[last:])
    found = (pieces, paths)
    return _lit_cache.put(svg, found) if remember else found
