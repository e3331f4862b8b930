"""The graph's exports: Mermaid's `stateDiagram-v2` from the Machine, and the workflow page's download links."""

from __future__ import annotations

import re
from typing import Any

import pytest

from engine import jr2_setup
from engine.runtime.exporting import FORMATS, graph_export
from engine.runtime.mermaid import machine_mermaid
from tests.console.conftest import ev, logged_in
from workflows import code_review, notes, triage


def test_mermaid_nests_composites_with_initials_and_finals() -> None:
    text = machine_mermaid(notes.machine)
    lines = text.splitlines()
    assert lines[0] == "stateDiagram-v2"
    assert '  state "writing" as s1 {' in lines and '    state "asking" as s3' in lines
    assert "    [*] --> s2" in lines  # writing's initial, inside it
    assert "  [*] --> s1" in lines and "  s4 --> [*]" in lines  # the root's initial; published is final
    assert "    s2 --> s3 : ask" in lines  # declared inside writing, where both ends are
    assert "  from_any_state --> s5 : agent.fault" in lines
    assert "  s1 --> s4 : done [context[#quot;replies#quot;] #gt; 0]" in lines
    assert text.count("{") == text.count("}")


def test_mermaid_splits_a_parallel_states_regions_and_notes_targetless_transitions() -> None:
    machine = jr2_setup(events=[ev("ping"), ev("go")]).create_machine(
        {
            "id": "par",
            "initial": "p",
            "states": {
                "p": {
                    "type": "parallel",
                    "states": {
                        "a": {"initial": "a1", "states": {"a1": {"on": {"ping": {}}}}},
                        "b": {"initial": "b1", "states": {"b1": {"on": {"go": "#par.done"}}}},
                    },
                },
                "done": {"type": "final"},
            },
        }
    )
    lines = machine_mermaid(machine).splitlines()
    start = lines.index('  state "p" as s1 {')
    inside = lines[start : lines.index("  }", start)]
    assert "    --" in inside and not any(line.strip().startswith("[*]") for line in inside[:2])
    assert any(re.fullmatch(r"\s*note right of s\d+ : takes ping without leaving", line) for line in lines)
    assert any(re.fullmatch(r"  s\d+ --> s\d+ : go", line) for line in lines)  # across the parallel state: at the root


def test_mermaid_writes_names_with_its_entity_codes() -> None:
    text = machine_mermaid(code_review.machine) + machine_mermaid(triage.machine)
    for line in text.splitlines():
        if " : " in line:
            label = re.sub(r"#\w+;", "", line.split(" : ", 1)[1])
            assert not set(label) & set(':;"<>{}#'), line


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_format_is_drawn(fmt: str) -> None:
    drawn = graph_export(notes.machine, fmt)
    assert drawn[:4] == b"\x89PNG" if fmt == "png" else isinstance(drawn, str) and drawn


def test_an_unknown_format_names_the_ones_there_are() -> None:
    with pytest.raises(ValueError, match="no graph format 'gif': one of svg, png, mermaid, dot"):
        graph_export(notes.machine, "gif")


@pytest.mark.parametrize(
    ("ext", "content_type", "start"),
    [
        ("png", "image/png", b"\x89PNG"),
        ("mmd", "text/vnd.mermaid", b"stateDiagram-v2"),
        ("dot", "text/vnd.graphviz", b"digraph"),
    ],
)
def test_the_workflow_page_downloads_each_export(observer: Any, ext: str, content_type: str, start: bytes) -> None:
    client = logged_in(observer)
    response = client.get(f"/workflows/notes/graph.{ext}")
    assert response.status_code == 200 and response["Content-Type"].startswith(content_type)
    assert response["Content-Disposition"] == f'attachment; filename="notes.{ext}"'
    assert response.content.startswith(start)
    page = client.get("/workflows/notes/").content.decode()
    assert f'href="/workflows/notes/graph.{ext}"' in page


def test_an_unknown_export_is_a_404_naming_the_formats(observer: Any) -> None:
    response = logged_in(observer).get("/workflows/notes/graph.gif")
    assert response.status_code == 404
