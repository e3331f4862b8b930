"""The Console's drawing of a Machine (engine/runtime/graph.py): a `<g id="state-<path>">` per state, clusters, markers,
edge labels and kinds, invokes by kind, escaping, `lit_svg` and the cache. The SVG is parsed as XML here, as a
browser would read it; no database is needed."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Callable
from typing import Any

import pytest

from engine import Machine, agent, effect, fail, jr2_setup, not_, sent_by
from engine.runtime import graph
from engine.runtime.graph import GraphError, lit_svg, machine_svg, state_dom_id, state_paths
from tests.console.conftest import ev
from workflows import code_review, notes, triage

SVG = "{http://www.w3.org/2000/svg}"
EXAMPLES = {"notes": notes.machine, "code_review": code_review.machine, "triage": triage.machine}


@pytest.fixture(autouse=True)
def empty_cache() -> None:
    graph.clear_cache()


# ----------------------------------------------------------------------------------------------------------------
# Machines
# ----------------------------------------------------------------------------------------------------------------


def is_ready(context: Any) -> bool:
    return True


def research_machine() -> Machine:
    return jr2_setup(
        events=[ev("found")],
        actors={
            "scout": agent(model="script/scout", instructions="Research one topic."),
        },
    ).create_machine(
        {
            "id": "research",
            "initial": "looking",
            "states": {"looking": {"invoke": {"src": "scout"}, "on": {"found": "done"}}, "done": {"type": "final"}},
        }
    )


def kitchen(guard: str = "is_ready") -> Machine:
    """Every kind of state, edge and invoke: a parallel state with two regions, shallow and deep history (one with a
    default target), final states, `always`, `after` (a number and a named delay), onDone of a state and of
    invokes, onError, an Effect, an Agent, a Gate, a child Machine, `fail`, and a targetless `note`."""
    return jr2_setup(
        events=[ev(n) for n in ("go", "pause", "resume", "back", "deeper", "finish", "note", "reply")],
        actors={
            "lead": agent(model="script/lead", instructions="Lead the work."),
            "tests": effect.command(["true"]),
            "research": research_machine(),
            "fail": fail(),
        },
        guards={guard: is_ready},
        delays={"patience": 5000},
    ).create_machine(
        {
            "id": "kitchen",
            "initial": "idle",
            "on": {"agent.fault": ".failed"},
            "states": {
                "idle": {"on": {"go": {"target": "work", "guard": guard}}, "after": {1500: "failed"}},
                "work": {
                    "type": "parallel",
                    "onDone": "finished",
                    "states": {
                        "left": {
                            "initial": "a",
                            "states": {
                                "a": {"always": {"target": "b", "guard": lambda context: True}},
                                "b": {"invoke": {"src": "tests", "onDone": "c", "onError": "a"}},
                                "c": {"type": "final"},
                            },
                        },
                        "right": {
                            "initial": "x",
                            "states": {
                                "x": {"on": {"pause": "y"}, "after": {"patience": "y"}},
                                "y": {"on": {"resume": "h", "back": "deep"}},
                                "h": {"type": "history", "history": "shallow", "target": "x"},
                                "deep": {"type": "history", "history": "deep"},
                                "z": {"type": "final"},
                            },
                        },
                    },
                },
                "desk": {
                    "invoke": {"src": "lead"},
                    "initial": "thinking",
                    "on": {"finish": "finished", "note": {}},
                    "states": {
                        "thinking": {"on": {"deeper": "asking"}},
                        "asking": {"invoke": {"src": "gate", "id": "ask"}, "on": {"reply": "studying"}},
                        "studying": {"invoke": {"src": "research", "onDone": "thinking", "onError": "#kitchen.failed"}},
                    },
                },
                "finished": {"type": "final"},
                "failed": {"invoke": {"src": "fail", "input": {"reason": "no"}}},
            },
        }
    )


KITCHEN_PATHS = [
    "",
    "idle",
    "work",
    "work.left",
    "work.left.a",
    "work.left.b",
    "work.left.c",
    "work.right",
    "work.right.x",
    "work.right.y",
    "work.right.h",
    "work.right.deep",
    "work.right.z",
    "desk",
    "desk.thinking",
    "desk.asking",
    "desk.studying",
    "finished",
    "failed",
]

NASTY = '<script>alert("x")</script> & &amp; \' javascript:alert(1)'
BACKSLASH = "back\\N\\l\\"
NASTY_EVENT = 'xstate.<script>x"&amp;'  # engine events (xstate.*) need no define_event, so any name passes


def nasty_machine() -> Machine:
    """Names from a workflow that would be markup, entities, DOT escapes or a script if not escaped."""
    return jr2_setup(
        events=[], actors={NASTY: agent(model="script/x", instructions="Do it.")}, guards={'ok<script>"&': is_ready}
    ).create_machine(
        {
            "id": "m<script>&",
            "initial": BACKSLASH,
            "states": {
                BACKSLASH: {"on": {"xstate.go\\N": "b"}},
                NASTY: {
                    "invoke": {"src": NASTY},
                    "on": {
                        NASTY_EVENT: {"target": "b", "guard": 'ok<script>"&'},
                        "xstate.<b>": {"guard": 'ok<script>"&'},
                    },
                },
                "b": {"invoke": {"src": "gate", "id": '<gate>&"'}, "on": {"xstate.<script>": NASTY}},
            },
        }
    )


# ----------------------------------------------------------------------------------------------------------------
# Reading the SVG
# ----------------------------------------------------------------------------------------------------------------


def parse(svg: str) -> ET.Element:
    return ET.fromstring(svg)


def groups(svg: str) -> dict[str, ET.Element]:
    """Every `<g>` with an id, by id (a duplicate id fails the test)."""
    found: dict[str, ET.Element] = {}
    for g in parse(svg).iter(SVG + "g"):
        ident = g.get("id")
        if ident is not None:
            assert ident not in found, f"two groups have the id {ident!r}"
            found[ident] = g
    return found


def classes(g: ET.Element) -> list[str]:
    return (g.get("class") or "").split()


def texts(g: ET.Element) -> list[str]:
    return [t.text or "" for t in g.iter(SVG + "text")]


def state_ids(svg: str) -> set[str]:
    return {i for i in groups(svg) if i.startswith("state-")}


def edges(svg: str) -> list[tuple[list[str], str, dict[str, str]]]:
    """(classes, label, the path's attributes) of every edge."""
    out = []
    for g in parse(svg).iter(SVG + "g"):
        if "edge" in classes(g):
            path = g.find(SVG + "path")
            assert path is not None
            out.append((classes(g), " ".join(texts(g)), dict(path.attrib)))
    return out


def edge_labelled(svg: str, label: str) -> tuple[list[str], str, dict[str, str]]:
    found = [e for e in edges(svg) if e[1] == label]
    assert len(found) == 1, f"edges labelled {label!r}: {found} (all: {[e[1] for e in edges(svg)]})"
    return found[0]


def style(attrs: dict[str, str]) -> tuple[str | None, str | None, str | None]:
    return attrs.get("stroke"), attrs.get("stroke-dasharray"), attrs.get("stroke-width")


# ----------------------------------------------------------------------------------------------------------------
# Shape
# ----------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_each_example_has_one_state_group_per_state_path(name: str) -> None:
    machine = EXAMPLES[name]
    svg = machine_svg(machine)
    paths = state_paths(machine)
    assert len(paths) == len(machine.nodes) == len(set(paths))
    assert state_ids(svg) == {state_dom_id(p) for p in paths}
    by_id = groups(svg)
    for node in machine.nodes:
        g = by_id[state_dom_id(".".join(node.path))]
        assert ("cluster" if node.states else "node") in classes(g), (node, classes(g))
        title = g.find(SVG + "title")
        assert title is not None and title.text == (".".join(node.path) or machine.id)


def test_state_paths_are_dotted_below_the_root_in_document_order() -> None:
    assert state_paths(notes.machine) == ["", "writing", "writing.drafting", "writing.asking", "published", "failed"]
    assert state_paths(kitchen()) == KITCHEN_PATHS
    assert state_dom_id("writing.asking") == "state-writing.asking"


def test_the_svg_is_ready_to_inline() -> None:
    svg = machine_svg(notes.machine)
    assert svg.startswith("<svg ") and svg.rstrip().endswith("</svg>")
    assert "<?xml" not in svg and "<!DOCTYPE" not in svg
    root = parse(svg)
    assert root.tag == SVG + "svg" and "jr2-graph" in (root.get("class") or "")
    # the ids graphviz was given are all renamed
    assert not [i for i in groups(svg) if i.startswith("jr2_")]


def test_notes_is_drawn_with_its_clusters_markers_invokes_and_labels() -> None:
    svg = machine_svg(notes.machine)
    by_id = groups(svg)
    writing = by_id["state-writing"]
    assert classes(writing)[:3] == ["cluster", "state", "state-compound"] and "invokes-agent" in classes(writing)
    assert texts(writing) == ["writing", "Agent writer"]
    assert "Gate writing.asking" in texts(by_id["state-writing.asking"])
    assert "fail" in texts(by_id["state-failed"]) and "invokes-fail" in classes(by_id["state-failed"])
    published = by_id["state-published"]
    assert "state-final" in classes(published) and len(published.findall(SVG + "ellipse")) == 2
    # an initial marker in the root and in `writing`, each with its edge
    assert {"initial-", "initial-writing"} <= set(by_id)
    assert by_id["initial-writing"].find(SVG + "ellipse") is not None
    assert sum("edge-initial" in e[0] for e in edges(svg)) == 2
    assert edge_labelled(svg, 'done [context["replies"] > 0]')[0] == ["edge", "edge-event"]
    for label in ("ask", "reply", "agent.fault"):
        edge_labelled(svg, label)


def test_guards_are_shown_by_name_and_the_seat_guard_is_not() -> None:
    svg = machine_svg(triage.machine)
    edge_labelled(svg, "label [sent_by(desk)]")
    edge_labelled(svg, "label")
    edge_labelled(svg, "confirm")
    assert "seat" not in " ".join(e[1] for e in edges(svg))
    by_id = groups(svg)
    assert texts(by_id["state-triaging"]) == ["triaging", "Gate desk"]
    assert "Effect duplicates (call)" in texts(by_id["state-triaging.sorting.searching"])
    assert edge_labelled(svg, "onDone duplicates")[0] == ["edge", "edge-done"]
    assert edge_labelled(svg, "onError duplicates")[0] == ["edge", "edge-error"]


def test_other_guards_by_name_and_params() -> None:
    def tested(context: Any) -> bool:
        return True

    machine = jr2_setup(events=[ev("a"), ev("b"), ev("c")], guards={"ready": is_ready}).create_machine(
        {
            "id": "guards",
            "initial": "s",
            "states": {
                "s": {
                    "on": {
                        "a": {"target": "t", "guard": tested},
                        "b": {"target": "t", "guard": not_("ready")},
                        "c": {"target": "t", "guard": {"type": "ready", "params": {"n": 1}}},
                    }
                },
                "t": {"invoke": {"src": "gate", "id": "desk"}, "on": {"a": {"target": "s", "guard": sent_by("desk")}}},
            },
        }
    )
    svg = machine_svg(machine)
    for label in ("a [tested]", "b [not(ready)]", "c [ready(n=1)]", "a [sent_by(desk)]"):
        edge_labelled(svg, label)


def test_targetless_transitions_are_listed_in_their_state_not_drawn() -> None:
    svg = machine_svg(code_review.machine)
    reviewing = groups(svg)["state-reviewing"]
    assert texts(reviewing) == ["reviewing", "Agent reviewer", "↺ note"]
    assert not [e for e in edges(svg) if e[1].startswith("note")]
    edge_labelled(svg, 'approve [context["tested"]]')
    assert "Effect tests (command)" in texts(groups(svg)["state-reviewing.testing"])


def test_parallel_regions_are_dashed_clusters() -> None:
    svg = machine_svg(kitchen())
    by_id = groups(svg)
    work = by_id["state-work"]
    assert classes(work)[:3] == ["cluster", "state", "state-parallel"] and "parallel" in texts(work)
    frame = work.find(SVG + "path")
    assert frame is not None and "stroke-dasharray" not in frame.attrib and frame.get("stroke-width") == "2"
    for region in ("state-work.left", "state-work.right"):
        g = by_id[region]
        assert classes(g)[:4] == ["cluster", "state", "state-compound", "region"]
        frame = g.find(SVG + "path")
        assert frame is not None and frame.get("stroke-dasharray") == "5,2"
    compound = by_id["state-desk"].find(SVG + "path")
    assert compound is not None and "stroke-dasharray" not in compound.attrib
    # a parallel state has no initial marker; each compound state has one
    initials = {i for i in by_id if i.startswith("initial-") and not i.startswith("initial-edge-")}
    assert initials == {"initial-", "initial-work.left", "initial-work.right", "initial-desk"}


def test_history_and_final_states() -> None:
    svg = machine_svg(kitchen())
    by_id = groups(svg)
    shallow, deep = by_id["state-work.right.h"], by_id["state-work.right.deep"]
    assert texts(shallow) == ["H"] and texts(deep) == ["H*"]
    for g in (shallow, deep):
        assert "state-history" in classes(g) and len(g.findall(SVG + "ellipse")) == 1
    assert [e[0] for e in edges(svg) if "edge-history" in e[0]] == [["edge", "edge-history"]]  # h's default, x
    history_edge = next(g for g in parse(svg).iter(SVG + "g") if "edge-history" in classes(g))
    assert history_edge.findtext(SVG + "title") == "work.right.h → work.right.x"
    for final in ("state-work.left.c", "state-work.right.z", "state-finished"):
        assert "state-final" in classes(by_id[final]) and len(by_id[final].findall(SVG + "ellipse")) == 2


def test_each_edge_kind_is_styled_apart() -> None:
    svg = machine_svg(kitchen())
    kinds = {
        "event": edge_labelled(svg, "pause"),
        "always": edge_labelled(svg, "always [True]"),
        "after": edge_labelled(svg, "after 1.5s"),
        "done": edge_labelled(svg, "onDone"),
        "error": edge_labelled(svg, "onError tests"),
    }
    for kind, (cls, _label, _attrs) in kinds.items():
        assert cls == ["edge", f"edge-{kind}"]
    styles = {kind: style(attrs) for kind, (_cls, _label, attrs) in kinds.items()}
    assert len(set(styles.values())) == len(styles), styles
    assert styles["event"][1] is None and styles["done"][1] is None
    assert styles["always"][1] == styles["error"][1] == "5,2"  # dashed (different colours and widths)
    assert styles["after"][1] == "1,5"  # dotted
    assert styles["done"][2] == "2"  # bold
    # the same kind, the same style
    assert style(edge_labelled(svg, "after patience")[2]) == styles["after"]
    assert style(edge_labelled(svg, "onDone tests")[2]) == styles["done"]
    assert style(edge_labelled(svg, "onDone research")[2]) == styles["done"]
    assert style(edge_labelled(svg, "onError research")[2]) == styles["error"]
    assert style(edge_labelled(svg, "go [is_ready]")[2]) == styles["event"]


def test_each_invoke_kind_is_drawn_apart() -> None:
    svg = machine_svg(kitchen())
    by_id = groups(svg)
    rows = {
        "agent": ("state-desk", "Agent lead"),
        "gate": ("state-desk.asking", "Gate ask"),
        "effect": ("state-work.left.b", "Effect tests (command)"),
        "machine": ("state-desk.studying", "Machine research"),
        "fail": ("state-failed", "fail"),
    }
    fills = {}
    for kind, (ident, text) in rows.items():
        g = by_id[ident]
        assert f"invokes-{kind}" in classes(g)
        assert text in texts(g)
        row = [t for t in g.iter(SVG + "text") if t.text == text][0]
        background = [p.get("fill") for p in g.findall(SVG + "polygon")]
        fills[kind] = (row.get("fill"), tuple(background))
    assert len({f[0] for f in fills.values()}) == len(rows), fills  # each kind its own text colour
    assert len({f[1] for f in fills.values()}) == len(rows), fills  # and its own row background
    assert not [c for c in classes(by_id["state-idle"]) if c.startswith("invokes-")]


# ----------------------------------------------------------------------------------------------------------------
# Escaping
# ----------------------------------------------------------------------------------------------------------------


def test_names_from_the_workflow_are_escaped() -> None:
    machine = nasty_machine()
    svg = machine_svg(machine)
    assert "<script" not in svg.lower() and "javascript:" not in svg.lower()
    assert "&lt;script&gt;" in svg
    by_id = groups(svg)  # well-formed XML, ids unique
    assert state_ids(svg) == {state_dom_id(p) for p in state_paths(machine)}
    assert state_paths(machine) == ["", BACKSLASH, NASTY, "b"]
    nasty = by_id[state_dom_id(NASTY)]
    assert texts(nasty)[0] == NASTY
    assert f"Agent {NASTY}" in texts(nasty)
    assert '↺ xstate.<b> [ok<script>"&]' in texts(nasty)
    assert nasty.findtext(SVG + "title") == NASTY
    assert texts(by_id[state_dom_id(BACKSLASH)]) == [BACKSLASH]  # not `\N` expanded to graphviz's node name
    assert texts(by_id["state-b"]) == ["b", 'Gate <gate>&"']
    assert texts(by_id["state-"]) == ["m<script>&"]
    edge_labelled(svg, f'{NASTY_EVENT} [ok<script>"&]')
    edge_labelled(svg, "xstate.<script>")
    edge_labelled(svg, "xstate.go\\N")


# ----------------------------------------------------------------------------------------------------------------
# lit_svg
# ----------------------------------------------------------------------------------------------------------------


def lit_groups(svg: str, mark: str) -> set[str]:
    return {i for i, g in groups(svg).items() if mark in classes(g)}


def test_lit_svg_marks_exactly_the_asked_groups() -> None:
    svg = machine_svg(notes.machine)
    lit = lit_svg(svg, active=["", "writing", "writing.asking"], visited=["writing", "writing.drafting"])
    assert lit_groups(lit, "active") == {"state-", "state-writing", "state-writing.asking"}
    assert lit_groups(lit, "visited") == {"state-writing", "state-writing.drafting"}
    assert lit_groups(svg, "active") == lit_groups(svg, "visited") == set()
    before, after = groups(svg), groups(lit)
    for ident, g in after.items():
        extra = [c for c in classes(g) if c not in classes(before[ident])]
        assert extra == [m for m in ("active", "visited") if ident in lit_groups(lit, m)], ident
    assert lit.replace(" active", "").replace(" visited", "") == svg


def test_lit_svg_ignores_unknown_paths_and_leaves_an_unlit_svg_alone() -> None:
    svg = machine_svg(notes.machine)
    assert lit_svg(svg, [], []) is svg
    assert lit_svg(svg, ["nowhere", "writing.nowhere"], ["writ"]) == svg
    assert lit_groups(lit_svg(svg, iter(["published"]), ()), "active") == {"state-published"}


def test_lit_svg_finds_escaped_paths() -> None:
    machine = nasty_machine()
    lit = lit_svg(machine_svg(machine), [NASTY], [BACKSLASH, "b"])
    assert lit_groups(lit, "active") == {state_dom_id(NASTY)}
    assert lit_groups(lit, "visited") == {state_dom_id(BACKSLASH), "state-b"}


def test_lit_svg_marks_the_asked_groups_of_a_big_machine_again_and_again() -> None:
    """Its speed is bench/graph.py's business; here, that a reused index still marks the right groups."""
    from bench.graph import big_machine

    machine = big_machine()
    svg = machine_svg(machine)
    paths = state_paths(machine)
    lit_svg(svg, paths[:5], ())  # indexes this SVG once
    for count in (12, 3, 40):
        lit = lit_svg(svg, paths[:count], paths[count : count + 10])
        assert lit_groups(lit, "active") == {state_dom_id(p) for p in paths[:count]}
        assert lit_groups(lit, "visited") == {state_dom_id(p) for p in paths[count : count + 10]}


# ----------------------------------------------------------------------------------------------------------------
# The cache
# ----------------------------------------------------------------------------------------------------------------


@pytest.fixture
def renders(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The Machines graphviz is run for."""
    ran: list[str] = []
    real: Callable[..., str] = graph._render

    def counting(source: str, names: Any, machine: Machine) -> str:
        ran.append(machine.id)
        return real(source, names, machine)

    monkeypatch.setattr(graph, "_render", counting)
    return ran


def test_a_second_draw_comes_from_the_cache(renders: list[str]) -> None:
    machine = kitchen()
    first = machine_svg(machine)
    second = machine_svg(machine)
    assert second is first and renders == ["kitchen"]
    # an equal Machine built anew (same digest, same DOT): the same drawing, graphviz not run again
    assert machine_svg(kitchen()) is first and renders == ["kitchen"]


def test_the_same_shape_with_other_guard_names_is_drawn_again(renders: list[str]) -> None:
    ready, other = kitchen("is_ready"), kitchen("is_set")
    assert ready.digest == other.digest
    first, second = machine_svg(ready), machine_svg(other)
    assert renders == ["kitchen", "kitchen"]
    assert first != second
    edge_labelled(first, "go [is_ready]")
    edge_labelled(second, "go [is_set]")
    assert machine_svg(ready) is first and machine_svg(other) is second and len(renders) == 2


def test_the_cache_is_bounded(renders: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(graph._cache, "size", 2)
    machines = [kitchen(name) for name in ("g1", "g2", "g3")]
    for machine in machines:
        machine_svg(machine)
    assert len(graph._cache) == 2
    machine_svg(machines[0])  # evicted: drawn again
    assert len(renders) == 4


def test_a_missing_dot_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(GraphError, match="apt-get install graphviz"):
        machine_svg(kitchen("only_here"))


def test_the_machines_own_events_leave_from_a_from_any_state_box() -> None:
    svg = machine_svg(notes.machine)
    by_id = groups(svg)
    box = by_id["from-any-state"]
    assert "from-any-state" in classes(box) and texts(box) == ["from any state"]
    fault = next(g for g in parse(svg).iter(SVG + "g") if "agent.fault" in texts(g) and "edge" in classes(g))
    assert fault.findtext(SVG + "title", "").startswith("any state → ")
    assert box.find(SVG + "path") is not None or box.find(SVG + "polygon") is not None  # a box, not a point


def test_a_machine_without_own_transitions_has_no_from_any_state_box() -> None:
    machine = jr2_setup(events=[ev("a")]).create_machine(
        {"id": "plain", "initial": "s", "states": {"s": {"on": {"a": "t"}}, "t": {"type": "final"}}}
    )
    assert "from-any-state" not in groups(machine_svg(machine))
