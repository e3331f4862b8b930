"""Runs seen in the tracing tools teams already use: OpenTelemetry traces with the GenAI conventions, and metrics.

Tracing is off unless the environment turns it on (`OTEL_EXPORTER_OTLP_ENDPOINT`, or
`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, or `JR2_OTEL=1`); it is configured only by the standard `OTEL_*` variables.
Off, a run keeps no span book and the SDK's tracing is never loaded. Metrics are always kept (a few counters per
commit), for `/metrics` and, with an endpoint, OTLP.

    run = telemetry.for_run(run_id, workflow, root)      # one per RunDriver
    run.committed(first_seq, entries, ops, view, status)  # after each commit: journal first, then tell

Nothing here may stop a run: a failure to record is logged, and the run goes on.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from engine.core.journal.entries import Entry
from engine.runtime.telemetry.book import ENDED, RunSpans


@runtime_checkable
class _Flushable(Protocol):
    def flush(self) -> None: ...


if TYPE_CHECKING:
    from engine.runtime.telemetry.export import Tracing
    from engine.runtime.telemetry.meters import Metrics

__all__ = [
    "RunTelemetry",
    "for_run",
    "tracing",
    "metrics",
    "configure",
    "tracing_wanted",
    "capture_content",
    "takeover",
    "relay_waited",
    "flush",
]

log = logging.getLogger("engine.runtime")

_UNSET: Any = object()
_tracing: Tracing | None | Any = _UNSET
_metrics: Metrics | None = None


def tracing_wanted() -> bool:
    """Whether this process's environment turns tracing on."""
    if os.environ.get("OTEL_SDK_DISABLED", "").lower() == "true":
        return False
    return bool(
        os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
        or os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        or os.environ.get("JR2_OTEL", "") in ("1", "true", "yes")
    )


def capture_content() -> bool:
    """`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`, as the GenAI conventions name the switch: message
    content, the run's input and context, and picks' and answers' payloads are recorded only when it is on."""
    value = os.environ.get("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "").strip().lower()
    return value not in ("", "false", "0", "no", "no_content")


def tracing() -> Tracing | None:
    """The process's tracing pipeline, built from the environment on first use; None when tracing is off."""
    global _tracing
    if _tracing is _UNSET:
        if tracing_wanted():
            from engine.runtime.telemetry.export import otlp_tracing  # the SDK loads only when tracing is on

            _tracing = otlp_tracing()
        else:
            _tracing = None
    return _tracing  # type: ignore[no-any-return]


def metrics() -> Metrics:
    """The process's metrics (Prometheus' reader always, OTLP's with an endpoint), built on first use."""
    global _metrics
    if _metrics is None:
        from engine.runtime.telemetry.meters import Metrics, default_readers

        _metrics = Metrics(default_readers())
    return _metrics


def configure(*, tracing: Tracing | None | Any = _UNSET, metrics: Metrics | None | Any = _UNSET) -> None:
    """Put pipelines of one's own in place of the environment's (an embedding program, or a test with the SDK's
    in-memory exporter and reader); None turns tracing off."""
    global _tracing, _metrics
    if tracing is not _UNSET:
        _tracing = tracing
    if metrics is not _UNSET:
        _metrics = metrics


def flush() -> None:
    """Send what the batch still holds (a process on its way out)."""
    if isinstance(_tracing, _Flushable):
        _safely(_tracing.flush)


def takeover() -> None:
    """A host took a run up from a lease that lapsed."""
    _safely(lambda: metrics().takeovers.add(1))


def relay_waited() -> None:
    """An input no host delivered within `JR2_RELAY_WAIT`: kept, and its sender answered "pending" (the API's
    202)."""
    _safely(lambda: metrics().relay_waits.add(1))


class RunTelemetry:
    """What one run tells the world's tools: its span book (when tracing is on) and its metrics."""

    def __init__(self, run_id: str, workflow: str, root: str) -> None:
        self.run_id = run_id
        self.workflow = workflow
        self.tracing = tracing()
        self.book = RunSpans(run_id, workflow, root=root, capture=capture_content()) if self.tracing else None
        #: Told that the run ended: later commits (the records of its last Turns) only count.
        self.ended = False

    def committed(
        self, first_seq: int, entries: Sequence[Entry], ops: Sequence[Any], view: Mapping[str, Any], status: str
    ) -> None:
        """Tell what a commit wrote. Called after the commit, never before."""
        gates = [str(g.get("id")) for g in view.get("gates") or ()]

        ended, self.ended = self.ended, self.ended or status in ENDED

        def record() -> None:
            if ended:
                metrics().committed(self.run_id, self.workflow, (), ops, (), "")
                return
            metrics().committed(self.run_id, self.workflow, entries, ops, gates, status)
            if self.book is not None and self.tracing is not None:
                spans = self.book.committed(first_seq, entries, ops, view, status, time.time_ns())
                if spans:
                    self.tracing.emit(self.book, spans)

        _safely(record)

    def resumed(self, steps: Iterable[tuple[int, Entry, Mapping[str, Any]]], turns: Iterable[Any]) -> None:
        """Rebuild the open spans of a run taken up again: its recorded steps (seq, entry, the view after it), and
        its open Turns' records. Nothing is emitted."""
        if self.book is None:
            return
        book = self.book

        def rebuild() -> None:
            for seq, entry, view in steps:
                book.resumed(seq, entry, view)
            for record in turns:
                start_ns = int(record.started_at.timestamp() * 1e9)
                book.resumed_turn(
                    record.turn, record.agent, record.state, record.declared_model, record.conversation, start_ns
                )

        _safely(rebuild)

    def forget(self) -> None:
        """The run left this process (it ended, or another host holds it)."""
        _safely(lambda: metrics().forget(self.run_id))


def for_run(run_id: str, workflow: str, root: str) -> RunTelemetry:
    return RunTelemetry(run_id, workflow, root)


def _safely(fn: Any) -> None:
    try:
        fn()
    except Exception:
        log.warning("telemetry: recording failed; the run goes on", exc_info=True)
