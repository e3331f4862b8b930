"""A run's timeline: its Turns (each model request inside them), Effects, Gates (opened to answered) and timers on
one wall-clock axis, as bars a person can click for their details.

    timeline = build_timeline(journal, turns, calls, effects, spans, now=now, live=True)   # pure
    timeline = timeline_of(run)                                                          # reads the database

The axis starts when a host first committed a step of the run (its first journal entry), not when the run was created,
and each bar is the time its thing ran: a model request is its latency ending when its reply was committed, an Effect
runs from its start to its result (the time it waited to be started is not drawn), so time a run or an Effect sat in a
queue is never on the axis. Turns, requests and Effects come from their records; Gates and timers from walking the
journal through the Session (engine/core/journal/trace.py), which needs the workflow at the shape the run was written
under. A fork's Turns that began in its parent are drawn from the fork's start.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from engine.core.journal.entries import Advance, Entry, GateAnswer
from engine.core.journal.replay import brief, describe
from engine.core.journal.trace import numbered, trace, trace_on
from engine.core.session import Session, SessionError
from engine.core.words import duration_text
from engine.core.workflow import Machine
from engine.runtime.cache import LRU

__all__ = [
    "Bar",
    "Row",
    "Tick",
    "Timeline",
    "Span",
    "SpanWalk",
    "build_timeline",
    "spans_of",
    "walked_spans",
    "timeline_of",
]

Record = Mapping[str, Any]


@dataclass(frozen=True)
class Bar:
    """One thing that took time. `left` and `width` are percentages of the axis; `open` is still going."""

    kind: str  # turn, call, effect, gate, timer
    anchor: str  # the id of its detail on the page
    label: str
    start_ms: float
    end_ms: float
    open: bool
    status: str
    details: tuple[tuple[str, str], ...]
    step: int | None = None  # the journal entry it ended at (a replay link), when known
    left: float = 0.0
    width: float = 0.0


@dataclass(frozen=True)
class Row:
    label: str
    kind: str
    bars: tuple[Bar, ...]  # the row's own bar first; a Turn's model requests after it


@dataclass(frozen=True)
class Tick:
    left: float
    label: str


@dataclass(frozen=True)
class Span:
    """A Gate or a timer, between the journal entries that opened and ended it."""

    kind: str  # gate, timer
    id: str
    label: str
    opened: int
    closed: int | None = None
    due_ms: float | None = None  # a timer's due time, on the Session's clock (epoch ms in the runtime)
    details: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Timeline:
    origin: dt.datetime | None
    span_ms: float
    rows: tuple[Row, ...]
    ticks: tuple[Tick, ...]
    live: bool
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def length(self) -> str:
        return duration_text(self.span_ms)

    @property
    def bars(self) -> list[Bar]:
        return [bar for row in self.rows for bar in row.bars]


def build_timeline(
    journal: Sequence[Record],
    turns: Iterable[Record],
    calls: Iterable[Record],
    effects: Iterable[Record],
    spans: Iterable[Span],
    *,
    now: dt.datetime,
    live: bool,
    notes: Iterable[str] = (),
) -> Timeline:
    """The timeline from plain records (the fields of JournalEntry, TurnRecord, ModelCall and EffectRecord, a
    call's `turn` being its Turn's id) and the Gate and timer spans; `now` ends what is still going."""
    if not journal:
        return Timeline(None, 0.0, (), (), live, tuple(notes))
    at = {int(row["seq"]): row["at"] for row in journal}
    origin = journal[0]["at"]

    def ms(moment: dt.datetime | None) -> float:
        return max(0.0, ((moment or now) - origin).total_seconds() * 1000)

    last = now if live else max(row["at"] for row in journal)
    rows: list[tuple[float, int, Row]] = []
    by_turn: dict[str, list[Record]] = {}
    for call in calls:
        by_turn.setdefault(str(call["turn"]), []).append(call)
    for turn in turns:
        rows.append(_turn_row(turn, by_turn.get(str(turn["turn"]), []), ms))
    for effect in effects:
        rows.append(_effect_row(effect, ms))
    for span in spans:
        rows.append(_span_row(span, at, ms, origin, live))
    end = max([ms(last)] + [bar.end_ms for _, _, row in rows for bar in row.bars])
    total = max(end, 1.0)
    rows.sort(key=lambda item: (item[0], item[1]))
    placed = tuple(Row(row.label, row.kind, tuple(_placed(bar, total) for bar in row.bars)) for _, _, row in rows)
    return Timeline(origin, total, placed, _ticks(total), live, tuple(notes))


KIND_ORDER = {"turn": 0, "gate": 1, "effect": 2, "timer": 3}


def _turn_row(turn: Record, calls: list[Record], ms: Any) -> tuple[float, int, Row]:
    start, end = ms(turn["started_at"]), ms(turn.get("ended_at"))
    still = turn.get("ended_at") is None and turn.get("status") == "open"
    tokens_in = sum(int(c.get("input_tokens") or 0) for c in calls)
    tokens_out = sum(int(c.get("output_tokens") or 0) for c in calls)
    details = [
        ("Agent", str(turn["agent"])),
        ("state", str(turn.get("state", ""))),
        ("played by", str(turn.get("model", ""))),
        ("status", str(turn.get("status", ""))),
        ("lasted", duration_text(end - start) + (" so far" if still else "")),
        ("model requests", str(len(calls))),
        ("tokens in / out", f"{tokens_in} / {tokens_out}"),
    ]
    if turn.get("reason"):
        details.append(("why it faulted", str(turn["reason"])))
    bars = [
        Bar(
            "turn",
            f"tl-turn-{turn['turn']}",
            f"{turn['agent']} {turn['turn']}",
            start,
            max(end, start),
            still,
            str(turn.get("status", "")),
            tuple(details),
        )
    ]
    for call in calls:
        bars.append(_call_bar(call, ms))
    label = f"Turn {turn['turn']} · {turn['agent']}"
    return start, KIND_ORDER["turn"], Row(label, "turn", tuple(bars))


def _call_bar(call: Record, ms: Any) -> Bar:
    finished = call.get("finished_at")
    latency = call.get("latency_ms")
    if finished is not None and latency is not None:
        end = ms(finished)
        start = max(0.0, end - float(latency))
    else:
        start, end = ms(call["started_at"]), ms(finished)
    names = ", ".join(str(c.get("name", "")) for c in call.get("tool_calls") or [] if isinstance(c, Mapping))
    details = [
        ("model", str(call.get("model", ""))),
        ("status", str(call.get("status", ""))),
        ("latency", duration_text(float(latency)) if latency is not None else "—"),
        ("tokens in / out", f"{call.get('input_tokens') or 0} / {call.get('output_tokens') or 0}"),
        ("cache read / write", f"{call.get('cache_read_tokens') or 0} / {call.get('cache_write_tokens') or 0}"),
        ("tool calls", names or "none"),
        ("stop reason", str(call.get("stop_reason") or "—")),
    ]
    if call.get("error"):
        details.append(("error", str(call["error"])))
    return Bar(
        "call",
        f"tl-call-{call['seq']}",
        f"request {call['seq']}",
        start,
        max(end, start),
        finished is None and call.get("status") == "in_flight",
        str(call.get("status", "")),
        tuple(details),
    )


def _effect_row(effect: Record, ms: Any) -> tuple[float, int, Row]:
    began = effect.get("started_at") or effect["requested_at"]
    start, end = ms(began), ms(effect.get("finished_at"))
    still = effect.get("finished_at") is None and effect.get("status") in ("requested", "started")
    details = [
        ("slot", str(effect.get("slot", ""))),
        ("kind", str(effect.get("kind", ""))),
        ("state", str(effect.get("state", ""))),
        ("status", str(effect.get("status", ""))),
        ("attempts", str(effect.get("attempts") or 0)),
        ("ran", duration_text(end - start) + (" so far" if still else "")),
    ]
    if effect.get("result") is not None:
        details.append(("result" if effect.get("status") == "done" else "error", brief(effect["result"])))
    bar = Bar(
        "effect",
        f"tl-effect-{effect['effect']}",
        str(effect["effect"]),
        start,
        max(end, start),
        still,
        str(effect.get("status", "")),
        tuple(details),
    )
    return start, KIND_ORDER["effect"], Row(f"Effect {effect['effect']} · {effect.get('slot', '')}", "effect", (bar,))


def _span_row(
    span: Span, at: Mapping[int, dt.datetime], ms: Any, origin: dt.datetime, live: bool
) -> tuple[float, int, Row]:
    start = ms(at.get(span.opened))
    if span.closed is not None:
        end, still = ms(at.get(span.closed)), False
    elif span.kind == "timer" and span.due_ms is not None:
        due = dt.datetime.fromtimestamp(span.due_ms / 1000, tz=dt.UTC)
        end, still = max(start, (due - origin).total_seconds() * 1000), live
    else:
        end, still = ms(None), live
    status = "open" if still else ("ended" if span.closed is not None else "left open")
    details = span.details + (("lasted", duration_text(end - start) + (" so far" if still else "")),)
    bar = Bar(
        span.kind, f"tl-{span.kind}-{span.id}", span.label, start, max(end, start), still, status, details, span.closed
    )
    title = f"Gate {span.id}" if span.kind == "gate" else f"timer {span.label}"
    return start, KIND_ORDER[span.kind], Row(title, span.kind, (bar,))


def _placed(bar: Bar, total: float) -> Bar:
    left = 100 * bar.start_ms / total
    width = max(100 * (bar.end_ms - bar.start_ms) / total, 0.3)
    return replace(bar, left=round(min(left, 99.7), 3), width=round(min(width, 100 - min(left, 99.7)), 3))


def _ticks(total: float) -> tuple[Tick, ...]:
    """Five or so ticks at round intervals (1, 2 or 5 times a power of ten ms)."""
    raw = total / 5
    power = 10 ** math.floor(math.log10(raw)) if raw > 0 else 1
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    count = int(total // step)
    return tuple(Tick(round(100 * i * step / total, 3), duration_text(i * step)) for i in range(count + 1))


# -- Gates and timers, from the journal ---------------------------------------------------------------------------


def spans_of(machine: Machine, journal: Sequence[Record]) -> list[Span]:
    """Each Gate between the entries that opened and closed it, and each timer between the entries that set and
    ended it, by walking the journal (engine/core/journal/trace.py). SessionError when the journal does not replay."""
    return SpanWalk(machine).feed(journal).spans()


class SpanWalk:
    """The walk behind `spans_of`, kept between renders: a live run's next render feeds it only the entries that
    came since (a run's journal only grows), instead of replaying the whole journal at every commit."""

    def __init__(self, machine: Machine) -> None:
        self.machine = machine
        self.seq = 0
        self._session: Session | None = None
        self._gates: dict[str, Span] = {}
        self._timers: dict[str, Span] = {}
        self._done: list[Span] = []

    def feed(self, journal: Sequence[Record]) -> SpanWalk:
        """Walk the entries of `journal` after the last one fed (earlier ones are skipped)."""
        rows = [{"seq": row["seq"], "entry": row["entry"]} for row in journal if int(row["seq"]) > self.seq]
        if not rows:
            return self
        if self._session is None:
            steps = trace(self.machine, rows)
        else:
            steps = trace_on(self._session, numbered(rows))
        for step in steps:
            self._session = step.session
            self._step(step.seq, step.entry, step.session)
            self.seq = step.seq
        return self

    def spans(self) -> list[Span]:
        return self._done + list(self._gates.values()) + list(self._timers.values())

    def _step(self, seq: int, entry: Entry, session: Session) -> None:
        gates, timers = self._gates, self._timers
        now_gates = {gate.id: gate for gate in session.gates}
        for gate_id in [g for g in gates if g not in now_gates]:
            self._done.append(_closed_gate(gates.pop(gate_id), seq, entry))
        for gate_id, gate in now_gates.items():
            if gate_id not in gates:
                gates[gate_id] = Span(
                    "gate",
                    gate_id,
                    f"Gate {gate_id}",
                    seq,
                    details=(
                        ("state", gate.path),
                        ("accepts", ", ".join(gate.accepts)),
                        ("meta", json.dumps(gate.meta, ensure_ascii=False, default=str) if gate.meta else "—"),
                        ("opened at", f"step {seq}: {describe(entry)}"),
                    ),
                )
        now_timers = {str(t.get("id")): t for t in session.snapshot["statechart"].get("timers", [])}
        for timer_id in [t for t in timers if t not in now_timers]:
            span = timers.pop(timer_id)
            how = "fired" if isinstance(entry, Advance) else "ended"
            self._done.append(
                Span(
                    span.kind,
                    span.id,
                    span.label,
                    span.opened,
                    seq,
                    span.due_ms,
                    span.details + ((how, f"at step {seq}: {describe(entry)}"),),
                )
            )
        for timer_id, timer in now_timers.items():
            if timer_id not in timers:
                event = str((timer.get("event") or {}).get("type", ""))
                due = (timer.get("started_at") or 0) + float(timer.get("delay") or 0)
                timers[timer_id] = Span(
                    "timer",
                    timer_id,
                    event,
                    seq,
                    due_ms=due,
                    details=(
                        ("event", event),
                        ("delay", duration_text(float(timer.get("delay") or 0))),
                        ("set at", f"step {seq}: {describe(entry)}"),
                    ),
                )


#: The walks of the runs whose timelines were drawn last, by (run, workflow digest): a few dozen at most.
_WALKS_KEPT = 64
_WALKS: LRU[tuple[str, str], SpanWalk] = LRU(_WALKS_KEPT)


def walked_spans(run_id: str, machine: Machine, last: int, after: Callable[[int], Sequence[Record]]) -> list[Span]:
    """`spans_of` for a run whose journal ends at seq `last`, going on from the walk of its last render when
    there is one; `after(seq)` reads the journal's entries after `seq` (so a kept walk reads only the new ones)."""
    key = (run_id, machine.digest)
    walk = _WALKS.pop(key)  # taken out while it is fed: two renders at once each walk on their own
    if walk is None or walk.seq > last:
        walk = SpanWalk(machine)
    spans = walk.feed(after(walk.seq)).spans()
    _WALKS.put(key, walk)
    return spans


def _closed_gate(span: Span, seq: int, entry: Entry) -> Span:
    if isinstance(entry, GateAnswer) and entry.gate == span.id:
        how = ("answered", f"at step {seq}: {entry.event} {brief(entry.params or {})}")
    else:
        how = ("closed", f"at step {seq} without an answer: {describe(entry)}")
    return Span(span.kind, span.id, span.label, span.opened, seq, None, span.details + (how,))


# -- from the database --------------------------------------------------------------------------------------------


def timeline_of(run: Any, machine: Machine | None, now: dt.datetime | None = None) -> Timeline:
    """The run's timeline from its records (one query per kind) and its journal walked on `machine`."""
    from django.utils import timezone

    from engine.models import EffectRecord, JournalEntry, ModelCall, TurnRecord

    journal = list(JournalEntry.objects.filter(run=run).order_by("seq").values("seq", "at"))
    turns = list(TurnRecord.objects.filter(run=run).order_by("started_at", "id").values())
    calls = list(
        ModelCall.objects.filter(run=run)
        .order_by("seq")
        .values(
            "seq",
            "turn__turn",
            "model",
            "status",
            "tool_calls",
            "stop_reason",
            "error",
            "input_tokens",
            "output_tokens",
            "cache_read_tokens",
            "cache_write_tokens",
            "latency_ms",
            "started_at",
            "finished_at",
        )
    )
    for call in calls:
        call["turn"] = call.pop("turn__turn")
    effects = list(EffectRecord.objects.filter(run=run).order_by("requested_at", "id").values())
    notes: list[str] = []
    spans: list[Span] = []
    if machine is None:
        notes.append(f'Gates and timers are not shown: the workflow "{run.workflow}" does not load here.')
    elif machine.digest != run.digest:
        notes.append(
            f'Gates and timers are not shown: the workflow "{run.workflow}" changed shape since this run was written.'
        )
    elif journal:
        try:
            spans = walked_spans(
                str(run.id),
                machine,
                int(journal[-1]["seq"]),
                lambda seq: list(
                    JournalEntry.objects.filter(run=run, seq__gt=seq).order_by("seq").values("seq", "entry")
                ),
            )
        except SessionError as err:
            notes.append(f"Gates and timers are not shown: the journal does not replay on the workflow ({err}).")
    if journal and any(t["started_at"] < journal[0]["at"] for t in turns):
        notes.append("Turns that began in the parent run before this fork are drawn from the fork's start.")
    return build_timeline(journal, turns, calls, effects, spans, now=now or timezone.now(), live=run.live, notes=notes)
