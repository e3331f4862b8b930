"""Rows a step writes, inserted straight into their tables: one `executemany` per table, without building a model
instance per row or asking the database for the new ids (nothing on the hot path reads them back); and the
UPDATEs of a step, by equality on a few columns, without building a query.

A step writes about twenty rows (journal entries, messages, model calls, inbox and search records); through the
ORM each cost a model instance, a compiled INSERT and a RETURNING, which was most of a step's time on the host's
database thread. The values go through each field's own `get_db_prep_save`, so JSON, times and foreign keys are
stored exactly as the ORM stores them, on SQLite and on PostgreSQL; a field the row does not give gets its default
(`auto_now` and `auto_now_add` fields: the step's time).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from django.db import connection, models

__all__ = ["insert", "insert_one", "update", "delete", "select"]

_Columns = tuple[tuple[str, Callable[[Any], Any], Callable[[dt.datetime], Any]], ...]


def insert(
    model: type[models.Model], rows: Sequence[Mapping[str, Any]], now: dt.datetime, ignore: bool = False
) -> None:
    """Insert `rows` (attribute name -> value) into `model`'s table; `ignore`: a row that would break a unique
    constraint is left out (ON CONFLICT DO NOTHING, as `bulk_create(ignore_conflicts=True)`)."""
    if not rows:
        return
    sql, columns = _statement(model, ignore)
    params = [
        tuple(prep(row[name]) if name in row else default(now) for name, prep, default in columns) for row in rows
    ]
    with connection.cursor() as cursor:
        if len(params) == 1:
            cursor.execute(sql, params[0])
        else:
            cursor.executemany(sql, params)


def insert_one(model: type[models.Model], row: Mapping[str, Any], now: dt.datetime) -> int:
    """Insert one row; its new primary key."""
    sql, columns = _statement(model, False)
    params = tuple(prep(row[name]) if name in row else default(now) for name, prep, default in columns)
    with connection.cursor() as cursor:
        if connection.features.can_return_columns_from_insert:
            cursor.execute(f"{sql} RETURNING {connection.ops.quote_name(model._meta.pk.column)}", params)
            return int(cursor.fetchone()[0])
        cursor.execute(sql, params)
        return int(cursor.lastrowid)


def update(model: type[models.Model], changes: Mapping[str, Any], where: Mapping[str, Any]) -> int:
    """UPDATE `model`'s rows whose columns equal `where` (attribute name -> value; None: IS NULL) with `changes`
    (attribute name -> value); how many rows changed."""
    quote, fields = connection.ops.quote_name, _fields(model)
    sets = ", ".join(f"{quote(fields[name].column)} = %s" for name in changes)
    conditions = " AND ".join(
        f"{quote(fields[name].column)} IS NULL" if value is None else f"{quote(fields[name].column)} = %s"
        for name, value in where.items()
    )
    params = [fields[name].get_db_prep_save(value, connection) for name, value in changes.items()]
    params += [fields[name].get_db_prep_save(value, connection) for name, value in where.items() if value is not None]
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE {quote(model._meta.db_table)} SET {sets} WHERE {conditions}", params)
        return int(cursor.rowcount)


def delete(model: type[models.Model], where: Mapping[str, Any], name: str = "", values: Sequence[Any] = ()) -> int:
    """DELETE `model`'s rows whose columns equal `where` (attribute name -> value) and, with `name`, whose `name`
    column is one of `values` (nothing is deleted when `values` is empty); how many rows went. Without the ORM's
    collector, which reads the rows first to find what points at them: only for tables nothing points at."""
    if name and not values:
        return 0
    quote, fields = connection.ops.quote_name, _fields(model)
    conditions = [f"{quote(fields[key].column)} = %s" for key in where]
    params = [fields[key].get_db_prep_save(value, connection) for key, value in where.items()]
    if name:
        conditions.append(f"{quote(fields[name].column)} IN ({', '.join(['%s'] * len(values))})")
        params += [fields[name].get_db_prep_save(value, connection) for value in values]
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {quote(model._meta.db_table)} WHERE {' AND '.join(conditions)}", params)
        return int(cursor.rowcount)


def select(model: type[models.Model], names: Sequence[str], where: Mapping[str, Any]) -> list[tuple[Any, ...]]:
    """The `names` columns (attribute names) of `model`'s rows whose columns equal `where`, each value as the ORM
    reads it (JSON decoded), in primary key order: a read on the hot path without building a query or models."""
    quote, fields = connection.ops.quote_name, _fields(model)
    chosen = [fields[name] for name in names]
    conditions = " AND ".join(f"{quote(fields[key].column)} = %s" for key in where) or "1 = 1"
    params = [fields[key].get_db_prep_save(value, connection) for key, value in where.items()]
    sql = (
        f"SELECT {', '.join(quote(f.column) for f in chosen)} FROM {quote(model._meta.db_table)} "
        f"WHERE {conditions} ORDER BY {quote(model._meta.pk.column)}"
    )
    readers = [_reader(f) for f in chosen]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return [tuple(read(value) for read, value in zip(readers, row)) for row in cursor.fetchall()]


def _reader(field: models.Field) -> Callable[[Any], Any]:
    """How the ORM turns the database's value of `field` into Python: the backend's converters and the field's
    own (a SQLite boolean is an integer, a JSON value is text on some drivers), as its compiler applies them."""
    col = field.get_col(field.model._meta.db_table)
    converters = connection.ops.get_db_converters(col) + col.get_db_converters(connection)

    def read(value: Any) -> Any:
        for convert in converters:
            value = convert(value, col, connection)
        return value

    return read


_FIELDS: dict[type[models.Model], dict[str, models.Field]] = {}
_STATEMENTS: dict[tuple[type[models.Model], bool], tuple[str, _Columns]] = {}


def _fields(model: type[models.Model]) -> dict[str, models.Field]:
    found = _FIELDS.get(model)
    if found is None:
        found = _FIELDS[model] = {f.attname: f for f in model._meta.concrete_fields}
    return found


def _statement(model: type[models.Model], ignore: bool) -> tuple[str, _Columns]:
    """The INSERT of every concrete column but an automatic primary key, and how each value is made ready (made
    once per model)."""
    found = _STATEMENTS.get((model, ignore))
    if found is None:
        found = _STATEMENTS[(model, ignore)] = _new_statement(model, ignore)
    return found


def _new_statement(model: type[models.Model], ignore: bool) -> tuple[str, _Columns]:
    quote = connection.ops.quote_name
    fields = [f for f in model._meta.concrete_fields if not (f.primary_key and isinstance(f, models.AutoField))]
    columns: _Columns = tuple((f.attname, _prep(f), _default(f)) for f in fields)
    sql = (
        f"INSERT INTO {quote(model._meta.db_table)} ({', '.join(quote(f.column) for f in fields)}) "
        f"VALUES ({', '.join(['%s'] * len(fields))})"
    )
    return sql + (" ON CONFLICT DO NOTHING" if ignore else ""), columns


def _prep(field: models.Field) -> Callable[[Any], Any]:
    return lambda value: field.get_db_prep_save(value, connection)


def _default(field: models.Field) -> Callable[[dt.datetime], Any]:
    if getattr(field, "auto_now", False) or getattr(field, "auto_now_add", False):
        return lambda now: field.get_db_prep_save(now, connection)
    return lambda now: field.get_db_prep_save(field.get_default(), connection)
