"""`jr2 graph <workflow> --format svg|png|mermaid|dot`: a Workflow's graph drawn from this project's workflows
folder (no server needed), as the Console draws it (engine/runtime/exporting.py), on stdout or in a file."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from engine.cli.client import CliError
from engine.cli.output import Output
from engine.runtime.exporting import FORMATS, graph_export
from engine.runtime.graph import GraphError
from engine.runtime.loader import load_workflows
from engine.runtime.registry import reload_workflows

__all__ = ["graph_arguments", "graph"]


def graph_arguments(parser: ArgumentParser) -> None:
    parser.add_argument("workflow", help="the Workflow's name (as `jr2 check` lists it)")
    parser.add_argument(
        "--format", choices=FORMATS, default="svg", help="svg (default), png, mermaid (stateDiagram-v2) or dot"
    )
    parser.add_argument("-o", "--output", metavar="FILE", help="write the graph here instead of stdout")
    parser.add_argument("--workflows", metavar="DIR", help="the workflows folder (default: settings.JR2_WORKFLOWS)")


def graph(
    out: Output, workflow: str, format: str = "svg", output: str | None = None, workflows: str | None = None,
    **options: Any,
) -> None:  # fmt: skip
    """Draw the Workflow in `format`; a Workflow that is not there or did not load, or a PNG meant for a terminal,
    is a one-line error (exit 2) and writes nothing."""
    try:
        found = load_workflows(workflows) if workflows else reload_workflows()
    except (FileNotFoundError, NotADirectoryError) as err:
        raise CliError(f"jr2 graph: {err}") from err
    loaded = found.find(workflow)
    if loaded is None:
        raise CliError(
            f'jr2 graph: no workflow "{workflow}" in {found.folder} (workflows: {", ".join(found.names()) or "none"})'
        )
    if loaded.machine is None:
        raise CliError(f'jr2 graph: workflow "{workflow}" did not load: {loaded.error}')
    stream = getattr(out.stdout, "_out", out.stdout)  # Django's OutputWrapper around the real stream
    binary = getattr(stream, "buffer", None) if not stream.isatty() else None
    if format == "png" and output is None and binary is None:
        raise CliError("jr2 graph: a PNG is not for a terminal: give -o FILE or redirect stdout")
    try:
        drawn = graph_export(loaded.machine, format)
    except GraphError as err:
        raise CliError(f"jr2 graph: {err}") from err
    if output is not None:
        _write(output, drawn)
        out.progress(f"jr2 graph: {workflow} written to {output} ({format})")
    elif isinstance(drawn, bytes):
        assert binary is not None
        binary.write(drawn)
        binary.flush()
    else:
        out.line(drawn.rstrip("\n"))


def _write(path: str, drawn: str | bytes) -> None:
    try:
        if isinstance(drawn, bytes):
            with open(path, "wb") as f:
                f.write(drawn)
        else:
            with open(path, "w", encoding="utf-8") as f:
                f.write(drawn if drawn.endswith("\n") else drawn + "\n")
    except OSError as err:
        raise CliError(f"jr2 graph: cannot write {path}: {err.strerror or err}") from err
