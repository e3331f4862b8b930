"""An imported run is found by every search, as the run it was exported from: its search and inbox records are
written at import (engine/runtime/index.py's `index_import`); its open Gates stay out of the inbox (read-only)."""

from __future__ import annotations

import os
from typing import Any

import pytest

from engine.models import GateRecord, Run, RunMark, RunText
from engine.web import search
from engine.web.exchange import export_run, import_run
from tests.console.conftest import logged_in


def index_of(run_id: str) -> dict[str, Any]:
    return {
        "marks": set(RunMark.objects.filter(run_id=run_id).values_list("kind", "name")),
        "text": list(RunText.objects.filter(run_id=run_id).values_list("input", "output")),
        "gates": sorted(
            (gate, event, by, closed is None)
            for gate, event, by, closed in GateRecord.objects.filter(run_id=run_id).values_list(
                "gate", "event", "answered_by", "closed_at"
            )
        ),
        "open": list(GateRecord.objects.filter(run_id=run_id, closed_at=None).values_list("state", "accepts")),
    }


def test_an_imported_run_has_the_records_of_the_run_it_was(runs: dict[str, str]) -> None:
    for key in ("done", "waiting", "triage"):
        run_id = runs[key]
        before, data = index_of(run_id), export_run(run_id)
        assert before["marks"] and before["text"] and before["gates"], key
        Run.objects.filter(id=run_id).delete()  # as on another instance
        assert not RunMark.objects.filter(run_id=run_id).exists()
        assert import_run(data).id == run_id
        assert index_of(run_id) == before, key


def test_every_search_finds_an_imported_run(observer: Any, runs: dict[str, str]) -> None:
    imported = import_run(export_run(runs["done"]))
    waiting = import_run(export_run(runs["waiting"]))
    everything = Run.objects.all()
    for query, run in {
        "event=reply": imported,
        "passed=writing.asking": imported,
        "in=published": imported,
        "agent=writer": imported,
        "text=faster": imported,
        "in=notes.writing.asking": waiting,
        "gate=writing.asking": waiting,
    }.items():
        key, _, value = query.partition("=")
        found = search.parse({key: value}).apply(everything)
        assert found.filter(id=run.id).exists(), query
    inbox = logged_in(observer).get("/gates/").content.decode()
    assert runs["waiting"] in inbox and waiting.id not in inbox, "an imported Gate cannot be answered"
