"""The fleet's settings come from the environment, as every jr2 setting does (docs/deploy.md names them)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

READ = """
import json, django
django.setup()
from django.conf import settings
from engine.runtime.host import Host
host = Host({}, role="worker")
print(json.dumps({"scan": host.scan_seconds, "max_runs": host.max_runs, "lease": host.lease_seconds,
                  "park": host.parking.seconds,
                  **{name: getattr(settings, name) for name in
                     ("JR2_CLAIM_BATCH", "JR2_RELAY_WAIT", "JR2_DRAIN_SECONDS")}}))
"""


def read(env: dict[str, str]) -> dict[str, float]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("JR2_") and k != "DATABASE_URL"}
    done = subprocess.run(
        [sys.executable, "-c", READ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**base, "DJANGO_SETTINGS_MODULE": "jr2.settings", **env},
    )
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def test_a_worker_reads_its_scan_claim_relay_and_drain_settings_from_the_environment() -> None:
    assert read({}) == {
        "scan": 1.0,
        "max_runs": 10000,
        "lease": 15.0,
        "park": 30.0,
        "JR2_CLAIM_BATCH": 25,
        "JR2_RELAY_WAIT": 2.0,
        "JR2_DRAIN_SECONDS": 10.0,
    }
    assert read(
        {
            "JR2_SCAN_SECONDS": "0.25",
            "JR2_MAX_RUNS": "40",
            "JR2_LEASE_SECONDS": "3",
            "JR2_CLAIM_BATCH": "7",
            "JR2_RELAY_WAIT": "60",
            "JR2_DRAIN_SECONDS": "5",
            "JR2_PARK_SECONDS": "0",
        }
    ) == {
        "scan": 0.25,
        "max_runs": 40,
        "lease": 3.0,
        "park": 0.0,
        "JR2_CLAIM_BATCH": 7,
        "JR2_RELAY_WAIT": 60.0,
        "JR2_DRAIN_SECONDS": 5.0,
    }


def test_a_negative_park_seconds_never_parks() -> None:
    assert read({"JR2_PARK_SECONDS": "-1"})["park"] is None
