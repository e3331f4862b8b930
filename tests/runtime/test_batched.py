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


# -- a group commit's UPDATEs and DELETEs ----------------------------------------------------------------------------


def shapes(seen: list[str], start: str) -> int:
    return sum(sql.startswith(start) for sql in seen)


def test_in_a_group_the_updates_and_deletes_made_later_go_out_once_per_shape_each_run_in_its_order() -> None:
    """Five runs, two steps each: per step a DELETE of the state left and an INSERT of the state entered, and the
    Run's UPDATE. Each run's rows see its statements in order (the second step deletes what the first inserted)."""
    ids = runs(5)
    with statements() as seen, transaction.atomic(), rows.batched(group=True):
        for left, entered in (("start", "drafting"), ("drafting", "review")):
            for run_id in ids:
                now = timezone.now()
                rows.delete(RunMark, {"run_id": run_id, "kind": RunMark.Kind.IN}, "name", [left], later=True)
                rows.insert(RunMark, [mark(run_id, entered)], now, ignore=True)
                rows.update(Run, {"status": entered}, {"id": run_id, "lease_owner": "me"}, later=True)
        assert [sql for sql in seen if not sql.startswith("BEGIN")] == []  # nothing has gone out yet
    assert all(marks(run_id) == {"review"} for run_id in ids)
    assert set(Run.objects.filter(id__in=ids).values_list("status", flat=True)) == {"review"}
    assert shapes(seen, 'DELETE FROM "engine_runmark"') == 2  # the first step's, then the second's
    assert inserts(seen, "engine_runmark") == 2
    assert shapes(seen, 'UPDATE "engine_run"') == 1


def test_outside_a_group_an_update_made_later_goes_out_at_once_and_must_match_its_row() -> None:
    [run_id] = runs(1)
    with statements() as seen, transaction.atomic(), rows.batched():
        assert rows.update(Run, {"status": "waiting"}, {"id": run_id, "lease_owner": "me"}, later=True) == 1
        assert shapes(seen, 'UPDATE "engine_run"') == 1
        with pytest.raises(LookupError, match="not mine"):
            rows.update(Run, {"status": "done"}, {"id": run_id, "lease_owner": "other"}, later=True, must=_not_mine)
    assert Run.objects.get(id=run_id).status == "waiting"


def _not_mine() -> Exception:
    return LookupError("not mine")


def test_a_group_whose_fenced_update_matched_no_row_raises_when_it_goes_out_and_writes_nothing() -> None:
    mine, theirs = runs(2)
    Run.objects.filter(id=theirs).update(lease_owner="another host")
    with pytest.raises(rows.Unmatched, match="1 of 2"), transaction.atomic(), rows.batched(group=True):
        for run_id in (mine, theirs):
            rows.update(Run, {"status": "waiting"}, {"id": run_id, "lease_owner": "me"}, later=True, must=_not_mine)
            rows.insert(RunMark, [mark(run_id, "writing")], timezone.now())
    assert not Run.objects.filter(status="waiting").exists()
    assert marks(mine) == marks(theirs) == set()


def test_a_statement_on_one_run_sends_the_tables_waiting_statements_up_to_that_runs_last_in_order() -> None:
    """Waiting: the marks of run 2 deleted, then an INSERT of run 1's and run 2's marks. A read of run 1's marks
    sends both, in that order (sending the INSERT alone would put run 2's mark before its own DELETE)."""
    first, second = runs(2)
    RunMark.objects.create(run_id=second, kind=RunMark.Kind.IN, name="old")
    with transaction.atomic(), rows.batched(group=True):
        rows.delete(RunMark, {"run_id": second, "kind": RunMark.Kind.IN}, "name", ["old", "new"], later=True)
        rows.insert(RunMark, [mark(first, "new"), mark(second, "new")], timezone.now(), ignore=True)
        assert rows.select(RunMark, ("name",), {"run_id": first}) == [("new",)]
        assert rows.select(RunMark, ("name",), {"run_id": second}) == [("new",)]
    assert marks(second) == {"new"}


def test_an_update_by_case_sets_each_row_by_its_own_column() -> None:
    from engine.models import RunInput

    [run_id] = runs(1)
    for kind in ("gate", "cancel", "other"):
        RunInput.objects.create(run_id=run_id, kind=kind, args="{}")
    reason = rows.Case("kind", {"gate": "an answer", "cancel": "a cancel"}, "an input")
    with transaction.atomic(), rows.batched(group=True):
        rows.update(RunInput, {"reason": reason, "status": "refused"}, {"run_id": run_id}, later=True)
    found = dict(RunInput.objects.filter(run_id=run_id).values_list("kind", "reason"))
    assert found == {"gate": "an answer", "cancel": "a cancel", "other": "an input"}
