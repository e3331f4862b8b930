"""`/metrics` in Prometheus' text format, on a live `jr2 up`: a notes run counted as started and ended, its Gate's
wait, its picks by outcome; refused without a token, open with JR2_METRICS_OPEN=1."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.live_server import LiveServer, served


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    with served(tmp_path_factory.mktemp("metrics"), {"JR2_SCRIPTED": "1"}) as live:
        yield live


def value(text: str, name: str, **labels: str) -> float:
    """The sample `name{labels...}` of a Prometheus text page (labels matched as a subset)."""
    for line in text.splitlines():
        match = re.match(r"^([a-zA-Z_:][\w:]*)(\{(.*)\})? (\S+)$", line)
        if not match or match.group(1) != name:
            continue
        found = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', match.group(3) or ""))
        if all(found.get(k) == v for k, v in labels.items()):
            return float(match.group(4))
    raise AssertionError(f"no sample {name}{labels} in /metrics:\n{text[:3000]}")


def test_a_run_is_counted_at_metrics_with_a_token(server: LiveServer) -> None:
    run_id = server.start_run("notes", {"changes": "A new export button."}, "waiting")
    with server.client() as client:
        waiting = client.get("/metrics")
    assert waiting.status_code == 200, waiting.text[:300]
    assert waiting.headers["content-type"].startswith("text/plain")
    assert value(waiting.text, "jr2_gates_open", jr2_workflow="notes") >= 1
    server.answer(run_id, "writing.asking", "reply", text="Admins")
    server.wait_for(run_id, "done")
    with server.client() as client:
        text = client.get("/metrics").text
    assert value(text, "jr2_runs_started_total", jr2_workflow="notes") >= 1
    assert value(text, "jr2_runs_ended_total", jr2_workflow="notes", jr2_run_status="done") >= 1
    assert value(text, "jr2_picks_total", jr2_workflow="notes", jr2_pick_outcome="outstanding") >= 1
    assert value(text, "jr2_picks_total", jr2_workflow="notes", jr2_pick_outcome="delivered") >= 1
    assert value(text, "jr2_gate_wait_duration_seconds_count", jr2_workflow="notes") >= 1
    assert value(text, "jr2_turn_duration_seconds_count", jr2_workflow="notes") >= 1


def test_metrics_without_a_token_or_with_a_wrong_one_is_refused(server: LiveServer) -> None:
    with httpx.Client(base_url=server.url, timeout=30) as anonymous:
        bare = anonymous.get("/metrics")
        wrong = anonymous.get("/metrics", headers={"Authorization": "Bearer jr2_" + "x" * 43})
    assert bare.status_code == 401 and "Authorization: Bearer" in bare.json()["detail"]
    assert wrong.status_code == 401 and "not valid" in wrong.json()["detail"]
    assert "jr2_" not in bare.text.replace("JR2_METRICS_OPEN", "")


def test_metrics_is_open_with_jr2_metrics_open(tmp_path: Path) -> None:
    with served(tmp_path, {"JR2_METRICS_OPEN": "1"}) as live, httpx.Client(base_url=live.url, timeout=30) as anonymous:
        page = anonymous.get("/metrics")
    assert page.status_code == 200
    assert "# TYPE" in page.text
