"""A group commit's INSERTs wait and go out together, one statement per table (`rows.batched`), and still every
statement in the transaction sees what was written before it: a read or change of a table sends its waiting rows
first, a savepoint's rollback takes back the rows made after it, and a failed block writes nothing."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from django.db import connection, transaction
from django.utils import timezone

from engine.models import Run, RunMark, RunText
from engine.runtime import store
from engine.runtime.store import rows

pytestmark = pytest.mark.django_db(transaction=True)


@contextmanager
def statements() -> Iterator[list[str]]:
    """Every statement the connection runs, as its SQL; an `executemany` is one."""
    seen: list[str] = []

    def spy(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        seen.append(sql)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(spy):
        yield seen


def runs(n: int) -> list[str]:
    return [Run.objects.create(workflow="notes", digest="d", lease_owner="me").id for _ in range(n)]


def mark(run_id: str, name: str) -> dict[str, Any]:
    return {"run_id": run_id, "kind": RunMark.Kind.IN, "name": name}


def marks(run_id: str) -> set[str]:
    return set(RunMark.objects.filter(run_id=run_id).values_list("name", flat=True))


def inserts(seen: list[str], table: str) -> int:
    return sum(sql.startswith(f'INSERT INTO "{table}"') for sql in seen)


def test_the_inserts_of_many_steps_go_out_as_one_statement_per_table() -> None:
    ids = runs(5)
    with statements() as seen, transaction.atomic(), rows.batched():
        for run_id in ids:
            now = timezone.now()
            rows.delete(RunMark, {"run_id": run_id, "kind": RunMark.Kind.IN}, "name", ["gone"])
            rows.insert(RunMark, [mark(run_id, "a"), mark(run_id, "b")], now, ignore=True)
            rows.insert(RunText, [{"run_id": run_id, "input": "x", "output": ""}], now)
            rows.update(Run, {"status": "waiting"}, {"id": run_id, "lease_owner": "me"})
    assert inserts(seen, "engine_runmark") == 1
    assert inserts(seen, "engine_runtext") == 1
    assert all(marks(run_id) == {"a", "b"} for run_id in ids)
    assert RunText.objects.filter(run_id__in=ids).count() == 5


def test_a_statement_on_a_runs_rows_first_sends_the_rows_waiting_for_that_run() -> None:
    [first, second] = runs(2)
    with transaction.atomic(), rows.batched():
        now = timezone.now()
        rows.insert(RunMark, [mark(first, "drafting"), mark(second, "drafting")], now)
        assert rows.delete(RunMark, {"run_id": first, "kind": RunMark.Kind.IN}, "name", ["drafting"]) == 1
        assert rows.select(RunMark, ("name",), {"run_id": second}) == [("drafting",)]
    assert marks(first) == set()
    assert marks(second) == {"drafting"}


def test_a_query_of_the_orm_sees_the_rows_waiting() -> None:
    [run_id] = runs(1)
    with transaction.atomic(), rows.batched():
        rows.insert(RunMark, [mark(run_id, "writing")], timezone.now())
        assert list(RunMark.objects.filter(run_id=run_id).values_list("name", flat=True)) == ["writing"]
        assert Run.objects.filter(marks__name="writing").count() == 1


def test_a_rollback_to_a_savepoint_takes_back_the_rows_made_after_it() -> None:
    [run_id] = runs(1)
    with transaction.atomic(), rows.batched():
        rows.insert(RunMark, [mark(run_id, "kept")], timezone.now())
        with pytest.raises(RuntimeError), transaction.atomic():
            rows.insert(RunMark, [mark(run_id, "taken back")], timezone.now())
            raise RuntimeError("the inner block failed")
    assert marks(run_id) == {"kept"}


def test_a_block_that_raises_writes_nothing_and_leaves_no_rows_waiting() -> None:
    [run_id] = runs(1)
    with pytest.raises(RuntimeError), transaction.atomic(), rows.batched():
        rows.insert(RunMark, [mark(run_id, "lost")], timezone.now())
        raise RuntimeError("the step failed")
    assert marks(run_id) == set()
    assert getattr(connection, "jr2_batch", None) is None
    with transaction.atomic():
        rows.insert(RunMark, [mark(run_id, "now")], timezone.now())
    assert marks(run_id) == {"now"}


def test_a_group_whose_waiting_rows_break_a_constraint_is_written_call_by_call() -> None:
    """The broken row surfaces when the group's rows go out, not at its step: the group is rolled back whole and
    each call made again alone, so only the call that broke it fails."""
    [good, bad] = runs(2)
    RunText.objects.create(run_id=bad, input="already", output="")
    calls = [(store.write, (run_id, [_Text()], "me")) for run_id in (good, bad)]
    results = store.commit_group(calls)
    assert [type(r).__name__ for r in results] == ["datetime", "IntegrityError"]
    assert RunText.objects.get(run_id=good).input == "fresh"
    assert RunText.objects.get(run_id=bad).input == "already"


class _Text(store.Op):
    """An op that inserts the run's RunText row (a second one breaks its primary key)."""

    def apply(self, run_id: str, now: Any) -> None:
        rows.insert(RunText, [{"run_id": run_id, "input": "fresh", "output": ""}], now)
