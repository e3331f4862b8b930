"""The kill soak, short: real `jr2 web` and `jr2 worker` processes on PostgreSQL and Redis, workers and a web
process SIGKILLed while runs go through them (bench/soak.py has the full version and the checks)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.databases import on_postgres

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not on_postgres() or not os.environ.get("REDIS_URL"),
        reason="the fleet runs on PostgreSQL and Redis: the suite's second pass (scripts/services run) sets them",
    ),
]


def test_runs_killed_under_a_fleet_end_as_undisturbed_ones_with_nothing_lost_or_doubled(tmp_path: Path) -> None:
    out = tmp_path / "soak.json"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench.soak",
            "--runs",
            "18",
            "--worker-kills",
            "6",
            "--web-kills",
            "1",
            "--answer-within",
            "5",
            "--timeout",
            "300",
            "--report",
            str(out),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert out.exists(), done.stdout + done.stderr
    report = json.loads(out.read_text())
    assert report["failures"] == []
    assert report["statuses"] == {"done": 18}
    assert report["killed"] == {"worker": 6, "web": 1}
    counts = report["counts"]
    assert counts["gate answers"] == 2 * 18 and counts["ledger lines"] == 2 * 6
    assert counts["disturbed: non-idempotent Effects started again"] == 0
    if report["orphaned_runs"]:
        assert report["takeover_p95"] < 3 * report["lease"] + 2
