"""A run's trace, read back from the SDK's in-memory exporter: the span tree of each example workflow, its names
and attributes as the GenAI conventions and our own `jr2.*` name them, one trace across a crash and resume, and
content recorded only when asked for."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from engine.models import Run
from engine.runtime import telemetry
from engine.runtime.host import Host
from engine.runtime.providers import aclose_all
from engine.runtime.telemetry.export import tracing_with
from engine.runtime.telemetry.ids import trace_id
from engine.runtime.telemetry.meters import Metrics
from tests.runtime.hosting import fleet, hosted, status, until
from workflows import code_review, notes, triage

pytestmark = pytest.mark.django_db(transaction=True)

DOOR = {"changes": "Faster start-up.\nA new export button."}


@pytest.fixture(autouse=True)
def offline(settings: Any) -> None:
    settings.JR2_SCRIPTED = True


@pytest.fixture
def spans(monkeypatch: pytest.MonkeyPatch) -> Iterator[InMemorySpanExporter]:
    monkeypatch.delenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", raising=False)
    exporter = InMemorySpanExporter()
    telemetry.configure(tracing=tracing_with(exporter), metrics=Metrics([InMemoryMetricReader()]))
    yield exporter
    telemetry.configure(tracing=None, metrics=None)


def tree(found: list[ReadableSpan]) -> dict[str, Any]:
    """The spans by name, and each one's parent's name."""
    by_id = {s.context.span_id: s for s in found}
    return {
        s.name: (by_id[s.parent.span_id].name if s.parent is not None and s.parent.span_id in by_id else None)
        for s in found
    }


def named(found: list[ReadableSpan], name: str) -> ReadableSpan:
    [span] = [s for s in found if s.name == name]
    return span


def run_notes(host: Host, answer: str = "Admins of small teams") -> Any:
    async def go() -> str:
        run_id = await host.start_run("notes", DOOR)
        await until(host, status(run_id, "waiting"))
        await host.deliver(run_id, "gate", gate="writing.asking", event="reply", params={"text": answer})
        await until(host, status(run_id, "done"))
        return run_id

    return go()


def test_a_notes_run_is_one_trace_of_states_turns_picks_and_its_gate(spans: InMemorySpanExporter) -> None:
    ids: list[str] = []

    async def body(host: Host) -> None:
        ids.append(await run_notes(host))

    hosted({"notes": notes.machine}, body)
    found = list(spans.get_finished_spans())
    [run_id] = ids
    assert {s.context.trace_id for s in found} == {trace_id(run_id)}
    parents = tree(found)
    assert parents["invoke_workflow notes"] is None
    assert parents["jr2.state writing"] == "invoke_workflow notes"
    assert parents["jr2.state writing.drafting"] == "jr2.state writing"
    assert parents["jr2.state writing.asking"] == "jr2.state writing"
    assert parents["jr2.gate writing.asking"] == "jr2.state writing.asking"
    assert parents["invoke_agent writer"] == "jr2.state writing"
    assert parents["execute_tool ask"] == "invoke_agent writer"
    assert parents["execute_tool done"] == "invoke_agent writer"
    assert parents["chat notes.writer"] == "invoke_agent writer"

    run = named(found, "invoke_workflow notes")
    assert run.attributes["jr2.run.status"] == "done"
    assert run.attributes["gen_ai.operation.name"] == "invoke_workflow"
    gate = named(found, "jr2.gate writing.asking")
    assert gate.attributes["jr2.gate.event"] == "reply"
    assert gate.start_time < gate.end_time <= run.end_time
    ask = named(found, "execute_tool ask")
    assert ask.attributes["jr2.pick.outcome"] == "outstanding"
    assert ask.attributes["gen_ai.tool.call.id"]
    assert named(found, "execute_tool done").attributes["jr2.pick.outcome"] == "delivered"
    turn = named(found, "invoke_agent writer")
    assert turn.attributes["gen_ai.agent.name"] == "writer"
    assert turn.attributes["gen_ai.conversation.id"]
    chats = [s for s in found if s.name.startswith("chat ")]
    assert chats and all(c.attributes["gen_ai.provider.name"] == "script" for c in chats)
    assert all(c.attributes["gen_ai.conversation.id"] == turn.attributes["gen_ai.conversation.id"] for c in chats)
    assert all("gen_ai.usage.input_tokens" in c.attributes for c in chats)
    # content is off by default: no payload anywhere
    for span in found:
        for key in span.attributes:
            assert key not in ("jr2.run.input", "gen_ai.tool.call.arguments", "jr2.gate.answer", "jr2.run.output")


def test_content_is_recorded_only_when_the_conventions_switch_is_on(
    spans: InMemorySpanExporter, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")

    async def body(host: Host) -> None:
        await run_notes(host, "Ops people")

    hosted({"notes": notes.machine}, body)
    found = list(spans.get_finished_spans())
    run = named(found, "invoke_workflow notes")
    assert "Faster start-up." in str(run.attributes["jr2.run.input"])
    assert "Ops people" in str(named(found, "jr2.gate writing.asking").attributes["jr2.gate.answer"])
    assert "question" in str(named(found, "execute_tool ask").attributes["gen_ai.tool.call.arguments"])


def test_code_review_has_a_span_per_effect_in_its_state(spans: InMemorySpanExporter) -> None:
    async def body(host: Host) -> None:
        run_id = await host.start_run("code_review", {"task": "Add add()."})
        run = await until(host, status(run_id, "done", "failed"), timeout=60)
        assert run.status == "done", run.reason

    hosted({"code_review": code_review.machine}, body)
    found = list(spans.get_finished_spans())
    effects = [s for s in found if s.name.startswith("jr2.effect ")]
    assert sorted(s.name for s in effects) == ["jr2.effect checkout", "jr2.effect tests", "jr2.effect tests"]
    parents = {s.context.span_id: s.name for s in found}
    for effect in effects:
        assert effect.attributes["jr2.effect.status"] == "done"
        assert parents[effect.parent.span_id].startswith("jr2.state ")
    assert {s.context.trace_id for s in found} == {effects[0].context.trace_id}
    assert sum(s.name == "invoke_workflow code_review" for s in found) == 1


def test_triage_has_its_desk_gate_and_who_answered(spans: InMemorySpanExporter) -> None:
    async def body(host: Host) -> None:
        run_id = await host.start_run("triage", {"title": "Export crash", "body": "It crashes on export."})
        await until(host, lambda: Run.objects.filter(id=run_id, view__value__triaging="proposed").first())
        await host.deliver(run_id, "gate", gate="desk", event="confirm", params={}, by="ada")
        await until(host, status(run_id, "done"))

    hosted({"triage": triage.machine}, body)
    found = list(spans.get_finished_spans())
    gate = named(found, "jr2.gate desk")
    assert gate.attributes["jr2.gate.event"] == "confirm"
    assert gate.attributes["jr2.gate.answered_by"] == "ada"
    assert named(found, "invoke_workflow triage").attributes["jr2.run.status"] == "done"


def test_a_run_taken_up_by_another_host_goes_on_in_the_same_trace(spans: InMemorySpanExporter) -> None:
    run_ids: list[str] = []

    async def main() -> None:
        host = Host({"notes": notes.machine}, owner="host-1")
        await host.start()
        run_ids.append(await host.start_run("notes", DOOR))
        await until(host, status(run_ids[0], "waiting"))
        await host.stop()
        assert not [s for s in spans.get_finished_spans() if s.name == "jr2.gate writing.asking"]
        host = Host({"notes": notes.machine}, owner="host-2")
        await host.start()
        try:
            await until(host, lambda: host.holds(run_ids[0]))
            await host.deliver(run_ids[0], "gate", gate="writing.asking", event="reply", params={"text": "Ops"})
            await until(host, status(run_ids[0], "done"))
        finally:
            await host.stop()
        await aclose_all()

    asyncio.run(main())
    found = list(spans.get_finished_spans())
    assert {s.context.trace_id for s in found} == {trace_id(run_ids[0])}
    [run] = [s for s in found if s.name == "invoke_workflow notes"]
    gate = named(found, "jr2.gate writing.asking")
    writing = named(found, "jr2.state writing")
    assert run.start_time <= writing.start_time <= gate.start_time < gate.end_time
    assert gate.parent.span_id == named(found, "jr2.state writing.asking").context.span_id
    assert writing.parent.span_id == run.context.span_id
    # both hosts' Turns of the writer nest in the one state span
    turns = [s for s in found if s.name == "invoke_agent writer"]
    assert turns and all(t.parent.span_id == writing.context.span_id for t in turns)


def test_with_tracing_off_a_run_keeps_no_span_book(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", raising=False)
    monkeypatch.delenv("JR2_OTEL", raising=False)
    telemetry.configure(tracing=telemetry._UNSET)
    try:
        assert telemetry.tracing() is None
        assert telemetry.for_run("r", "notes", "notes").book is None
        monkeypatch.setenv("JR2_OTEL", "1")
        assert telemetry.tracing_wanted()
    finally:
        telemetry.configure(tracing=None)


def test_in_the_fleet_a_run_written_by_web_and_taken_over_between_workers_is_one_trace(
    spans: InMemorySpanExporter,
) -> None:
    """A web host writes the run; worker-1 drives it to its Gate and dies (its lease lapses); worker-2 takes it
    over; the answer is relayed from web. One trace, one run span, the Gate span opened under worker-1."""
    run_ids: list[str] = []

    async def body(web: Host, first: Host) -> None:
        run_ids.append(await web.start_run("notes", DOOR))
        await until(web, status(run_ids[0], "waiting"))
        assert first.holds(run_ids[0])
        await first.stop()
        await web.db(lambda: Run.objects.filter(id=run_ids[0]).update(lease_expires=None, lease_owner=""))
        second = Host({"notes": notes.machine}, owner="worker-2", role="worker", scan_seconds=0.05)
        await second.start()
        try:
            await until(web, lambda: second.holds(run_ids[0]))
            await web.deliver(run_ids[0], "gate", gate="writing.asking", event="reply", params={"text": "Ops"})
            await until(web, status(run_ids[0], "done"))
        finally:
            await second.stop()

    fleet(body, "web", "worker", workflows={"notes": notes.machine})
    found = list(spans.get_finished_spans())
    assert {s.context.trace_id for s in found} == {trace_id(run_ids[0])}
    assert sum(s.name == "invoke_workflow notes" for s in found) == 1
    run = named(found, "invoke_workflow notes")
    gate = named(found, "jr2.gate writing.asking")
    assert run.start_time <= gate.start_time < gate.end_time <= run.end_time
    assert gate.attributes["jr2.gate.event"] == "reply"
