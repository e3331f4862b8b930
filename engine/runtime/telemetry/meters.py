"""The engine's metrics, through OpenTelemetry's SDK: over OTLP when the `OTEL_*` variables name an endpoint, and
always readable at `/metrics` in Prometheus' text format (the SDK's Prometheus reader).

What is counted comes from what each commit wrote (the same entries, records and view the spans read), so a count
is never ahead of the journal:
- runs started and ended, by workflow and status; picks by outcome;
- open Gates (by workflow) and the age of the oldest, and how long each answered Gate waited;
- Turn and model-call latency; tokens and cache reads by model; Effect durations;
- lease takeovers, and inputs kept past `JR2_RELAY_WAIT` (answered 202), told by the host and the relay.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Sequence
from typing import Any

from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.exporter.prometheus import PrometheusMetricReader
from opentelemetry.metrics import CallbackOptions, Observation
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import MetricReader, PeriodicExportingMetricReader

from engine.core.journal.entries import Entry, Pick, Start
from engine.runtime.store import ops as store_ops
from engine.runtime.telemetry.book import ENDED, PICK_OUTCOMES

__all__ = ["Metrics", "default_readers", "otlp_on"]


def otlp_on() -> bool:
    """Whether the environment names an OTLP endpoint (for all signals, or for this one), and does not turn the
    metrics exporter off (`OTEL_METRICS_EXPORTER=none`, for a receiver that takes only traces)."""
    if os.environ.get("OTEL_METRICS_EXPORTER", "").strip().lower() == "none":
        return False
    return bool(
        os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
        or os.environ.get("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT")
        or os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    )


def default_readers() -> list[MetricReader]:
    """Prometheus' reader for `/metrics`, and OTLP's when an endpoint is set."""
    readers: list[MetricReader] = [PrometheusMetricReader()]
    if otlp_on():
        readers.append(PeriodicExportingMetricReader(OTLPMetricExporter()))
    return readers


class Metrics:
    """The instruments, and what one commit adds to them."""

    def __init__(self, readers: Sequence[MetricReader]) -> None:
        self.provider = MeterProvider(metric_readers=list(readers))
        meter = self.provider.get_meter("jr2")
        self.runs_started = meter.create_counter("jr2.runs.started", unit="{run}", description="Runs started")
        self.runs_ended = meter.create_counter("jr2.runs.ended", unit="{run}", description="Runs ended, by status")
        self.picks = meter.create_counter("jr2.picks", unit="{pick}", description="Picks, by outcome")
        self.gates_open = meter.create_up_down_counter("jr2.gates.open", unit="{gate}", description="Open Gates")
        self.gate_wait = meter.create_histogram(
            "jr2.gate.wait.duration", unit="s", description="How long a Gate stayed open"
        )
        meter.create_observable_gauge(
            "jr2.gates.oldest.age",
            callbacks=[self._oldest_gate],
            unit="s",
            description="The age of the oldest open Gate this process holds, by workflow",
        )
        self.turn_duration = meter.create_histogram("jr2.turn.duration", unit="s", description="Turn latency")
        self.call_duration = meter.create_histogram(
            "gen_ai.client.operation.duration", unit="s", description="Model-call latency"
        )
        self.tokens = meter.create_counter("jr2.tokens", unit="{token}", description="Tokens, by model and type")
        self.token_usage = meter.create_histogram(
            "gen_ai.client.token.usage", unit="{token}", description="Tokens per model call"
        )
        self.effect_duration = meter.create_histogram("jr2.effect.duration", unit="s", description="Effect durations")
        self.takeovers = meter.create_counter(
            "jr2.lease.takeovers", unit="{run}", description="Runs a host took up from another's lapsed lease"
        )
        self.relay_waits = meter.create_counter(
            "jr2.relay.waits",
            unit="{input}",
            description="Inputs no host delivered within JR2_RELAY_WAIT: kept, and answered pending (202)",
        )
        #: Open Gates by run, then Gate: their workflow and when they opened (monotonic seconds). By run first, so
        #: a commit looks at its own run's Gates, not at every run's this process holds.
        self._open_gates: dict[str, dict[str, tuple[str, float]]] = {}
        #: Open Turns by run, then Turn: when they opened.
        self._open_turns: dict[str, dict[str, float]] = {}
        #: Model calls in flight by (run, call seq): their model.
        self._calls: dict[tuple[str, int], str] = {}

    def committed(
        self,
        run_id: str,
        workflow: str,
        entries: Sequence[Entry],
        ops: Iterable[Any],
        gates: Iterable[str],
        status: str,
    ) -> None:
        """Count what one commit of `run_id` wrote; `gates` are the ids of the Gates open after it."""
        by_workflow = {"jr2.workflow": workflow}
        now = time.monotonic()
        for entry in entries:
            if isinstance(entry, Start):
                self.runs_started.add(1, by_workflow)
            elif isinstance(entry, Pick):
                outcome = PICK_OUTCOMES.get(str(entry.outcome or ""), str(entry.outcome or ""))
                self.picks.add(1, {**by_workflow, "jr2.pick.outcome": outcome})
        for op in ops:
            self._op(run_id, workflow, op, now)
        self._gates(run_id, workflow, set(gates), now)
        if status in ENDED:
            self.runs_ended.add(1, {**by_workflow, "jr2.run.status": status})
            self._gates(run_id, workflow, set(), now)
            self._open_turns.pop(run_id, None)

    def _op(self, run_id: str, workflow: str, op: Any, now: float) -> None:
        if isinstance(op, store_ops.TurnOpened):
            self._open_turns.setdefault(run_id, {})[op.turn] = now
        elif isinstance(op, store_ops.TurnClosed):
            opened = self._open_turns.get(run_id, {}).pop(op.turn, None)
            if opened is not None:
                self.turn_duration.record(now - opened, {"jr2.workflow": workflow, "jr2.turn.status": str(op.status)})
        elif isinstance(op, store_ops.CallStarted):
            self._calls[(run_id, op.seq)] = op.model
        elif isinstance(op, store_ops.CallFinished):
            self._call(op, self._calls.pop((run_id, op.seq), ""))
        elif isinstance(op, store_ops.EffectChanged) and op.duration_ms is not None:
            attributes = {"jr2.workflow": workflow, "jr2.effect.status": str(op.status)}
            self.effect_duration.record(float(op.duration_ms) / 1000, attributes)

    def _call(self, op: store_ops.CallFinished, model: str) -> None:
        attributes = {"gen_ai.operation.name": "chat", "gen_ai.request.model": model or "unknown"}
        if op.latency_ms is not None:
            self.call_duration.record(float(op.latency_ms) / 1000, attributes)
        usage = op.usage or {}
        for kind, key in (
            ("input", "input_tokens"),
            ("output", "output_tokens"),
            ("cache_read", "cache_read_tokens"),
            ("cache_write", "cache_write_tokens"),
        ):
            count = int(usage.get(key, 0) or 0)
            if count:
                self.tokens.add(count, {**attributes, "gen_ai.token.type": kind})
                if kind in ("input", "output"):
                    self.token_usage.record(count, {**attributes, "gen_ai.token.type": kind})

    def _gates(self, run_id: str, workflow: str, gates: set[str], now: float) -> None:
        held = self._open_gates.get(run_id, {})
        if not held and not gates:
            return
        for gate in set(held) - gates:
            _, opened = held.pop(gate)
            self.gates_open.add(-1, {"jr2.workflow": workflow})
            self.gate_wait.record(now - opened, {"jr2.workflow": workflow})
        for gate in gates - set(held):
            held[gate] = (workflow, now)
            self.gates_open.add(1, {"jr2.workflow": workflow})
        if held:
            self._open_gates[run_id] = held
        else:
            self._open_gates.pop(run_id, None)

    def forget(self, run_id: str) -> None:
        """A run this process no longer drives (another host holds it now): its Gates are counted there."""
        for workflow, _ in self._open_gates.pop(run_id, {}).values():
            self.gates_open.add(-1, {"jr2.workflow": workflow})
        self._open_turns.pop(run_id, None)

    def _oldest_gate(self, options: CallbackOptions) -> Iterable[Observation]:
        now = time.monotonic()
        oldest: dict[str, float] = {}
        for held in list(self._open_gates.values()):
            for workflow, opened in list(held.values()):
                oldest[workflow] = max(oldest.get(workflow, 0.0), now - opened)
        return [Observation(age, {"jr2.workflow": workflow}) for workflow, age in oldest.items()]

    def shutdown(self) -> None:
        self.provider.shutdown()
