"""Writing many changed rows of one model at once, cheaper than Django's ``bulk_update``.

``bulk_update`` sets every field of a batch with a ``CASE WHEN pk = ... THEN ...`` of one branch
per row. Building and resolving those expressions is pure Python work, about a millisecond per
row and field: a cycle that admits 10,000 jobs spent most of its 25 s there (BENCHMARKS.md,
issue 27). ``update_rows`` writes the same values with less:

- a field whose new value is the same in every row (an admission's state, time and cluster) is
  set by one plain ``UPDATE ... WHERE pk IN (...)`` per batch;
- the fields whose values differ (an admission's placement) are set, on PostgreSQL, by one
  ``UPDATE ... FROM unnest(ids, values)`` per batch, and elsewhere by ``bulk_update``.

``share_related`` gives many rows their related objects (their queue, class, cluster) read once
each, instead of ``select_related``'s copy per row: 10,000 jobs of 4 queues build 4 queues, not
10,000.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import connection, models
from django.db.models import QuerySet

BATCH = 500


def update_rows(rows: Sequence[models.Model], fields: Sequence[str], *, batch: int = BATCH) -> None:
    """Save ``fields`` of every row of ``rows`` (saved objects of one model), as
    ``Model.objects.bulk_update(rows, fields, batch_size=batch)`` would: a constant number of
    queries per ``batch`` rows."""
    if not rows or not fields:
        return
    model = type(rows[0])
    meta = model._meta
    same: dict[str, Any] = {}
    varying: list[models.Field[Any, Any]] = []
    for name in fields:
        field = meta.get_field(name)
        assert isinstance(field, models.Field) and field.concrete
        first = getattr(rows[0], field.attname)
        if all(getattr(row, field.attname) == first for row in rows):
            same[field.attname] = first
        else:
            varying.append(field)
    for start in range(0, len(rows), batch):
        chunk = rows[start : start + batch]
        if same:
            model._default_manager.filter(pk__in=[row.pk for row in chunk]).update(**same)
        if varying and connection.vendor == "postgresql":
            _update_from_arrays(model, chunk, varying)
        elif varying:
            model._default_manager.bulk_update(chunk, [f.name for f in varying])


def _update_from_arrays(
    model: type[models.Model], rows: Sequence[models.Model], fields: list[models.Field[Any, Any]]
) -> None:
    """One ``UPDATE table SET f = v.f FROM unnest(%s::type[], ...) AS v(pk, f, ...)``."""
    quote = connection.ops.quote_name
    meta = model._meta
    pk = meta.pk
    assert pk is not None
    columns = [pk, *fields]
    arrays = [
        [column.get_db_prep_save(getattr(row, column.attname), connection) for row in rows]
        for column in columns
    ]
    table = quote(meta.db_table)
    names = ", ".join(quote(column.column) for column in columns)
    unnest = ", ".join(f"%s::{column.db_type(connection)}[]" for column in columns)
    sets = ", ".join(f"{quote(f.column)} = v.{quote(f.column)}" for f in fields)
    sql = (
        f"UPDATE {table} SET {sets} FROM unnest({unnest}) AS v({names}) "
        f"WHERE {table}.{quote(pk.column)} = v.{quote(pk.column)}"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, arrays)


def share_related(rows: Sequence[models.Model], **relations: QuerySet[Any]) -> None:
    """Set each foreign key named in ``relations`` on every row to the one object of that
    queryset it points to (one query per relation)."""
    if not rows:
        return
    meta = type(rows[0])._meta
    for name, queryset in relations.items():
        field = meta.get_field(name)
        assert isinstance(field, models.ForeignKey)
        ids = {getattr(row, field.attname) for row in rows} - {None}
        found = queryset.in_bulk(list(ids)) if ids else {}
        for row in rows:
            related = found.get(getattr(row, field.attname))
            if related is not None:  # else: read when asked, as without this
                field.set_cached_value(row, related)
