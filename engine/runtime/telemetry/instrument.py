"""The well-kept instrumentations, switched on with tracing: OpenTelemetry's ASGI middleware for every HTTP request
and websocket (the Console, the API, MCP), psycopg's and redis' for the database and the channel layer. Their spans
go out through the same tracer provider as the runs' (`telemetry/export.py`). Off, nothing is wrapped."""

from __future__ import annotations

from typing import Any

from engine.runtime import telemetry

__all__ = ["instrument_process", "instrumented_asgi"]

_done = False


def instrument_process() -> bool:
    """Turn the database and Redis instrumentations on, once per process, when tracing is on; whether it is."""
    global _done
    if telemetry.tracing() is None:
        return False
    if not _done:
        from opentelemetry.instrumentation.psycopg import PsycopgInstrumentor
        from opentelemetry.instrumentation.redis import RedisInstrumentor

        PsycopgInstrumentor().instrument(skip_dep_check=True)
        RedisInstrumentor().instrument()
        _done = True
    return True


def instrumented_asgi(application: Any) -> Any:
    """`application` with OpenTelemetry's ASGI middleware around it when tracing is on, else itself."""
    if not instrument_process():
        return application
    from opentelemetry.instrumentation.asgi import OpenTelemetryMiddleware

    return OpenTelemetryMiddleware(application)
