"""The timeline: the pure function over plain records (wall time from the first step, no queue time, requests
inside their Turns, open bars to now), Gates and timers from walking the journal, the page, and its live chart."""

from __future__ import annotations

import asyncio
import datetime as dt
import re
from typing import Any

import pytest
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.test import Client
from pydantic import BaseModel

from console.pages.timeline import Span, build_timeline, spans_of, walked_spans
from console.routing import websocket_urlpatterns
from engine import Session, SimulatedClock, define_event, jr2_setup
from engine.runtime.host import Host
from tests.console.conftest import NOTES_DOOR, WORKFLOWS

T0 = dt.datetime(2026, 1, 1, 12, 0, 0, tzinfo=dt.UTC)


def at(seconds: float) -> dt.datetime:
    return T0 + dt.timedelta(seconds=seconds)


def journal(*seconds: float) -> list[dict[str, Any]]:
    return [
        {"seq": i, "kind": "start" if i == 1 else "pick", "entry": {}, "at": at(s)}
        for i, s in enumerate(seconds, start=1)
    ]


def turn(name: str, start: float, end: float | None, status: str = "ended") -> dict[str, Any]:
    return {
        "turn": name,
        "agent": "writer",
        "state": "notes.writing",
        "model": "script/notes.writer",
        "status": status,
        "reason": "",
        "started_at": at(start),
        "ended_at": at(end) if end is not None else None,
    }


def test_bars_are_placed_on_wall_time_from_the_first_step_with_requests_inside_their_turn() -> None:
    calls = [
        {
            "seq": 1,
            "turn": "turn-1",
            "model": "m",
            "status": "done",
            "latency_ms": 2000.0,
            "started_at": at(3),
            "finished_at": at(3),
            "input_tokens": 10,
            "output_tokens": 5,
            "tool_calls": [{"name": "ask"}],
        }
    ]
    effects = [
        {
            "effect": "effect-1",
            "slot": "tests",
            "kind": "command",
            "state": "s",
            "status": "done",
            "attempts": 1,
            "result": {"exit": 0},
            "requested_at": at(1),
            "started_at": at(6),
            "finished_at": at(8),
        }
    ]
    found = build_timeline(journal(1, 5, 11), [turn("turn-1", 1, 5)], calls, effects, [], now=at(100), live=False)
    assert found.origin == at(1) and found.span_ms == 10_000
    [turn_row, effect_row] = found.rows
    main, request = turn_row.bars
    assert (main.start_ms, main.end_ms, main.left, main.width) == (0, 4000, 0, 40)
    # The request is its latency, ending when its reply was committed (its start row is written late).
    assert (request.start_ms, request.end_ms, request.kind) == (0, 2000, "call")
    assert ("tool calls", "ask") in request.details and ("tokens in / out", "10 / 5") in request.details
    # The Effect is drawn from when it started, not from when it was asked for (it waited 5 s for a worker).
    [effect] = effect_row.bars
    assert (effect.start_ms, effect.end_ms, effect.left, effect.width) == (5000, 7000, 50, 20)
    assert found.ticks[0].label == "0 ms" and found.ticks[-1].left <= 100


def test_a_live_run_draws_what_is_still_going_up_to_now_and_a_forks_inherited_turn_from_its_start() -> None:
    found = build_timeline(journal(10, 12), [turn("turn-1", 2, None, "open")], [], [], [], now=at(20), live=True)
    [bar] = found.bars
    assert bar.open and (bar.start_ms, bar.end_ms) == (0, 10_000)
    assert ("lasted", "10 s so far") in bar.details
    assert build_timeline([], [], [], [], [], now=at(1), live=True).rows == ()


def test_gate_and_timer_spans_become_bars_between_their_steps() -> None:
    spans = [
        Span("gate", "desk", "Gate desk", 2, 3, details=(("state", "waiting"),)),
        Span("timer", "t1", "xstate.after.5000", 2, None, due_ms=at(9).timestamp() * 1000),
    ]
    found = build_timeline(journal(0, 2, 4), [], [], [], spans, now=at(5), live=True)
    gate, timer = found.bars
    assert (gate.kind, gate.start_ms, gate.end_ms, gate.open, gate.step) == ("gate", 2000, 4000, False, 3)
    assert (timer.kind, timer.start_ms, timer.end_ms, timer.open) == ("timer", 2000, 9000, True)
    assert found.span_ms == 9000


class Empty(BaseModel):
    pass


def gate_then_timer() -> tuple[Any, list[dict[str, Any]]]:
    """A Machine that waits at a Gate, then sleeps 5 s, and the journal of a run through both."""
    go, late = (define_event(name=n, input=Empty, description=n) for n in ("go", "late"))
    machine = jr2_setup(events=[go, late]).create_machine(
        {
            "id": "wait",
            "initial": "asking",
            "states": {
                "asking": {"invoke": {"src": "gate", "id": "desk"}, "on": {"go": "sleeping", "late": "done"}},
                "sleeping": {"after": {"5000": "done"}},
                "done": {"type": "final"},
            },
        }
    )
    session = Session(machine, clock=SimulatedClock(0))
    session.send_gate("desk", "go", {}, at=1000)
    session.advance(5000)
    return machine, [{"seq": i, "entry": e.to_json()} for i, e in enumerate(session.journal, start=1)]


def test_walking_the_journal_finds_when_each_gate_opened_and_was_answered_and_each_timer() -> None:
    machine, rows = gate_then_timer()
    kinds = [row["entry"]["kind"] for row in rows]
    spans = {s.kind: s for s in spans_of(machine, rows)}
    gate, timer = spans["gate"], spans["timer"]
    assert (gate.opened, gate.closed) == (1, kinds.index("gate") + 1)
    assert dict(gate.details)["answered"].startswith(f"at step {gate.closed}: go")
    assert timer.opened == gate.closed and timer.closed == len(kinds) and timer.due_ms == 6000
    assert "fired" in dict(timer.details)


def test_a_live_runs_walk_goes_on_from_its_last_render_and_finds_the_same_spans(monkeypatch: Any) -> None:
    """The timeline of a live run is redrawn at each commit: its walk is kept and fed only the new entries."""
    machine, rows = gate_then_timer()
    applied: list[int] = []
    apply = Session.apply
    monkeypatch.setattr(
        Session, "apply", lambda self, entry, index: (applied.append(index), apply(self, entry, index))[1]
    )
    cut = next(i for i, row in enumerate(rows) if row["entry"]["kind"] == "gate") + 1

    def walked(run: str, upto: int) -> list[Span]:
        return walked_spans(run, machine, upto, lambda seq: [row for row in rows[:upto] if row["seq"] > seq])

    first = walked("run-a", cut)
    assert [(s.kind, s.closed) for s in first] == [("gate", cut), ("timer", None)]
    applied.clear()
    assert walked("run-a", len(rows)) == spans_of(machine, rows)
    assert applied[: len(rows) - cut] == [row["seq"] for row in rows[cut:]], "the walk started over"
    applied.clear()
    assert walked("run-b", cut) == first, "another run has a walk of its own"
    assert applied == list(range(2, cut + 1))


# -- the page and its live chart ----------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_the_timeline_page_draws_every_bar_with_its_detail(
    observer: Any, runs_with_code_review: dict[str, str]
) -> None:
    runs = runs_with_code_review
    client = Client()
    client.force_login(observer)
    page = client.get(f"/runs/{runs['done']}/timeline/").content.decode()
    for anchor in ("tl-turn-turn-1", "tl-call-1", "tl-call-2", "tl-gate-writing.asking"):
        assert f'href="#{anchor}"' in page and f'<details id="{anchor}"' in page
    assert "answered" in page and "Admins" in page and "ws-connect" not in page, "an ended run is not live"
    review = client.get(f"/runs/{runs['code_review']}/timeline/").content.decode()
    assert re.search(r'href="#tl-effect-effect-\d+"', review)
    assert (
        f'ws-connect="/ws/runs/{runs["waiting"]}/timeline/"'
        in client.get(f"/runs/{runs['waiting']}/timeline/").content.decode()
    )
    assert client.get("/runs/nosuchrun/timeline/").status_code == 404
    assert f'href="/runs/{runs["done"]}/timeline/"' in client.get(f"/runs/{runs['done']}/").content.decode()


@pytest.mark.django_db(transaction=True)
def test_the_timeline_socket_sends_the_chart_then_again_as_the_run_moves(observer: Any, settings: Any) -> None:
    settings.JR2_SCRIPTED = True

    async def main() -> None:
        host = Host(WORKFLOWS, owner="timeline-tests")
        await host.start()
        try:
            run_id = await host.start_run("notes", NOTES_DOOR)
            socket = WebsocketCommunicator(URLRouter(websocket_urlpatterns), f"/ws/runs/{run_id}/timeline/")
            socket.scope["user"] = observer
            assert (await socket.connect())[0]
            first = await socket.receive_from(timeout=10)
            assert 'id="timeline-chart"' in first and 'hx-swap-oob="true"' in first
            while "tl-gate-writing.asking" not in first:
                first = await socket.receive_from(timeout=10)
            await host.deliver(run_id, "gate", gate="writing.asking", event="reply", params={"text": "Ops"})
            later = first
            while "answered" not in later:
                later = await socket.receive_from(timeout=10)
            assert 'data-live="0"' in later or 'data-live="1"' in later
            await socket.disconnect()
        finally:
            await host.stop()

    asyncio.run(main())


@pytest.mark.django_db(transaction=True)
def test_the_timeline_socket_refuses_a_visitor_who_may_not_read(runs: dict[str, str]) -> None:
    from django.contrib.auth.models import AnonymousUser

    async def main() -> Any:
        socket = WebsocketCommunicator(URLRouter(websocket_urlpatterns), f"/ws/runs/{runs['done']}/timeline/")
        socket.scope["user"] = AnonymousUser()
        return await socket.connect()

    connected, code = asyncio.run(main())
    assert not connected and code == 4403
