"""Reading a big Machine: which of its compound states a user keeps collapsed on the graph, and its child Machines'
own graphs (console/views/folds.py takes the user's choices and serves the child Machines' pages).

The choice is the user's, per workflow (and per child Machine of it), kept in their session (so it follows them from
page to page and run to run of that workflow, and needs no table): `{"<workflow>[/<invoke id>...]": [paths]}`.
Paths the Machine no longer has are dropped when read; a path that is not a collapsible state is refused when
written, and nothing is saved.
"""

from __future__ import annotations

from typing import Any

from django.http import Http404, HttpRequest
from django.urls import reverse

from engine.core.workflow import Machine
from engine.models import Run
from engine.runtime import graph
from engine.runtime.view import RunView

__all__ = ["SESSION_KEY", "folds_key", "folds_for", "child_machine", "graph_context"]

SESSION_KEY = "jr2.graph.folds"


def child_machine(machine: Machine, invokes: str) -> Machine:
    """The child Machine reached by invoke ids (`archive`, `review/inner`); Http404 naming the step that is not
    one."""
    found = machine
    walked: list[str] = []
    for invoke_id in [part for part in invokes.split("/") if part]:
        child = next((m for node in found.nodes for i, m in found.child_machines(node) if i == invoke_id), None)
        if child is None:
            where = f'"{"/".join(walked)}"' if walked else "the workflow"
            raise Http404(f'{where} invokes no child Machine with the id "{invoke_id}"')
        walked.append(invoke_id)
        found = child
    return found


def folds_key(name: str, invokes: str) -> str:
    """Where the session keeps a Machine's folds: the workflow's name, then the invoke ids down to it."""
    return "/".join([name, *[part for part in invokes.split("/") if part]])


def folds_for(request: HttpRequest | None, name: str, machine: Machine, invokes: str = "") -> list[str]:
    """The states this user keeps collapsed on this Machine's graph (those it still has)."""
    if request is None or not hasattr(request, "session"):
        return []
    kept = request.session.get(SESSION_KEY, {}).get(folds_key(name, invokes), [])
    allowed = set(graph.collapsible(machine))
    return [path for path in kept if path in allowed]


def graph_context(
    request: HttpRequest | None, name: str, machine: Machine, invokes: str = "", run: Run | None = None
) -> dict[str, Any]:
    """What the graph panel (templates/console/graph/_panel.html) needs: the drawing with this user's folds, lit for
    `run` when given, and the addresses its controls use."""
    folds = folds_for(request, name, machine, invokes)
    svg = graph.machine_svg(machine, folds)
    if run is not None:
        view = RunView.of(run.view)
        svg = graph.lit_svg(svg, list(view.active), list(view.visited))
    here = f"{invokes.strip('/')}/" if invokes.strip("/") else ""
    return {
        "svg": svg,
        "folds": folds,
        "collapsible": graph.collapsible(machine),
        "graph_machine": invokes,
        "folds_url": reverse("console:graph-folds", args=[name]),
        "machine_base": reverse("console:workflow", args=[name]) + "machines/" + here,
        "graph_run": run.id if run is not None else "",
    }
