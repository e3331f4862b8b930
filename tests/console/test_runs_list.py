"""The runs list says which runs are forks or imports, when each ended and how long it took."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from django.utils import timezone

from console.pages.runlist import duration_text
from engine.models import JournalEntry, Run
from tests.console.conftest import logged_in


def row(page: str, run_id: str) -> str:
    found = re.search(rf'<tr id="run-{run_id}">(.*?)</tr>', page, re.S)
    assert found, f"no row for {run_id}"
    return found.group(1)


def test_durations_read_in_two_units_at_most() -> None:
    assert duration_text(0.42) == "0.4 s"
    assert duration_text(12) == "12 s"
    assert duration_text(252) == "4 min 12 s"
    assert duration_text(3600 * 3 + 300) == "3 h 5 min"
    assert duration_text(86_400 * 2 + 3600 * 4 + 59) == "2 d 4 h"
    assert duration_text(120) == "2 min" and duration_text(-3) == "0.0 s"


def test_forks_and_imports_are_badged_with_end_time_and_duration(observer: Any, runs: dict[str, str]) -> None:
    done = Run.objects.get(id=runs["done"])
    start = timezone.now() - dt.timedelta(hours=2)
    Run.objects.filter(id=done.id).update(created_at=start)
    JournalEntry.objects.filter(run=done).update(at=start + dt.timedelta(minutes=4, seconds=12))
    fork = Run.objects.create(
        workflow="notes", digest=done.digest, status=Run.Status.WAITING, parent=done, parent_step=3
    )
    imported = Run.objects.create(
        workflow="notes", digest=done.digest, status=Run.Status.DONE, imported_from="elsewhere01"
    )
    page = logged_in(observer).get("/runs/").content.decode()
    assert "<th>ended</th><th>duration</th>" in page
    first = row(page, done.id)
    assert "4 min 12 s" in first and "live" not in first
    assert 'class="badge fork"' not in first and 'class="badge imported"' not in first
    forked = row(page, fork.id)
    assert f'class="badge fork" href="/runs/{done.id}/"' in forked and "after step 3" in forked
    assert "so far" in forked and '<span class="muted">live</span>' in forked
    assert 'class="badge imported"' in row(page, imported.id) and "elsewhere01" in row(page, imported.id)
