"""``fetched(rows)``: the rows of a ``values_list`` query, read past Django's per-value converters
on PostgreSQL, for the few reads that fetch thousands of rows per request or cycle.

Django replaces psycopg's own (compiled) timestamp loader on every connection by a Python one (to
set its time zone): 4.5 of a chargeback request's 13 ms of CPU for the 1,200 timestamps of 600
rows, and a third of the live snapshot's read of 20,000 jobs with its JSON decoding. Here one
cursor gets psycopg's loader back; the values are the same (the session's time zone is the
connection's). No Django converter runs, so a query for this must select only ids, numbers,
booleans, text and timestamps, or decode the rest itself: a JSON column comes back as its text
on PostgreSQL (``json_value``) and decoded elsewhere. On other databases the ORM reads the rows.
"""

from __future__ import annotations

import json
from typing import Any

from django.core.exceptions import EmptyResultSet
from django.db import connection
from django.db.models import QuerySet

TIMESTAMPTZ = 1184  # PostgreSQL's type oid


def fetched(rows: QuerySet[Any]) -> list[tuple[Any, ...]]:
    """The rows of a values_list query (see the module doc for what it may select)."""
    if connection.vendor != "postgresql":
        return list(rows)
    import psycopg
    from psycopg.pq import Format

    try:
        sql, params = rows.query.sql_with_params()
    except EmptyResultSet:  # a filter no row can pass (no job ids): the ORM asks nothing either
        return []
    with connection.cursor() as cursor:
        loader = psycopg.adapters.get_loader(TIMESTAMPTZ, Format.TEXT)
        cursor.cursor.adapters.register_loader(TIMESTAMPTZ, loader)  # this cursor's alone
        cursor.execute(sql, params)
        return list(cursor.fetchall())


def json_value(value: Any) -> Any:
    """A JSON column's value from ``fetched``: its text decoded (PostgreSQL), or as read."""
    if not isinstance(value, str):
        return value
    return {} if value == "{}" else json.loads(value)
