"""Rows read in PostgreSQL's binary format, for reads of many bytes.

A ``bytea`` column comes over in the text format as twice as many hex
digits, which the server writes and the driver parses again: for the few
hundred vector rows a question compares (about 3 KB each) that is most of
the read's time. The binary format sends the bytes themselves. Django's
cursors bind parameters on the client, which the driver allows only with
text results, so these rows are read through a cursor of the driver's own,
wrapped as Django wraps its cursors (queries logged and counted alike). On
another database the rows are read as usual.

The ids asked for go as one array parameter in the binary format, bound by
the server: a few hundred ids written into the statement's text cost the
server more to parse and resolve (about a tenth of the read:
bench/candidate_rows.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import connection


def fetch_by_ids(select: str, column: str, ids: Sequence[int]) -> list[tuple[Any, ...]]:
    """Every row of ``select`` (a query without a ``WHERE``) whose ``column``
    is one of ``ids``, in no particular order."""
    if connection.vendor != "postgresql":
        listed = ", ".join(str(int(pk)) for pk in ids)  # integers: nothing to quote
        with connection.cursor() as cursor:
            cursor.execute(f'{select} WHERE "{column}" IN ({listed})')
            return cursor.fetchall()
    import psycopg

    connection.ensure_connection()
    connection.validate_thread_sharing()
    with connection.wrap_database_errors:
        raw = psycopg.Cursor(connection.connection)
    raw.format = psycopg.pq.Format.BINARY  # as the driver's connection.cursor(binary=True) sets it
    wrapped = connection.make_debug_cursor(raw) if connection.queries_logged else connection.make_cursor(raw)
    with wrapped as cursor:
        cursor.execute(f'{select} WHERE "{column}" = ANY(%b::bigint[])', [[int(pk) for pk in ids]])
        return cursor.fetchall()
