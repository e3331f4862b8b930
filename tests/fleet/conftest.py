"""The fleet's shared fixtures."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.soak import Fleet
from tests.live_server import ROOT, copy_workflows, server_env


@pytest.fixture
def player_fleet(tmp_path: Path) -> Iterator[Fleet]:
    """One `jr2 web` and one `jr2 worker` on a fresh database, with the operator `player` and its API token in
    `fleet.env["TOKEN"]`."""
    env = server_env(
        tmp_path,
        copy_workflows(tmp_path / "workflows"),
        {"JR2_SCRIPTED": "1", "JR2_LEASE_SECONDS": "2", "JR2_SCAN_SECONDS": "0.2"},
    )
    fleet = Fleet(tmp_path, env)
    made = subprocess.run(
        [
            sys.executable,
            str(ROOT / "manage.py"),
            "shell",
            "-c",
            "from django.contrib.auth import get_user_model\n"
            "from django.contrib.auth.models import Group\n"
            "get_user_model().objects.create_user('player').groups.add(Group.objects.get(name='operators'))\n",
        ],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert made.returncode == 0, made.stdout + made.stderr
    fleet.env["TOKEN"] = fleet.jr2("token", "create", "player").strip()
    fleet.start(webs=1, workers=1)
    try:
        yield fleet
    finally:
        fleet.stop()
