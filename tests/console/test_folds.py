"""Reading a big Machine: compound states drawn collapsed (by graphviz, as one node), the choice remembered per user
and workflow, and child Machines' own graphs."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from bench import ledger
from bench.graph import big_machine
from engine.runtime import graph
from tests.console.conftest import SVG, logged_in, state_groups


def edge_ends(svg: str) -> list[str]:
    """Each edge's title, `source → target` (the states' paths, the root by the Machine's id)."""
    root = ET.fromstring(svg)
    return [g.findtext(SVG + "title") or "" for g in root.iter(SVG + "g") if "edge" in (g.get("class") or "").split()]


def test_a_collapsed_state_is_one_node_with_its_edges_ending_at_it() -> None:
    whole = graph.machine_svg(ledger.machine)
    small = graph.machine_svg(ledger.machine, ["writing", "no.such.state", "ticking"])
    found = state_groups(small)
    assert {"writing.idle", "writing.asking"} <= set(state_groups(whole)) and "writing.idle" not in found
    writing = found["writing"]
    assert writing.get("class", "").split()[:2] == ["node", "state"] and "state-collapsed" in writing.get("class", "")
    assert "⊞ 2 states inside" in [t.text for t in writing.iter(SVG + "text")]
    assert "writing.asking → ticking" in edge_ends(whole) and "writing → ticking" in edge_ends(small)
    assert "writing.idle → writing.asking" in edge_ends(whole)
    assert not [e for e in edge_ends(small) if e.startswith("writing.")], "nothing inside is drawn"
    assert "state-collapsed" not in found["ticking"].get("class", ""), "an atomic state cannot collapse"
    assert graph.machine_svg(ledger.machine, ["writing"]) == small, "unknown and atomic paths change nothing"
    assert found["archiving"].get("data-machines") == "archive"


def test_the_300_state_machine_collapsed_to_its_top_level_keeps_every_edge_between_what_is_drawn() -> None:
    machine = big_machine()
    top = [p for p in graph.collapsible(machine) if "." not in p]
    svg = graph.machine_svg(machine, top)
    drawn = set(state_groups(svg))
    assert drawn == {"", *(n.key for n in machine.statechart.root.states.values())}
    names = {p or machine.id for p in drawn} | {"any state"}  # the Machine's own events leave that box
    for edge in edge_ends(svg):
        if not edge.startswith("initial of"):
            source, target = edge.split(" → ")
            assert source in names and target in names, edge
    expected = {f"team{k} → team{k + 1}" for k in range(7)} | {"team0 → failed", "review → done"}
    assert expected <= set(edge_ends(svg))
    assert len(edge_ends(svg)) == len(set(edge_ends(svg))), "a repeated edge is drawn once"


def collapsed_on(page: str) -> set[str]:
    return set(re.findall(r'<g id="state-([^"]*)" class="[^"]*state-collapsed', page))


@pytest.mark.django_db(transaction=True)
def test_collapsing_is_remembered_per_user_and_workflow(ledger_folder: Path) -> None:
    olga, otto = logged_in("olga"), logged_in("otto")
    url = "/workflows/ledger/graph/folds/"
    response = olga.post(url, {"toggle": "writing"}, HTTP_X_JR2_GRAPH="1")
    assert response.status_code == 200 and collapsed_on(response.content.decode()) == {"writing"}
    assert collapsed_on(olga.get("/workflows/ledger/").content.decode()) == {"writing"}
    assert collapsed_on(otto.get("/workflows/ledger/").content.decode()) == set(), "another user's choice"
    assert collapsed_on(olga.get("/workflows/notes/").content.decode()) == set(), "another workflow's"
    assert olga.post(url, {"toggle": "writing"}, HTTP_X_JR2_GRAPH="1").status_code == 200
    assert collapsed_on(olga.get("/workflows/ledger/").content.decode()) == set()

    back = olga.post(url, {"set": "all", "next": "/workflows/ledger/?overlay=time"})
    assert back.status_code == 302 and back["Location"] == "/workflows/ledger/?overlay=time"
    assert collapsed_on(olga.get("/workflows/ledger/").content.decode()) == {"writing"}
    outside = olga.post(url, {"set": "none", "next": "https://elsewhere.example/"})
    assert outside["Location"] == "/workflows/ledger/"
    assert collapsed_on(olga.get("/workflows/ledger/").content.decode()) == set()


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    "data, says",
    [
        ({"toggle": "ticking"}, '"ticking" is not a state with states inside in Machine "ledger"'),
        ({"set": "1", "collapsed": ["writing", "nope"]}, "cannot be collapsed: nope"),
        ({"set": "maybe"}, "say what to collapse"),
        ({"toggle": "writing", "run": "nosuchrun"}, 'workflow "ledger" has no run nosuchrun'),
    ],
)
def test_a_wrong_fold_is_refused_and_changes_nothing(data: dict[str, Any], says: str, ledger_folder: Path) -> None:
    olga = logged_in("olga")
    olga.post("/workflows/ledger/graph/folds/", {"toggle": "writing"})
    response = olga.post("/workflows/ledger/graph/folds/", data)
    assert response.status_code == 400 and says in response.content.decode()
    assert collapsed_on(olga.get("/workflows/ledger/").content.decode()) == {"writing"}


@pytest.mark.django_db(transaction=True)
def test_folding_needs_a_reader_and_a_post(ledger_folder: Path, client: Client) -> None:
    assert client.post("/workflows/ledger/graph/folds/", {"toggle": "writing"}).status_code == 302
    assert logged_in("olga").get("/workflows/ledger/graph/folds/").status_code == 405


@pytest.mark.django_db(transaction=True)
def test_a_child_machine_has_its_own_graph_page(ledger_folder: Path) -> None:
    olga = logged_in("olga")
    workflow = olga.get("/workflows/ledger/").content.decode()
    assert 'data-machine-base="/workflows/ledger/machines/"' in workflow
    assert re.search(r'<g id="state-archiving" class="[^"]*invokes-machine" data-machines="archive">', workflow)
    page = olga.get("/workflows/ledger/machines/archive/")
    html = page.content.decode()
    assert page.status_code == 200 and set(state_groups(html[html.index("<svg") : html.index("</svg>") + 6])) == {
        "",
        "packing",
        "sealed",
    }
    assert 'data-machine="archive"' in html and 'data-machine-base="/workflows/ledger/machines/archive/"' in html
    missing = olga.get("/workflows/ledger/machines/archive/deeper/")
    assert missing.status_code == 404
    assert olga.get("/workflows/ledger/machines/nothing/").status_code == 404
