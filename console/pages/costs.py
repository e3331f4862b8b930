"""Cost and time per state: what a workflow's runs (or one run) spent in each state, for the Console's table and the
heat overlay on the graph.

    costs = state_costs(Run.objects.filter(workflow="notes"), machine, measure="tokens")
    costs = state_costs(run, machine)                       # one run
    table = cost_table(costs, sort="-tokens", query=...)    # the sortable table's columns and rows
    svg = graph.overlay_svg(svg, heat_of(costs), titles_of(costs))

A state is named by its dotted path below the root (`""` for the root), as the graph's groups are
(`state-<path>`). The runtime writes a Turn's state as `<machine id>.<path>` and an Effect's as the invoking state's
id (the same, unless the state has an `id` of its own); both are read back to the path through the Machine. A child
Machine's Turns and Effects (their ids start `<invoke id>/`) are counted on the state that invokes the child, where
the graph draws it.

Counts and sums are made by the database (grouped by state and child prefix). The percentiles are computed here over
the latency (or duration) values of each state, all of them read: fine for the Console's sizes (thousands of calls),
not for millions (that would want the database's own percentile functions, which SQLite does not have).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from django.db.models import CharField, Count, QuerySet, Sum, Value
from django.db.models.expressions import Case, When
from django.db.models.functions import Left, StrIndex
from django.http import QueryDict

from console.pages.links import query_with
from engine.core.words import duration_text as fmt_ms
from engine.core.workflow import Machine
from engine.models import EffectRecord, ModelCall, Run, TurnRecord
from engine.runtime.graph import heat_level, overlay_svg

__all__ = [
    "StateCost",
    "state_costs",
    "percentile",
    "heat_of",
    "titles_of",
    "cost_table",
    "CostTable",
    "MEASURES",
    "measure_of",
    "fmt_ms",
    "cost_section",
]

#: What the heat can be computed from: tokens (in + out) or time (model latency plus Effect durations, summed).
MEASURES = ("tokens", "time")


@dataclass
class StateCost:
    """What was spent in one state. Latencies and durations are in milliseconds; a percentile is None when no row of
    the state has a value."""

    path: str
    on_graph: bool = True  # False: a path the Machine does not have now (a run of an older shape)
    turns: int = 0
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    latency_ms: float = 0.0  # the sum over the calls with a latency
    latency_p50_ms: float | None = None
    latency_p95_ms: float | None = None
    effects: int = 0
    effect_ms: float = 0.0  # the sum over the Effects with a duration
    effect_p50_ms: float | None = None
    effect_p95_ms: float | None = None
    heat: float = 0.0  # 0..1: this state's measure over the costliest state's

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    @property
    def time_ms(self) -> float:
        return self.latency_ms + self.effect_ms

    @property
    def spent(self) -> bool:
        """Anything was recorded here (a Turn, a model call or an Effect)."""
        return bool(self.turns or self.calls or self.effects)


def measure_of(measure: str) -> Callable[[StateCost], float]:
    if measure == "time":
        return lambda cost: cost.time_ms
    return lambda cost: float(cost.tokens)


def percentile(values: Iterable[float], q: float) -> float | None:
    """The q-th percentile (0..100) by linear interpolation between the closest ranks (numpy's default, Excel's
    PERCENTILE.INC): p50 of [100, 200, 300, 400] is 250. None for no values."""
    ordered = sorted(values)
    if not ordered:
        return None
    position = (len(ordered) - 1) * q / 100
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def _child_prefix(field: str) -> Case:
    """The invoke id a child Machine's record starts with (`<invoke id>/...`), or "" for the Machine's own."""
    return Case(
        When(**{f"{field}__contains": "/"}, then=Left(field, StrIndex(field, Value("/")) - 1)),
        default=Value(""),
        output_field=CharField(),
    )


class _Paths:
    """A record's state (as the runtime wrote it) to the path of the state the graph draws it in."""

    def __init__(self, machine: Machine | None) -> None:
        self.machine = machine
        self.order: dict[str, int] = {}
        self.ids: dict[str, str] = {}
        self.invokes: dict[str, str] = {}
        if machine is not None:
            for index, node in enumerate(machine.nodes):
                path = ".".join(node.path)
                self.order[path] = index
                self.ids[node.id] = path
                for inv in node.invoke:
                    self.invokes[inv.id] = path

    def path(self, state: str, prefix: str, effect: bool) -> str:
        if prefix:
            found = self.invokes.get(prefix)
            return found if found is not None else f"{prefix}/{state}"
        if self.machine is None:  # a workflow that does not load now: its id is what comes before the first dot
            return state.split(".", 1)[1] if "." in state else state
        if effect and state in self.ids:
            return self.ids[state]
        root = self.machine.id
        if state == root:
            return ""
        if state.startswith(root + "."):
            return state[len(root) + 1 :]
        return self.ids.get(state, state)

    def spends(self) -> list[str]:
        """The states that can spend: those that invoke an Agent, an Effect or a child Machine."""
        if self.machine is None:
            return []
        out = []
        for node in self.machine.nodes:
            for inv in node.invoke:
                slot = self.machine.slots.get(inv.src) if isinstance(inv.src, str) else None
                if getattr(slot, "kind", None) in ("agent", "effect") or isinstance(slot, Machine):
                    out.append(".".join(node.path))
                    break
        return out


def state_costs(runs: QuerySet[Run] | Run, machine: Machine | None = None, measure: str = "tokens") -> list[StateCost]:
    """Per state, what `runs` (a queryset of Runs, or one Run) spent: Turns, model calls, tokens, model latency p50
    and p95, Effects and their duration p50 and p95, and the heat by `measure` ("tokens": in + out; "time": model
    latency plus Effect durations). Every state that can spend is listed (zeros when nothing was recorded), then any
    other path that has records; in the graph's document order, unknown paths last."""
    paths = _Paths(machine)
    costs: dict[str, StateCost] = {}

    def cost(state: str, prefix: str, effect: bool = False) -> StateCost:
        path = paths.path(state, prefix, effect)
        found = costs.get(path)
        if found is None:
            found = costs[path] = StateCost(path, on_graph=path in paths.order)
        return found

    for path in paths.spends():
        cost(machine.id + ("." + path if path else ""), "")  # type: ignore[union-attr]

    latencies: dict[str, list[float]] = {}
    durations: dict[str, list[float]] = {}
    if isinstance(runs, Run):
        _one_run(runs, cost, latencies, durations)
    else:
        _many_runs({"run__in": runs}, cost, latencies, durations)
    for path, c in costs.items():
        c.latency_p50_ms, c.latency_p95_ms = (percentile(latencies.get(path, ()), q) for q in (50, 95))
        c.effect_p50_ms, c.effect_p95_ms = (percentile(durations.get(path, ()), q) for q in (50, 95))

    value = measure_of(measure)
    top = max((value(c) for c in costs.values()), default=0.0)
    for c in costs.values():
        c.heat = value(c) / top if top > 0 else 0.0
    unknown = len(paths.order)
    return sorted(costs.values(), key=lambda c: (paths.order.get(c.path, unknown), c.path))


#: The cost of one record: its state as the runtime wrote it, the child prefix, whether it is an Effect's.
_Cost = Callable[[str, str, bool], StateCost]


def _prefix(name: str) -> str:
    """The invoke id a child Machine's record starts with (`<invoke id>/...`), or "" (`_child_prefix` in Python)."""
    return name.split("/", 1)[0] if "/" in name else ""


def _one_run(run: Run, cost: _Cost, latencies: dict[str, list[float]], durations: dict[str, list[float]]) -> None:
    """One run's records, summed here: a run has few, and three plain reads cost a fraction of the grouped ones
    (the run page's live cost section is drawn again after each of its commits)."""
    for state, agent in TurnRecord.objects.filter(run=run).order_by().values_list("state", "agent"):
        cost(state, _prefix(agent), False).turns += 1
    fields = ("turn__state", "turn__agent", "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
    for state, agent, read, wrote, cache_read, cache_write, latency in (
        ModelCall.objects.filter(run=run).order_by().values_list(*fields, "latency_ms")
    ):
        c = cost(state, _prefix(agent), False)
        c.calls += 1
        c.input_tokens += read or 0
        c.output_tokens += wrote or 0
        c.cache_read_tokens += cache_read or 0
        c.cache_write_tokens += cache_write or 0
        if latency is not None:
            c.latency_ms += latency
            latencies.setdefault(c.path, []).append(latency)
    for state, effect, duration in (
        EffectRecord.objects.filter(run=run).order_by().values_list("state", "effect", "duration_ms")
    ):
        c = cost(state, _prefix(effect), True)
        c.effects += 1
        if duration is not None:
            c.effect_ms += duration
            durations.setdefault(c.path, []).append(duration)


def _many_runs(
    where: dict[str, Any], cost: _Cost, latencies: dict[str, list[float]], durations: dict[str, list[float]]
) -> None:
    """Many runs' records, counted and summed by the database, grouped by state and child prefix."""
    turns = (
        TurnRecord.objects.filter(**where)
        .order_by()
        .annotate(prefix=_child_prefix("agent"))
        .values("state", "prefix")
        .annotate(n=Count("id"))
    )
    for row in turns:
        cost(row["state"], row["prefix"], False).turns += row["n"]

    calls = (
        ModelCall.objects.filter(**where)
        .order_by()
        .annotate(prefix=_child_prefix("turn__agent"))
        .values("turn__state", "prefix")
        .annotate(
            n=Count("id"),
            input=Sum("input_tokens"),
            output=Sum("output_tokens"),
            cache_read=Sum("cache_read_tokens"),
            cache_write=Sum("cache_write_tokens"),
            latency=Sum("latency_ms"),
        )
    )
    for row in calls:
        c = cost(row["turn__state"], row["prefix"], False)
        c.calls += row["n"]
        c.input_tokens += row["input"] or 0
        c.output_tokens += row["output"] or 0
        c.cache_read_tokens += row["cache_read"] or 0
        c.cache_write_tokens += row["cache_write"] or 0
        c.latency_ms += row["latency"] or 0.0

    effects = (
        EffectRecord.objects.filter(**where)
        .order_by()
        .annotate(prefix=_child_prefix("effect"))
        .values("state", "prefix")
        .annotate(n=Count("id"), duration=Sum("duration_ms"))
    )
    for row in effects:
        c = cost(row["state"], row["prefix"], True)
        c.effects += row["n"]
        c.effect_ms += row["duration"] or 0.0

    for state, prefix, value in (
        ModelCall.objects.filter(latency_ms__isnull=False, **where)
        .order_by()
        .annotate(prefix=_child_prefix("turn__agent"))
        .values_list("turn__state", "prefix", "latency_ms")
    ):
        latencies.setdefault(cost(state, prefix, False).path, []).append(value)
    for state, prefix, value in (
        EffectRecord.objects.filter(duration_ms__isnull=False, **where)
        .order_by()
        .annotate(prefix=_child_prefix("effect"))
        .values_list("state", "prefix", "duration_ms")
    ):
        durations.setdefault(cost(state, prefix, True).path, []).append(value)


# -- on the graph ------------------------------------------------------------------------------------------------


def heat_of(costs: Iterable[StateCost]) -> dict[str, float]:
    """The heat of every state that spent anything (a state nothing ran in is left undrawn, not drawn cold)."""
    return {c.path: c.heat for c in costs if c.spent and c.on_graph}


def titles_of(costs: Iterable[StateCost]) -> dict[str, str]:
    """The numbers of every state that spent anything, as its tooltip on the graph."""
    return {c.path: title(c) for c in costs if c.spent and c.on_graph}


def title(c: StateCost) -> str:
    lines = [
        f"{c.turns} Turn{'s' if c.turns != 1 else ''}, {c.calls} model call{'s' if c.calls != 1 else ''}",
        f"tokens in {c.input_tokens:,}, out {c.output_tokens:,}; cache read {c.cache_read_tokens:,}, "
        f"write {c.cache_write_tokens:,}",
    ]
    if c.calls:
        lines.append(f"model latency p50 {fmt_ms(c.latency_p50_ms)}, p95 {fmt_ms(c.latency_p95_ms)}")
    if c.effects:
        lines.append(
            f"{c.effects} Effect{'s' if c.effects != 1 else ''}, duration p50 {fmt_ms(c.effect_p50_ms)}, "
            f"p95 {fmt_ms(c.effect_p95_ms)}"
        )
    lines.append(f"time {fmt_ms(c.time_ms)} (model latency + Effects), heat {round(c.heat * 100)}%")
    return "\n".join(lines)


# -- the table ---------------------------------------------------------------------------------------------------

# (key for ?sort=, header, the value sorted on, how a cell shows it)
_COUNT = "{:,}".format
COLUMNS: list[tuple[str, str, Callable[[StateCost], Any], Callable[[Any], str]]] = [
    ("state", "State", lambda c: c.path, str),
    ("turns", "Turns", lambda c: c.turns, _COUNT),
    ("calls", "Model calls", lambda c: c.calls, _COUNT),
    ("input", "Tokens in", lambda c: c.input_tokens, _COUNT),
    ("output", "Tokens out", lambda c: c.output_tokens, _COUNT),
    ("cache_read", "Cache read", lambda c: c.cache_read_tokens, _COUNT),
    ("cache_write", "Cache write", lambda c: c.cache_write_tokens, _COUNT),
    ("latency_p50", "Latency p50", lambda c: c.latency_p50_ms, fmt_ms),
    ("latency_p95", "Latency p95", lambda c: c.latency_p95_ms, fmt_ms),
    ("effects", "Effects", lambda c: c.effects, _COUNT),
    ("effect_p50", "Effect p50", lambda c: c.effect_p50_ms, fmt_ms),
    ("effect_p95", "Effect p95", lambda c: c.effect_p95_ms, fmt_ms),
    ("time", "Time", lambda c: c.time_ms, fmt_ms),
    ("heat", "Heat", lambda c: c.heat, lambda h: f"{round(h * 100)}%"),
]
_BY_KEY = {key: (header, value, show) for key, header, value, show in COLUMNS}


@dataclass
class Column:
    key: str
    header: str
    query: str  # the query string that sorts by this column (descending first; again: the other way)
    sorted: str  # "asc", "desc" or ""
    numeric: bool


@dataclass
class Row:
    cost: StateCost
    level: int  # the heat step 0..4, as on the graph
    cells: list[str]  # after the state's own cell


@dataclass
class CostTable:
    columns: list[Column]
    rows: list[Row]
    sort: str


def sort_costs(costs: Iterable[StateCost], sort: str) -> tuple[list[StateCost], str]:
    """`costs` sorted by `sort` (a column key, `-` first for descending; unknown: by heat, descending). States with
    no value in that column (a percentile of a state with no calls) come last either way; ties keep the graph's
    order. Returns the sort actually used."""
    key = sort.lstrip("-")
    if key not in _BY_KEY:
        key, sort = "heat", "-heat"
    descending = sort.startswith("-")
    value = _BY_KEY[key][1]
    items = list(costs)
    if key == "state":  # the graph's order (document order), not the alphabet
        return (items[::-1] if descending else items), sort
    having = [c for c in items if value(c) is not None]
    missing = [c for c in items if value(c) is None]
    having.sort(key=value, reverse=descending)  # stable: ties keep the graph's order
    return having + missing, sort


def cost_table(costs: Iterable[StateCost], sort: str, query: Callable[[str], str]) -> CostTable:
    """The table's columns (each with the query string that sorts by it; `query(sort)` makes it, keeping the page's
    other parameters) and rows, sorted by `sort`."""
    rows, sort = sort_costs(costs, sort)
    key, descending = sort.lstrip("-"), sort.startswith("-")
    columns = []
    for name, header, _, _ in COLUMNS:
        now = ("desc" if descending else "asc") if name == key else ""
        first = name if name == "state" else "-" + name  # numbers: the largest first
        if now:
            target = name if descending else "-" + name
        else:
            target = first
        columns.append(Column(name, header, query(target), now, name != "state"))
    out = [Row(c, heat_level(c.heat), [show(value(c)) for _, _, value, show in COLUMNS[1:]]) for c in rows]
    return CostTable(columns, out, sort)


def cost_section(
    params: QueryDict | None, runs: QuerySet[Run] | Run, machine: Machine | None, svg: str, base: str
) -> dict[str, Any]:
    """The section "Cost and time per state": the table sorted by `?sort=`, the heat by `?overlay=tokens|time` (by
    tokens when off), and the graph with the overlay when `?overlay=` names a measure. Its links go to `base` (the
    page's own address: a form's failed POST renders this page at another one) and keep the page's other
    parameters (`params`: none for a POST), so every view of it is bookmarkable."""
    params = params if params is not None else QueryDict()
    overlay = params.get("overlay", "")
    overlay = overlay if overlay in MEASURES else ""
    found = state_costs(runs, machine, overlay or "tokens")
    count = 1 if isinstance(runs, Run) else runs.count()

    def link(**changes: str | None) -> str:
        encoded = query_with(params, **changes)
        return base + ("?" + encoded if encoded else "")

    out: dict[str, Any] = {
        "costs": cost_table(found, params.get("sort", ""), lambda sort: link(sort=sort) + "#costs"),
        "cost_runs": count,
        "cost_measure": overlay or "tokens",
        "cost_overlay": overlay,
        "cost_links": [(m, link(overlay=m)) for m in MEASURES] + [("off", link(overlay=None))],
        "cost_spent": any(c.spent for c in found),
        "cost_of_run": isinstance(runs, Run),
        "cost_measured": any(c.heat > 0 for c in found),
        "cost_root": machine.id if machine is not None else "",
    }
    if overlay and svg:
        out["svg"] = overlay_svg(svg, heat_of(found), titles_of(found))
    return out
