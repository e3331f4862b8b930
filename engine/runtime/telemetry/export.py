"""Handing a run's ended spans to OpenTelemetry's SDK, which exports them over OTLP/HTTP as the standard `OTEL_*`
variables say (`OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_SERVICE_NAME`, ...).

A run's spans are built as finished `ReadableSpan`s with the ids the book derived (`telemetry/ids.py`) and given to
the span processor directly, so a span started by one process and ended by another is one span of one trace. The
same tracer provider serves the HTTP, database and Redis instrumentations, so their spans go out the same way."""

from __future__ import annotations

import os
from collections.abc import Sequence

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor, SpanExporter
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

from engine.runtime.telemetry.book import RunSpans, SpanData
from engine.runtime.telemetry.ids import trace_id

__all__ = ["Tracing", "otlp_tracing", "tracing_with"]

_SCOPE = InstrumentationScope("jr2", None)
_SAMPLED = TraceFlags(TraceFlags.SAMPLED)


class Tracing:
    """A configured pipeline: the provider the instrumentations use, and the processor our spans go to."""

    def __init__(self, provider: TracerProvider, processor: SpanProcessor) -> None:
        self.provider = provider
        self.processor = processor
        provider.add_span_processor(processor)

    def emit(self, book: RunSpans, spans: Sequence[SpanData]) -> None:
        """Export `spans` (ended, after their commit) of the run `book` keeps."""
        trace = trace_id(book.run_id)
        resource = self.provider.resource
        for data in spans:
            context = SpanContext(trace, book.span_id(data.key), is_remote=False, trace_flags=_SAMPLED)
            parent = (
                SpanContext(trace, book.span_id(data.parent), is_remote=False, trace_flags=_SAMPLED)
                if data.parent is not None
                else None
            )
            status = Status(StatusCode.ERROR, data.error) if data.error else Status(StatusCode.UNSET)
            span = ReadableSpan(
                name=data.name,
                context=context,
                parent=parent,
                resource=resource,
                attributes=data.attributes,
                events=[Event(name, attributes, timestamp) for name, timestamp, attributes in data.events],
                kind=SpanKind.CLIENT if data.name.startswith("chat ") else SpanKind.INTERNAL,
                status=status,
                start_time=data.start_ns,
                end_time=data.end_ns,
                instrumentation_scope=_SCOPE,
            )
            self.processor.on_end(span)

    def flush(self) -> None:
        self.provider.force_flush()

    def shutdown(self) -> None:
        self.provider.shutdown()


def _resource() -> Resource:
    """`OTEL_SERVICE_NAME` and `OTEL_RESOURCE_ATTRIBUTES` as the SDK reads them, with `jr2` as the default name."""
    attributes = {} if os.environ.get("OTEL_SERVICE_NAME") else {"service.name": "jr2"}
    return Resource.create(attributes)


def otlp_tracing() -> Tracing:
    """The pipeline of a process whose environment turned tracing on: OTLP over HTTP, in batches, and the global
    tracer provider, so the instrumentations' spans join it."""
    provider = TracerProvider(resource=_resource())
    tracing = Tracing(provider, BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    return tracing


def tracing_with(exporter: SpanExporter) -> Tracing:
    """A pipeline that hands each span to `exporter` at once: for an embedding program, or a test with the SDK's
    in-memory exporter."""
    return Tracing(TracerProvider(resource=_resource()), SimpleSpanProcessor(exporter))
