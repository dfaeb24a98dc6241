"""Prepared statements for the few hot queries of the write path.

The ORM binds parameters on the client, so PostgreSQL parses and plans every
statement afresh. For the statements run on every episode write, planning
costs the server several times what executing them does (the summarization
gate: about 0.15 ms of server CPU unprepared, 0.03 ms prepared). A cursor
from :func:`hot_cursor` binds on the server, so psycopg prepares a statement
once it has run ``prepare_threshold`` times on the connection (see
``DATABASE_PREPARED_STATEMENTS`` in settings); every other query is untouched.
Queries still go through Django's cursor wrapper: errors, query logging and
``CaptureQueriesContext`` behave as for ``connection.cursor()``.
"""

from __future__ import annotations

from typing import Any

from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.utils import CursorWrapper


def hot_cursor(connection: BaseDatabaseWrapper) -> CursorWrapper:
    """A cursor whose statements PostgreSQL may keep prepared; a plain one elsewhere."""
    if connection.vendor != "postgresql":
        return connection.cursor()
    from django.db.backends.postgresql.base import ServerBindingCursor

    # What connection.cursor() does, with a server-binding cursor class.
    connection.close_if_health_check_failed()
    connection.ensure_connection()
    connection.validate_thread_sharing()
    with connection.wrap_database_errors:
        raw: Any = ServerBindingCursor(connection.connection)
    return connection.make_debug_cursor(raw) if connection.queries_logged else connection.make_cursor(raw)
