"""Crash recovery: the real server is SIGKILLed in the middle of a run and started again on the same database.

Four moments (the issue's): while an Effect runs, while a model request is in flight, while the run waits at a
Gate, and between an input's commit and its notification. Each time the run finishes with the same output as an
undisturbed run, every journal entry written before the kill is still there, in order, and a non-idempotent
Effect has not run twice (each Effect counts its runs in a file it appends to)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.fakes.model_server import ModelServer, tool_call
from tests.live_server import LiveServer, make_server

CRASHY = (Path(__file__).parent / "crashy.py").read_text()
EXPECTED = {"result": "reply: yes"}


def crash_server(tmp: Path, **env: str) -> tuple[LiveServer, Path]:
    counts = tmp / "counts"
    counts.mkdir()
    server = make_server(tmp, {"CRASH_COUNT_DIR": str(counts), **env}, files={"crashy.py": CRASHY})
    return server, counts


def runs_of(counts: Path, name: str) -> int:
    path = counts / name
    return len(path.read_text().splitlines()) if path.exists() else 0


def until(check: Callable[[], Any], timeout: float = 30, what: str = "") -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what or check}")


def assert_kept(before: list[dict[str, Any]], after: list[dict[str, Any]]) -> None:
    """Nothing journaled before the kill was lost, and the journal has no gap or duplicate."""
    assert [e["seq"] for e in after] == list(range(1, len(after) + 1))
    assert [(e["seq"], e["kind"], e["entry"]) for e in after[: len(before)]] == [
        (e["seq"], e["kind"], e["entry"]) for e in before
    ]


def finish(server: LiveServer, run_id: str) -> dict[str, Any]:
    server.wait_for(run_id, "waiting")
    assert server.send(run_id, "human", "reply", text="yes").status_code == 200
    return server.wait_for(run_id, "done", "failed")


@pytest.mark.slow
def test_an_undisturbed_run_is_the_reference(tmp_path: Path) -> None:
    server, counts = crash_server(tmp_path)
    try:
        run = finish(server, server.start_run("crashy", None))
        assert run["status"] == "done" and run["output"] == EXPECTED
        assert (runs_of(counts, "build"), runs_of(counts, "check")) == (1, 1)
    finally:
        server.stop()


def test_killed_while_a_non_idempotent_effect_runs_it_is_not_run_again(tmp_path: Path) -> None:
    server, counts = crash_server(tmp_path, CRASH_SLEEP="5")
    try:
        run_id = server.start_run("crashy", None)
        until(lambda: runs_of(counts, "build") == 1, what="the build Effect to start")
        before = server.journal(run_id)
        server.restart({"CRASH_SLEEP": "0"})
        run = finish(server, run_id)
        assert run["status"] == "done" and run["output"] == EXPECTED
        assert runs_of(counts, "build") == 1, "a non-idempotent Effect ran twice"
        after = server.journal(run_id)
        assert_kept(before, after)
        [failed] = [e["entry"] for e in after if e["kind"] == "effect_failed"]
        assert "interrupted by a restart" in failed["error"]["message"]
        with server.client() as client:
            turns = client.get(f"/api/runs/{run_id}/turns").json()
        told = [b["content"] for m in turns[0]["messages"] for b in m["content"] if b.get("type") == "tool_result"]
        assert any(t.startswith("build failed: ") and "interrupted by a restart" in t for t in told)
    finally:
        server.stop()


def test_killed_while_an_idempotent_effect_runs_it_runs_again(tmp_path: Path) -> None:
    server, counts = crash_server(tmp_path, CRASH_SLEEP="2")
    try:
        run_id = server.start_run("crashy", None)
        until(lambda: runs_of(counts, "check") == 1, what="the check Effect to start")
        before = server.journal(run_id)
        server.restart({"CRASH_SLEEP": "0"})
        run = finish(server, run_id)
        assert run["status"] == "done" and run["output"] == EXPECTED
        assert (runs_of(counts, "build"), runs_of(counts, "check")) == (1, 2)
        after = server.journal(run_id)
        assert_kept(before, after)
        started = [e["entry"] for e in after if e["kind"] == "effect_started"]
        assert [s.get("attempt") for s in started] == [1, 1, 2]
    finally:
        server.stop()


def test_killed_while_waiting_at_a_gate_the_gate_is_still_open(tmp_path: Path) -> None:
    server, counts = crash_server(tmp_path)
    try:
        run_id = server.start_run("crashy", None)
        waiting = server.wait_for(run_id, "waiting")
        before = server.journal(run_id)
        server.restart()
        again = server.wait_for(run_id, "waiting")
        assert [g["id"] for g in again["gates"]] == [g["id"] for g in waiting["gates"]] == ["human"]
        run = finish(server, run_id)
        assert run["status"] == "done" and run["output"] == EXPECTED
        assert (runs_of(counts, "build"), runs_of(counts, "check")) == (1, 1)
        assert_kept(before, server.journal(run_id))
    finally:
        server.stop()


def test_killed_between_a_gate_answers_commit_and_its_notification(tmp_path: Path) -> None:
    server, counts = crash_server(tmp_path, JR2_CRASH_AFTER_COMMIT="gate")
    try:
        run_id = server.start_run("crashy", None)
        server.wait_for(run_id, "waiting")
        with pytest.raises(httpx.HTTPError):
            server.send(run_id, "human", "reply", text="yes")
        until(lambda: server.process is not None and server.process.poll() is not None, what="the server to die")
        server.env.pop("JR2_CRASH_AFTER_COMMIT")
        server.restart()
        run = server.wait_for(run_id, "done", "failed")
        assert run["status"] == "done" and run["output"] == EXPECTED
        entries = server.journal(run_id)
        assert [e["kind"] for e in entries].count("gate") == 1
        assert [e["seq"] for e in entries] == list(range(1, len(entries) + 1))
        assert (runs_of(counts, "build"), runs_of(counts, "check")) == (1, 1)
    finally:
        server.stop()


def test_killed_while_a_model_request_is_in_flight_it_is_asked_again(tmp_path: Path) -> None:
    ask = {"question": "Who reads these?"}
    with ModelServer() as model:
        model.queue(
            tool_call("ask", ask, delay=30), tool_call("ask", ask), tool_call("done", {"notes": "- Faster start-up."})
        )
        server = make_server(
            tmp_path,
            {"ANTHROPIC_API_KEY": "test-key", "JR2_ANTHROPIC_BASE_URL": model.url, "JR2_PROVIDER_MAX_RETRIES": "0"},
        )
        try:
            run_id = server.start_run("notes", {"changes": "Faster start-up."})
            until(lambda: model.count() == 1, what="the first model request")
            before = server.journal(run_id)
            server.restart()
            until(lambda: model.count() == 2, what="the request to be asked again")
            first, second = model.requests[0].body, model.requests[1].body
            assert second["messages"] == first["messages"] and second["tools"] == first["tools"]
            server.wait_for(run_id, "waiting")
            assert server.send(run_id, "writing.asking", "reply", text="Admins").status_code == 200
            run = server.wait_for(run_id, "done", "failed")
            assert run["status"] == "done" and run["output"] == {"notes": "- Faster start-up."}
            assert_kept(before, server.journal(run_id))
            with server.client() as client:
                calls = client.get(f"/api/runs/{run_id}/turns").json()[0]["calls"]
            assert [c["status"] for c in calls] == ["interrupted", "done", "done"]
        finally:
            server.stop()
