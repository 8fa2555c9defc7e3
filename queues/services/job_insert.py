"""One job written by one statement on PostgreSQL: the job, its flavor links, its runtime row
and its "submitted" event in a single ``WITH ... INSERT`` (issue 27).

``write_jobs`` writes a job with four ORM ``bulk_create`` calls in a transaction: BEGIN, four
INSERTs, COMMIT, six round trips, and the ORM building and compiling four INSERT statements was
about a quarter of a REST submission's CPU (BENCHMARKS.md, "Live end to end"). Here the same
rows, with the values the ORM would write (each field's ``pre_save`` and ``get_db_prep_save``,
as ``bulk_create``'s compiler does), go into one statement:

    WITH j AS (INSERT INTO job (...) VALUES (...) RETURNING id),
         f AS (INSERT INTO job_flavor (job_id, ...) VALUES ((SELECT id FROM j), ...), ...
               RETURNING id, rank),
         r AS (INSERT INTO job_runtime (job_id, ...) VALUES ((SELECT id FROM j), ...)),
         e AS (INSERT INTO job_event (job_id, ...) VALUES ((SELECT id FROM j), ...) RETURNING id)
    SELECT j.id, ARRAY(SELECT id FROM f ORDER BY rank), (SELECT id FROM e) FROM j

One statement is atomic on its own: outside a transaction it needs no BEGIN and COMMIT. The
objects come back as ``bulk_create`` leaves them (ids set, saved). Other databases (SQLite) and
arrays keep the ORM's path; ``tests/queues/services/test_job_insert.py`` checks that both paths
write the same rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import models, transaction
from django.db.backends.base.base import BaseDatabaseWrapper

_columns: dict[tuple[type[models.Model], str], list[tuple[Any, str]]] = {}


def usable() -> bool:
    """Whether this database takes the one statement (PostgreSQL)."""
    return transaction.get_connection().vendor == "postgresql"


def _fields(model: type[models.Model], db: BaseDatabaseWrapper) -> list[tuple[Any, str]]:
    """``bulk_create``'s fields of ``model`` (not generated ones) with their quoted columns."""
    key = (model, db.vendor)
    found = _columns.get(key)
    if found is None:
        found = []
        for field in model._meta.concrete_fields:
            if field.generated:
                continue
            if hasattr(field, "get_placeholder"):  # e.g. a binary field: not written here
                raise NotImplementedError(f"{model._meta.label}.{field.name}: a placeholder")
            found.append((field, db.ops.quote_name(field.column)))
        _columns[key] = found
    return found


def _row(
    db: BaseDatabaseWrapper, obj: models.Model, parent: str | None, parent_sql: str
) -> tuple[list[str], list[str], list[Any]]:
    """The columns, placeholders and parameters of ``obj``'s INSERT as ``bulk_create`` writes
    them (each field's ``pre_save``, then ``get_db_prep_save``); the foreign key ``parent`` (an
    attribute name) is written as ``parent_sql``. An automatic primary key still unset is left
    to the database."""
    columns: list[str] = []
    holders: list[str] = []
    params: list[Any] = []
    for field, column in _fields(type(obj), db):
        if field.primary_key and isinstance(field, models.AutoField) and obj.pk is None:
            continue
        columns.append(column)
        if field.attname == parent:
            holders.append(parent_sql)
            continue
        value = field.pre_save(obj, True)
        if hasattr(value, "resolve_expression"):  # a database default or an expression
            raise NotImplementedError(f"{obj._meta.label}.{field.name}: an expression")
        value = field.get_db_prep_save(value, db)
        if hasattr(value, "as_sql"):
            raise NotImplementedError(f"{obj._meta.label}.{field.name}: an expression")
        holders.append("%s")
        params.append(value)
    return columns, holders, params


def _insert(
    db: BaseDatabaseWrapper,
    name: str,
    rows: Sequence[models.Model],
    returning: str,
    parent: str | None = None,
    parent_sql: str = "",
) -> tuple[str, list[Any]]:
    """``name AS (INSERT INTO table (...) VALUES (...), ... RETURNING ...)``."""
    values: list[str] = []
    params: list[Any] = []
    columns: list[str] = []
    for row in rows:
        columns, holders, row_params = _row(db, row, parent, parent_sql)
        values.append(f"({', '.join(holders)})")
        params += row_params
    table = db.ops.quote_name(rows[0]._meta.db_table)
    tail = f" RETURNING {returning}" if returning else ""
    sql = f"{name} AS (INSERT INTO {table} ({', '.join(columns)}) VALUES {', '.join(values)}{tail})"
    return sql, params


def insert_job(
    job: models.Model,
    links: Sequence[models.Model],
    runtime: models.Model,
    event: models.Model,
) -> None:
    """Insert ``job`` (unsaved; its owner, queue and class saved) with its flavor ``links``, its
    ``runtime`` row and its ``event`` (unsaved rows whose ``job`` is this job) in one statement;
    leaves the ids set and the objects saved as ``bulk_create`` would."""
    job._prepare_related_fields_for_save(operation_name="bulk_create")  # type: ignore[attr-defined]
    db = transaction.get_connection()
    quote = db.ops.quote_name
    assert job._meta.pk is not None
    pk = quote(job._meta.pk.column)
    job_id = f"(SELECT {pk} FROM j)"
    parts: list[str] = []
    params: list[Any] = []
    inserts: list[tuple[str, Sequence[models.Model], str]] = [("j", [job], pk)]
    flavor_ids = "NULL"
    if links:
        link_pk = quote(links[0]._meta.pk.column)  # type: ignore[union-attr]
        rank = quote(links[0]._meta.get_field("rank").column)
        inserts.append(("f", links, f"{link_pk}, {rank}"))
        flavor_ids = f"ARRAY(SELECT {link_pk} FROM f ORDER BY {rank})"
    event_pk = quote(event._meta.pk.column)  # type: ignore[union-attr]
    inserts += [("r", [runtime], ""), ("e", [event], event_pk)]
    for name, rows, returning in inserts:
        parent = None if name == "j" else rows[0]._meta.get_field("job").attname
        sql, more = _insert(db, name, rows, returning, parent, job_id)
        parts.append(sql)
        params += more
    sql = f"WITH {', '.join(parts)} SELECT j.{pk}, {flavor_ids}, (SELECT {event_pk} FROM e) FROM j"
    with db.cursor() as cursor:
        cursor.execute(sql, params)
        new_id, link_ids, event_id = cursor.fetchone()
    job.pk = new_id
    _saved(job, db)
    for link, link_id in zip(links, link_ids or (), strict=True):
        link.job = job  # type: ignore[attr-defined]
        link.pk = link_id
        _saved(link, db)
    runtime.job = job  # type: ignore[attr-defined]
    _saved(runtime, db)
    event.job_id = new_id  # type: ignore[attr-defined]
    event.pk = event_id
    _saved(event, db)


def _saved(obj: models.Model, db: BaseDatabaseWrapper) -> None:
    obj._state.adding = False
    obj._state.db = db.alias
