"""Rows read in PostgreSQL's binary format, for reads of many bytes.

A ``bytea`` column comes over in the text format as twice as many hex
digits, which the server writes and the driver parses again: for the few
hundred vector rows a question compares (about 3 KB each) that is most of
the read's time. The binary format sends the bytes themselves. Django's
cursors bind parameters on the client, which the driver allows only with
text results, so these rows are read through a cursor of the driver's own,
wrapped as Django wraps its cursors (queries logged and counted alike). On
another database the rows are read as usual.
"""

from __future__ import annotations

from typing import Any

from django.db import connection


def fetch_all(sql: str) -> list[tuple[Any, ...]]:
    """Every row of ``sql``, a query without parameters (what it needs is in its text)."""
    if connection.vendor != "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(sql)
            return cursor.fetchall()
    import psycopg

    connection.ensure_connection()
    connection.validate_thread_sharing()
    with connection.wrap_database_errors:
        raw = psycopg.Cursor(connection.connection)
    raw.format = psycopg.pq.Format.BINARY  # as the driver's connection.cursor(binary=True) sets it
    wrapped = connection.make_debug_cursor(raw) if connection.queries_logged else connection.make_cursor(raw)
    with wrapped as cursor:
        cursor.execute(sql)
        return cursor.fetchall()
