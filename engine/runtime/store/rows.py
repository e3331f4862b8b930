"""Rows a step writes, inserted straight into their tables: one `executemany` per table, without building a model
instance per row or asking the database for the new ids (nothing on the hot path reads them back); and the
UPDATEs of a step, by equality on a few columns, without building a query.

A step writes about twenty rows (journal entries, messages, model calls, inbox and search records); through the
ORM each cost a model instance, a compiled INSERT and a RETURNING, which was most of a step's time on the host's
database thread. The values go through each field's own `get_db_prep_save`, so JSON, times and foreign keys are
stored exactly as the ORM stores them, on SQLite and on PostgreSQL; a field the row does not give gets its default
(`auto_now` and `auto_now_add` fields: the step's time).

Inside `batched()` (a step's transaction, or a group commit's) the INSERTs wait and go out together at its end, one
`executemany` per table for every step of the group: a thousand runs moving at once pay a statement per table per
group, not per step. A statement that reads or changes a table with rows waiting (an UPDATE, a DELETE, a SELECT,
the ORM's own) sends that table's rows first, so every statement sees what the steps before it wrote.

In a group commit (`batched(group=True)`) the UPDATEs and DELETEs that say `later=True` wait too, and go out one
`executemany` per statement at the group's end: on PostgreSQL a step's half a dozen single-row statements each
cost a round trip, and psycopg sends an `executemany` as one. The order of the statements on each run's rows is
kept (a statement waits after any of another shape on the same table and run; `_Batch`). One that `must` match
a row (fencing: the Run's lease, an input still pending) is checked when it goes out, by the rows the whole
`executemany` matched; when one of them matched none, the block raises `Unmatched` and the group is written call
by call, where each statement is sent and checked at once (engine/runtime/store/step.py).
"""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections, models
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models.fields import AutoFieldMixin

__all__ = ["insert", "insert_one", "update", "delete", "select", "batched", "Case", "Unmatched"]

#: How a value is made ready for the database (`Field.get_db_prep_save`, or a short cut with the same result).
_Prep = Callable[[Any, BaseDatabaseWrapper], Any]
_Columns = tuple[tuple[str, _Prep, Callable[[dt.datetime, BaseDatabaseWrapper], Any]], ...]


def _db() -> BaseDatabaseWrapper:
    """This thread's connection, looked up once per statement (each `django.db.connection` attribute is a lookup)."""
    return connections[DEFAULT_DB_ALIAS]


def _cursor(db: BaseDatabaseWrapper) -> Any:
    """A cursor for the hot path's statements. On PostgreSQL it binds parameters on the server, so psycopg
    prepares each statement once it has run a few times on the connection and the server stops parsing and
    planning it at every step (Django's own cursors bind on the client, which cannot be prepared), and sends an
    `executemany` in one pipeline. Django's execute wrappers see its statements as any other; while queries are
    logged (DEBUG, a test capturing them), Django's own cursor is used, whose log shows each statement whole."""
    if db.vendor != "postgresql" or db.queries_logged or not settings.JR2_PG_PREPARED:
        return db.cursor()
    from django.db.backends.postgresql.base import ServerBindingCursor

    db.close_if_health_check_failed()
    db.ensure_connection()
    raw = db.connection
    if raw.prepare_threshold is None:  # Django turns psycopg's preparing off; its own cursors never prepare
        raw.prepare_threshold = PREPARE_AFTER
    db.validate_thread_sharing()
    return db.make_cursor(ServerBindingCursor(raw))


#: psycopg prepares a statement on a connection once it has run this many times there.
PREPARE_AFTER = 2


def insert(
    model: type[models.Model], rows: Sequence[Mapping[str, Any]], now: dt.datetime, ignore: bool = False
) -> None:
    """Insert `rows` (attribute name -> value) into `model`'s table; `ignore`: a row that would break a unique
    constraint is left out (ON CONFLICT DO NOTHING, as `bulk_create(ignore_conflicts=True)`)."""
    if not rows:
        return
    db = _db()
    sql, columns = _statement(model, ignore, db)
    params = [
        tuple(prep(row[name], db) if name in row else default(now, db) for name, prep, default in columns)
        for row in rows
    ]
    batch: _Batch | None = getattr(db, "jr2_batch", None)
    if batch is not None:
        key = _run_key(model)
        batch.add(sql, db.ops.quote_name(model._meta.db_table), params, {row.get(key) if key else None for row in rows})
        return
    with _cursor(db) as cursor:
        if len(params) == 1:
            cursor.execute(sql, params[0])
        else:
            cursor.executemany(sql, params)


def insert_one(model: type[models.Model], row: Mapping[str, Any], now: dt.datetime) -> int:
    """Insert one row; its new primary key."""
    db = _db()
    sql, columns = _statement(model, False, db)
    params = tuple(prep(row[name], db) if name in row else default(now, db) for name, prep, default in columns)
    with _ready(db, model, row), _cursor(db) as cursor:
        if db.features.can_return_columns_from_insert:
            cursor.execute(f"{sql} RETURNING {db.ops.quote_name(model._meta.pk.column)}", params)
            return int(cursor.fetchone()[0])
        cursor.execute(sql, params)
        return int(cursor.lastrowid)


class Unmatched(Exception):
    """A waiting statement that must match a row matched none when its group's statements went out (which one is
    not known there): the group is written again call by call, where each is checked as it is sent."""


@dataclass(frozen=True)
class Case:
    """A value that depends on another column of the row (`CASE column WHEN ... THEN ... ELSE ... END`)."""

    column: str
    values: Mapping[Any, Any]
    default: Any


def update(
    model: type[models.Model],
    changes: Mapping[str, Any],
    where: Mapping[str, Any],
    later: bool = False,
    must: Callable[[], Exception] | None = None,
) -> int:
    """UPDATE `model`'s rows whose columns equal `where` (attribute name -> value; None: IS NULL) with `changes`
    (attribute name -> value, or a `Case`); how many rows changed. `must`: the row must be there (`where` names at
    most one row), else the error it makes is raised. `later`: nothing reads the result now, so in a group commit
    the statement waits and goes out with the others of its shape (1 is returned: it is checked then)."""
    db, preps = _db(), _preps(model)
    conditions, matched = _where(db, model, where)
    shape = tuple((name, tuple(value.values)) if isinstance(value, Case) else name for name, value in changes.items())
    key = (model, shape, tuple(conditions))
    sql = _UPDATES.get(key)
    if sql is None:
        sql = _UPDATES[key] = _update_sql(db, model, changes, conditions)
    params: list[Any] = []
    for name, value in changes.items():
        if isinstance(value, Case):
            for when, then in value.values.items():
                params += [preps[value.column](when, db), preps[name](then, db)]
            params.append(preps[name](value.default, db))
        else:
            params.append(preps[name](value, db))
    params += matched
    if later and _deferred(db, model, where, sql, params, must is not None):
        return 1
    with _ready(db, model, where), _cursor(db) as cursor:
        cursor.execute(sql, params)
        changed = int(cursor.rowcount)
    if must is not None and changed == 0:
        raise must()
    return changed


def _update_sql(
    db: BaseDatabaseWrapper, model: type[models.Model], changes: Mapping[str, Any], conditions: list[str]
) -> str:
    quote, fields = db.ops.quote_name, _fields(model)
    sets = []
    for name, value in changes.items():
        column = quote(fields[name].column)
        if isinstance(value, Case):
            cases = " ".join("WHEN %s THEN %s" for _ in value.values)
            sets.append(f"{column} = CASE {quote(fields[value.column].column)} {cases} ELSE %s END")
        else:
            sets.append(f"{column} = %s")
    return f"UPDATE {quote(model._meta.db_table)} SET {', '.join(sets)} WHERE {' AND '.join(conditions)}"


def _deferred(
    db: BaseDatabaseWrapper,
    model: type[models.Model],
    where: Mapping[str, Any],
    sql: str,
    params: list[Any],
    must: bool,
) -> bool:
    """Queue a statement of a group commit to go out with the others of its shape; False outside one."""
    batch: _Batch | None = getattr(db, "jr2_batch", None)
    if batch is None or not batch.group:
        return False
    key = _run_key(model)
    batch.add(sql, db.ops.quote_name(model._meta.db_table), [tuple(params)], {where.get(key) if key else None}, must)
    return True


def delete(
    model: type[models.Model],
    where: Mapping[str, Any],
    name: str = "",
    values: Sequence[Any] = (),
    later: bool = False,
) -> int:
    """DELETE `model`'s rows whose columns equal `where` (attribute name -> value) and, with `name`, whose `name`
    column is one of `values` (nothing is deleted when `values` is empty); how many rows went. Without the ORM's
    collector, which reads the rows first to find what points at them: only for tables nothing points at.
    `later`: as `update`'s (the count returned is then 0)."""
    if name and not values:
        return 0
    db, preps = _db(), _preps(model)
    quote, fields = db.ops.quote_name, _fields(model)
    conditions, params = _where(db, model, where)
    if name:
        conditions.append(f"{quote(fields[name].column)} IN ({', '.join(['%s'] * len(values))})")
        params += [preps[name](value, db) for value in values]
    sql = f"DELETE FROM {quote(model._meta.db_table)} WHERE {' AND '.join(conditions)}"
    if later and _deferred(db, model, where, sql, params, False):
        return 0
    with _ready(db, model, where), _cursor(db) as cursor:
        cursor.execute(sql, params)
        return int(cursor.rowcount)


def select(model: type[models.Model], names: Sequence[str], where: Mapping[str, Any]) -> list[tuple[Any, ...]]:
    """The `names` columns (attribute names) of `model`'s rows whose columns equal `where`, each value as the ORM
    reads it (JSON decoded), in primary key order: a read on the hot path without building a query or models."""
    db = _db()
    quote, fields = db.ops.quote_name, _fields(model)
    chosen = [fields[name] for name in names]
    conditions, params = _where(db, model, where)
    sql = (
        f"SELECT {', '.join(quote(f.column) for f in chosen)} FROM {quote(model._meta.db_table)} "
        f"WHERE {' AND '.join(conditions) or '1 = 1'} ORDER BY {quote(model._meta.pk.column)}"
    )
    readers = [_reader(f, db) for f in chosen]
    with _ready(db, model, where), _cursor(db) as cursor:
        cursor.execute(sql, params)
        return [tuple(read(value) for read, value in zip(readers, row)) for row in cursor.fetchall()]


#: How the statements that make, release and roll back to a savepoint begin.
_SAVEPOINTS = ("SAVEPOINT", "RELEASE", "ROLLBACK")


@dataclass
class _Waiting:
    """The rows of one waiting statement (its SQL, and whether each row must match one), its table (quoted, as
    statements name it) and the runs its rows belong to."""

    sql: str
    must: bool
    table: str
    params: list[tuple[Any, ...]]
    runs: set[Any]

    def meets(self, table: str, runs: set[Any]) -> bool:
        """Whether a statement on `table`'s rows of `runs` could see or change these rows (None: any run)."""
        return self.table == table and (None in runs or None in self.runs or not self.runs.isdisjoint(runs))


class _Batch:
    """The statements waiting in a `batched()` block, in the order they go out. `group`: UPDATEs and DELETEs made
    `later` wait too.

    A statement joins the last waiting one of its shape unless a statement of another shape on the same table and
    run waits after that one; then it waits after it, apart. So each run's rows of a table see their statements in
    the order they were made, and runs moving side by side share one `executemany` per shape (a DELETE and an
    INSERT of marks per step, a thousand steps: two statements, not two thousand)."""

    def __init__(self, group: bool) -> None:
        self.group = group
        self.pending: list[_Waiting] = []
        #: The statements under way are the waiting rows going out, or ours that sent what they need first
        #: (`_ready`): the wrapper lets them by.
        self.sending = False

    def add(self, sql: str, table: str, params: list[tuple[Any, ...]], runs: set[Any], must: bool = False) -> None:
        for waiting in reversed(self.pending):
            if waiting.sql == sql and waiting.must == must:
                waiting.params.extend(params)
                waiting.runs.update(runs)
                return
            if waiting.meets(table, runs):
                break
        self.pending.append(_Waiting(sql, must, table, params, set(runs)))

    def send(self, db: BaseDatabaseWrapper, touched: Callable[[_Waiting], bool] | None = None) -> None:
        """Send the waiting statements, checking those that must match. With `touched`: of each table, those up to
        the last one it picks (a statement waiting before it on that table may hold rows of the same runs)."""
        if touched is None:
            chosen, self.pending = self.pending, []
        else:
            last = {waiting.table: i for i, waiting in enumerate(self.pending) if touched(waiting)}
            if not last:
                return
            picked = [i <= last.get(waiting.table, -1) for i, waiting in enumerate(self.pending)]
            chosen = [waiting for waiting, pick in zip(self.pending, picked) if pick]
            self.pending = [waiting for waiting, pick in zip(self.pending, picked) if not pick]
        if not chosen:
            return
        self.sending = True
        try:
            with _cursor(db) as cursor:
                for waiting in chosen:
                    if len(waiting.params) == 1:
                        cursor.execute(waiting.sql, waiting.params[0])
                    else:
                        cursor.executemany(waiting.sql, waiting.params)
                    if waiting.must and cursor.rowcount < len(waiting.params):
                        raise Unmatched(
                            f"{len(waiting.params) - cursor.rowcount} of {len(waiting.params)} waiting statements "
                            f"on {waiting.table} matched no row"
                        )
        finally:
            self.sending = False

    def before(self, execute: Callable[..., Any], sql: str, params: Any, many: bool, context: Any) -> Any:
        """Django's execute wrapper: a statement naming a table with rows waiting sends them first; a savepoint's
        statement sends them all (so a rollback to it takes back the rows made after it, as it would have)."""
        if self.pending and not self.sending:
            if sql.lstrip()[:9].upper().startswith(_SAVEPOINTS):
                self.send(context["connection"])
            else:
                self.send(context["connection"], lambda waiting: waiting.table in sql)
        return execute(sql, params, many, context)


@contextlib.contextmanager
def _ready(db: BaseDatabaseWrapper, model: type[models.Model], where: Mapping[str, Any]) -> Iterator[None]:
    """Around one of this module's statements on `model`'s rows matching `where` (for an INSERT, the row), in a
    `batched()` block: first send the waiting rows it could see or clash with, then let it past the wrapper. A
    statement on one run's rows (`where` names the run) needs only the table's rows when some are that run's; any
    other, all of the table's."""
    batch: _Batch | None = getattr(db, "jr2_batch", None)
    if batch is None or not batch.pending or batch.sending:
        yield
        return
    table, key = db.ops.quote_name(model._meta.db_table), _run_key(model)
    runs = {where.get(key)} if key and key in where else {None}
    batch.send(db, lambda waiting: waiting.meets(table, runs))
    batch.sending = True
    try:
        yield
    finally:
        batch.sending = False


def _run_key(model: type[models.Model]) -> str | None:
    """The attribute naming the run a row of `model` belongs to: `run_id`, or the Run's own `id`."""
    fields = _fields(model)
    if "run_id" in fields:
        return "run_id"
    return "id" if model._meta.label == "engine.Run" else None


@contextlib.contextmanager
def batched(group: bool = False) -> Iterator[None]:
    """Hold this thread's INSERTs (and in a group commit, its UPDATEs and DELETEs made `later`) until the block
    ends, then send them, one `executemany` per statement (see the module docstring); open it inside the
    transaction, so the rows go out before it commits. When the block raises, the waiting rows are dropped with
    the transaction that would have held them. A block inside another is part of it."""
    db = _db()
    if getattr(db, "jr2_batch", None) is not None:
        yield
        return
    batch = db.jr2_batch = _Batch(group)
    try:
        with db.execute_wrapper(batch.before):
            yield
            batch.send(db)
    finally:
        db.jr2_batch = None


def _where(db: BaseDatabaseWrapper, model: type[models.Model], where: Mapping[str, Any]) -> tuple[list[str], list[Any]]:
    """The conditions "column = %s" (None: "column IS NULL") of `where` (attribute name -> value), and their
    parameters, made ready."""
    quote, fields, preps = db.ops.quote_name, _fields(model), _preps(model)
    conditions = [
        f"{quote(fields[name].column)} IS NULL" if value is None else f"{quote(fields[name].column)} = %s"
        for name, value in where.items()
    ]
    return conditions, [preps[name](value, db) for name, value in where.items() if value is not None]


def _reader(field: models.Field, db: BaseDatabaseWrapper) -> Callable[[Any], Any]:
    """How the ORM turns the database's value of `field` into Python: the backend's converters and the field's
    own (a SQLite boolean is an integer, a JSON value is text on some drivers), as its compiler applies them."""
    col = field.get_col(field.model._meta.db_table)
    converters = db.ops.get_db_converters(col) + col.get_db_converters(db)

    def read(value: Any) -> Any:
        for convert in converters:
            value = convert(value, col, db)
        return value

    return read


_FIELDS: dict[type[models.Model], dict[str, models.Field]] = {}
_PREPS: dict[type[models.Model], dict[str, _Prep]] = {}
_STATEMENTS: dict[tuple[type[models.Model], bool, str], tuple[str, _Columns]] = {}
_UPDATES: dict[tuple[Any, ...], str] = {}


def _fields(model: type[models.Model]) -> dict[str, models.Field]:
    found = _FIELDS.get(model)
    if found is None:
        found = _FIELDS[model] = {f.attname: f for f in model._meta.concrete_fields}
    return found


def _preps(model: type[models.Model]) -> dict[str, _Prep]:
    found = _PREPS.get(model)
    if found is None:
        found = _PREPS[model] = {name: _prep(field) for name, field in _fields(model).items()}
    return found


def _statement(model: type[models.Model], ignore: bool, db: BaseDatabaseWrapper) -> tuple[str, _Columns]:
    """The INSERT of every concrete column but an automatic primary key, and how each value is made ready (made
    once per model and database)."""
    found = _STATEMENTS.get((model, ignore, db.vendor))
    if found is None:
        found = _STATEMENTS[(model, ignore, db.vendor)] = _new_statement(model, ignore, db)
    return found


def _new_statement(model: type[models.Model], ignore: bool, db: BaseDatabaseWrapper) -> tuple[str, _Columns]:
    quote, preps = db.ops.quote_name, _preps(model)
    fields = [f for f in model._meta.concrete_fields if not (f.primary_key and isinstance(f, models.AutoField))]
    columns: _Columns = tuple((f.attname, preps[f.attname], _default(f)) for f in fields)
    sql = (
        f"INSERT INTO {quote(model._meta.db_table)} ({', '.join(quote(f.column) for f in fields)}) "
        f"VALUES ({', '.join(['%s'] * len(fields))})"
    )
    return sql + (" ON CONFLICT DO NOTHING" if ignore else ""), columns


def _as_is(field: models.Field) -> type | None:
    """The type of value `field.get_db_prep_save` hands back unchanged (the ORM's own result): a str into a text
    column, an int into an integer one, a bool into a boolean one; None for any other field (a JSON or time
    column, or a field of its own making)."""
    cls, plain = type(field), models.Field.get_db_prep_value
    if cls.get_db_prep_value is plain and cls.get_prep_value is models.CharField.get_prep_value:
        return str
    if cls.get_db_prep_value is plain and cls.get_prep_value is models.TextField.get_prep_value:
        return str
    if cls.get_db_prep_value is plain and cls.get_prep_value is models.BooleanField.get_prep_value:
        return bool
    integer = (models.IntegerField.get_db_prep_value, AutoFieldMixin.get_db_prep_value)
    if cls.get_db_prep_value in integer and cls.get_prep_value is models.IntegerField.get_prep_value:
        return int
    return None


def _prep(field: models.Field) -> _Prep:
    """`field.get_db_prep_save`, short-cut for what it would hand back unchanged (most of a step's values)."""
    kind = _as_is(field.target_field if isinstance(field, models.ForeignKey) else field)
    if isinstance(field, models.DateTimeField):
        return _timed(field)
    if kind is None:
        return field.get_db_prep_save

    def as_is(value: Any, db: BaseDatabaseWrapper) -> Any:
        return value if type(value) is kind else field.get_db_prep_save(value, db)

    return as_is


def _timed(field: models.Field) -> _Prep:
    """`field.get_db_prep_save` of a time, remembering the last one: a step stamps all its rows with its own time."""
    last: list[tuple[Any, BaseDatabaseWrapper | None, Any]] = [(None, None, None)]

    def timed(value: Any, db: BaseDatabaseWrapper) -> Any:
        seen, on, ready = last[0]
        if value is not None and value is seen and db is on:
            return ready
        ready = field.get_db_prep_save(value, db)
        last[0] = (value, db, ready)  # one tuple replaced whole: another thread sees the old pair or the new one
        return ready

    return timed


def _default(field: models.Field) -> Callable[[dt.datetime, BaseDatabaseWrapper], Any]:
    if getattr(field, "auto_now", False) or getattr(field, "auto_now_add", False):
        return _preps(field.model)[field.attname]  # the field's own, remembering the step's time
    return lambda now, db: field.get_db_prep_save(field.get_default(), db)
