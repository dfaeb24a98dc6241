"""A bound on every statement a web request runs (PostgreSQL).

A request's queries run under ``statement_timeout`` =
``DATABASE_STATEMENT_TIMEOUT_MS`` (0: the server's own setting): the server
cancels a query that runs longer, and the request answers 503 "the query
took too long" (``nexus.failures``) instead of holding a connection, a
thread and the database's time while other users wait.

Only requests: Celery tasks, the embedded worker's and management commands
may legitimately run long, and keep the server's setting. So the limit is
set on a connection only while a request holds it:

- ``request_started`` marks the thread's request (a context variable, which
  ``request_finished`` clears) and bounds a connection the thread already
  holds (a persistent one);
- a connection opened or taken from the pool during a request is bounded
  as it is handed over (``connection_created``, sent on both);
- a connection going back to the pool is reset (``reset_connection`` in
  ``nexus.database_settings``), so the embedded worker, which draws from
  the same pool, never inherits a request's limit. Without a pool a
  connection belongs to its thread, and a server's request threads run
  nothing but requests.

Each connection remembers the limit it was given, so a persistent one is
set once, not per request. Signals rather than a middleware: the bound
costs the view no stack frames (a deeply nested JSON body is refused by
depth, not by the interpreter's recursion limit).
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

from django.conf import settings
from django.core.signals import request_finished, request_started
from django.db import DatabaseError
from django.db import connection as default_connection
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.signals import connection_created

__all__ = ["bound_statements", "connect_signals"]

_in_request: ContextVar[bool] = ContextVar("nexus_statement_timeout", default=False)
#: The attribute of a ``DatabaseWrapper`` that holds the limit its connection has (0: the server's).
GIVEN = "nexus_statement_timeout_ms"


def bound_statements(connection: BaseDatabaseWrapper) -> None:
    """Give ``connection`` (open) the request limit, unless it has it already."""
    limit = settings.DATABASE_STATEMENT_TIMEOUT_MS
    if connection.vendor != "postgresql" or getattr(connection, GIVEN, 0) == limit:
        return
    with connection.cursor() as cursor:
        # set_config takes parameters; SET does not (server-side binding).
        cursor.execute("SELECT set_config('statement_timeout', %s, false)", [str(limit)])
    setattr(connection, GIVEN, limit)


def _request_started(**kwargs: Any) -> None:
    _in_request.set(True)
    if default_connection.connection is None:
        return  # bounded when the request opens it
    try:
        bound_statements(default_connection)
    except DatabaseError:
        # A broken persistent connection: the request's own first query fails
        # as it would have, and answers 503 (nothing here may answer for it).
        pass


def _request_finished(**kwargs: Any) -> None:
    _in_request.set(False)


def _handed_over(sender: Any, connection: BaseDatabaseWrapper, **kwargs: Any) -> None:
    # A new connection, or one back from the pool (reset): the server's setting.
    setattr(connection, GIVEN, 0)
    if _in_request.get():
        bound_statements(connection)


def connect_signals() -> None:
    """Called once at start (``sessions_app.apps``)."""
    request_started.connect(_request_started, dispatch_uid="nexus.statement_timeout.started")
    request_finished.connect(_request_finished, dispatch_uid="nexus.statement_timeout.finished")
    connection_created.connect(_handed_over, dispatch_uid="nexus.statement_timeout")
