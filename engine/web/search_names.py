"""The names a runs search filters on, read as the pages write them: a state may be named from its Machine, as the
run pages show it (`notes.writing.asking`), or below it, as the runtime's records keep it (`writing.asking`); and a
workflow or state that no Workflow has and no run ever had is said in words, not answered with "0 runs match".

    states = state_names(["notes.writing.asking"])   # [("writing.asking", "notes"), ("notes.writing.asking", None)]
    problems = unknown_names(search_values)          # ['workflow "nope": no such workflow ...']
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from django.db.models import Q

from engine.models import Run, RunMark
from engine.runtime.registry import workflows

__all__ = ["state_names", "state_match", "unknown_names", "STATE_FILTERS"]

STATE_FILTERS = ("in", "passed")


def _prefixes() -> dict[str, list[str]]:
    """Each name a state path may start with -> the Workflows it names: a Workflow's name and its Machine's id."""
    out: dict[str, list[str]] = {}
    for name, machine in workflows().machines.items():
        for prefix in {name, machine.id}:
            out.setdefault(prefix, []).append(name)
    return out


def state_names(values: Iterable[str]) -> list[tuple[str, str | None]]:
    """Each value as (a path below the root, the Workflow it is limited to or None): a value that starts with a
    Workflow's name or Machine id is also read without it, for that Workflow's runs; every value is also read as
    it is written (a top-level state may share its Machine's name)."""
    prefixes = _prefixes()
    out: list[tuple[str, str | None]] = []
    for value in values:
        head, dot, rest = value.partition(".")
        if dot and rest:
            out.extend((rest, workflow) for workflow in prefixes.get(head, ()))
        out.append((value, None))
    return out


def state_match(kind: str, values: Iterable[str]) -> Q:
    """The runs with a `kind` mark ("in", "passed") on any of the states, named either way."""
    marks = Q(pk__in=[])
    for path, workflow in state_names(values):
        one = Q(kind=kind, name=path)
        marks |= one & Q(run__workflow=workflow) if workflow is not None else one
    return Q(id__in=RunMark.objects.filter(marks).values("run_id"))


def unknown_names(values: Mapping[str, list[str]]) -> list[str]:
    """A sentence for each workflow and state filter value that no loaded Workflow has and no run ever had."""
    problems: list[str] = []
    found = workflows()
    known = set(found.names())
    for key, names in values.items():
        name = key.removeprefix("not_")
        if name == "workflow":
            missing = [w for w in names if w not in known and not Run.objects.filter(workflow=w).exists()]
            listed = ", ".join(sorted(known)) or "none"
            for w in missing:
                problems.append(f'{key}: there is no workflow "{w}" and no run of one (workflows: {listed})')
        elif name in STATE_FILTERS:
            states = {".".join(n.path) for m in found.machines.values() for n in m.nodes if n.path}
            for value in names:
                readings = state_names([value])
                if any(path in states for path, _ in readings):
                    continue
                if RunMark.objects.filter(kind__in=STATE_FILTERS, name__in=[p for p, _ in readings]).exists():
                    continue
                problems.append(
                    f'{key}: no workflow has a state "{value}" and no run was ever in one (write it as the run page '
                    'shows it, "notes.writing.asking", or below the Machine, "writing.asking")'
                )
    return problems
