"""`jr2 graph <workflow> --format svg|png|mermaid|dot`, run as users run it: the console script, on a copy of the
project's workflows folder, no server."""

from __future__ import annotations

import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.live_server import copy_workflows, jr2_script

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return copy_workflows(tmp_path_factory.mktemp("graph") / "workflows")


def jr2(folder: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [jr2_script(), "graph", *args, "--workflows", str(folder)], capture_output=True, timeout=120, check=False
    )


def test_svg_is_the_default_and_a_whole_svg_file(folder: Path) -> None:
    done = jr2(folder, "notes")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(b"<?xml")
    svg = ET.fromstring(done.stdout)
    ids = {g.get("id") for g in svg.iter("{http://www.w3.org/2000/svg}g")}
    assert {"state-writing.asking", "from-any-state"} <= ids
    assert 'done [context["replies"] > 0]' in [t.text for t in svg.iter("{http://www.w3.org/2000/svg}text")]


def test_png_to_a_file_and_to_a_pipe(folder: Path, tmp_path: Path) -> None:
    target = tmp_path / "notes.png"
    done = jr2(folder, "notes", "--format", "png", "-o", str(target))
    assert done.returncode == 0, done.stderr
    assert target.read_bytes().startswith(PNG) and b"written to" in done.stderr
    piped = jr2(folder, "triage", "--format", "png")
    assert piped.returncode == 0 and piped.stdout.startswith(PNG)


def test_mermaid_and_dot(folder: Path) -> None:
    mermaid = jr2(folder, "triage", "--format", "mermaid")
    assert mermaid.returncode == 0, mermaid.stderr
    text = mermaid.stdout.decode()
    assert text.startswith("stateDiagram-v2\n") and "from_any_state --> " in text and ": withdraw" in text
    dot = jr2(folder, "triage", "--format", "dot")
    assert dot.returncode == 0 and dot.stdout.startswith(b"digraph jr2graph {")
    assert b'label="from any state"' in dot.stdout


def test_an_unknown_workflow_or_format_is_one_line_and_exit_2(folder: Path) -> None:
    done = jr2(folder, "nope")
    assert done.returncode == 2 and done.stdout == b""
    names = ", ".join(sorted(p.stem for p in folder.glob("*.py") if not p.stem.startswith("_")))
    assert done.stderr.decode().strip() == f'jr2 graph: no workflow "nope" in {folder} (workflows: {names})'

    bad = jr2(folder, "notes", "--format", "gif")
    assert bad.returncode == 2 and b"invalid choice: 'gif'" in bad.stderr
