"""The store remembers each open Turn's row id only from committed transactions, and forgets it when the Turn
closes: a message or a model call then costs no lookup, and a rolled-back id is never used."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from engine.models import ModelCall, Run, TurnMessage, TurnRecord
from engine.runtime import store
from engine.runtime.store import ops

pytestmark = pytest.mark.django_db(transaction=True)


def opened(turn: str) -> store.TurnOpened:
    return store.TurnOpened(
        turn, "writer", "writing", "script/x", "script/x", True, {}, f"writer@{turn}", "Write.", "You write."
    )


def message(turn: str, seq: int) -> store.Message:
    return store.Message(turn, f"writer@{turn}", seq, "user", "prompt", [{"type": "text", "text": "Write."}])


@pytest.fixture
def run_id() -> str:
    return Run.objects.create(workflow="notes", digest="d").id


def test_a_committed_turn_row_is_remembered_and_used_without_a_lookup(run_id: str) -> None:
    store.write(run_id, [opened("turn-1")])
    row = TurnRecord.objects.get(run_id=run_id, turn="turn-1").id
    assert ops._turn_rows[(run_id, "turn-1")] == row
    with CaptureQueriesContext(connection) as queries:
        store.write(run_id, [message("turn-1", 1)])
        store.write(run_id, [store.CallStarted(1, "turn-1", "script/x", True, {}, 1)])
    assert [q["sql"] for q in queries.captured_queries if "engine_turnrecord" in q["sql"].split(" VALUES")[0]] == []
    assert TurnMessage.objects.get(run_id=run_id).turn_id == row
    assert ModelCall.objects.get(run_id=run_id).turn_id == row


def test_a_rolled_back_turn_row_is_not_remembered(run_id: str) -> None:
    with pytest.raises(RuntimeError), transaction.atomic():
        store.TurnOpened.apply(opened("turn-2"), run_id, timezone.now())
        raise RuntimeError("the step failed before its commit")
    assert (run_id, "turn-2") not in ops._turn_rows
    store.write(run_id, [opened("turn-2"), message("turn-2", 1)])
    assert TurnMessage.objects.get(run_id=run_id).turn_id == TurnRecord.objects.get(run_id=run_id, turn="turn-2").id


def test_a_turn_row_read_back_is_remembered_and_a_closed_turn_is_forgotten(run_id: str) -> None:
    store.write(run_id, [opened("turn-3")])
    ops._turn_rows.clear()  # as in another process, or after a restart
    store.write(run_id, [message("turn-3", 1)])
    assert (run_id, "turn-3") in ops._turn_rows
    store.write(run_id, [store.TurnClosed("turn-3")])
    assert (run_id, "turn-3") not in ops._turn_rows


def test_a_group_commit_writes_every_step_but_the_one_whose_lease_is_lost() -> None:
    held = [Run.objects.create(workflow="notes", digest="d", lease_owner="me").id for _ in range(3)]
    lost = Run.objects.create(workflow="notes", digest="d", lease_owner="another host").id
    calls = [(store.commit, (store.Step(r, 1, run={"status": "waiting"}, owner="me"),)) for r in [*held[:2], lost]]
    calls.append((store.write, (held[2], [opened("turn-4")], "me")))
    with CaptureQueriesContext(connection) as queries:
        results = store.commit_group(calls)
    assert [type(r).__name__ for r in results] == ["datetime", "datetime", "LeaseLost", "datetime"]
    assert set(Run.objects.filter(status="waiting").values_list("id", flat=True)) == set(held[:2])
    assert Run.objects.get(id=lost).status != "waiting"
    assert TurnRecord.objects.filter(run_id=held[2], turn="turn-4").exists()
    if connection.vendor == "sqlite":  # tried as one transaction, rolled back whole, then each call alone
        assert sum(q["sql"].startswith("BEGIN") for q in queries.captured_queries) == 1 + 4


def test_a_group_commit_is_one_transaction() -> None:
    runs = [Run.objects.create(workflow="notes", digest="d", lease_owner="me").id for _ in range(5)]
    calls = [(store.commit, (store.Step(r, 1, run={"status": "waiting"}, owner="me"),)) for r in runs]
    with CaptureQueriesContext(connection) as queries:
        results = store.commit_group(calls)
    assert all(not isinstance(r, Exception) for r in results)
    assert Run.objects.filter(id__in=runs, status="waiting").count() == 5
    if connection.vendor == "sqlite":
        assert sum(q["sql"].startswith("BEGIN") for q in queries.captured_queries) == 1


def _prepared() -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        return [row[0] for row in cursor.fetchall()]


@pytest.mark.parametrize("prepared", [True, False])
def test_on_postgresql_a_steps_statements_are_prepared_once_unless_turned_off(
    run_id: str, prepared: bool, settings: Any
) -> None:
    if connection.vendor != "postgresql":
        pytest.skip("prepared statements are PostgreSQL's")
    settings.JR2_PG_PREPARED = prepared
    connection.close()  # a connection of its own: what an earlier test prepared on it is gone
    store.write(run_id, [opened("turn-9")])
    for seq in range(1, 5):
        store.write(run_id, [message("turn-9", seq)])
    inserts = [sql for sql in _prepared() if sql.startswith('INSERT INTO "engine_turnmessage"')]
    assert len(inserts) == (1 if prepared else 0), _prepared()
    assert TurnMessage.objects.filter(run_id=run_id).count() == 4


#: The tables a step writes whose unique constraint starts with the run: that index serves every read by run.
LED_BY_THE_RUN = ["journalentry", "runsnapshot", "turnrecord", "turnmessage", "modelcall", "effectrecord", "runmark"]


def _indexes(table: str) -> list[list[str]]:
    with connection.cursor() as cursor:
        found = connection.introspection.get_constraints(cursor, f"engine_{table}")
    return [c["columns"] for c in found.values() if c["index"] or c["unique"]]


@pytest.mark.parametrize("table", LED_BY_THE_RUN)
def test_a_steps_rows_keep_no_index_on_the_run_alone(table: str) -> None:
    indexes = _indexes(table)
    assert ["run_id"] not in indexes, indexes
    assert any(columns[0] == "run_id" and len(columns) > 1 for columns in indexes), indexes


def test_on_postgresql_of_a_runs_rows_only_the_run_id_has_an_index_for_like() -> None:
    """Django adds a LIKE index (varchar_pattern_ops) beside a text field's own; of the tables a run's steps write,
    only the run id's prefix search (`id__startswith`) uses one, and each kept the steps' writes paying twice."""
    if connection.vendor != "postgresql":
        pytest.skip("LIKE indexes are PostgreSQL's")
    tables = [f"engine_{t}" for t in [*LED_BY_THE_RUN, "run", "runtext", "gaterecord", "runinput", "seat"]]
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT tablename, indexdef FROM pg_indexes WHERE tablename = ANY(%s) AND indexdef LIKE %s",
            [tables, "%pattern_ops%"],
        )
        found = cursor.fetchall()
    assert [(table, "(id varchar_pattern_ops)" in d) for table, d in found] == [("engine_run", True)], found
