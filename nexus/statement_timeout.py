"""A bound on every statement a web request runs (PostgreSQL).

A request's queries run under ``statement_timeout`` =
``DATABASE_STATEMENT_TIMEOUT_MS`` (0: the server's own setting): the server
cancels a query that runs longer, and the request answers 503 "the query
took too long" (``nexus.failures``) instead of holding a connection, a
thread and the database's time while other users wait.

Only requests: Celery tasks, the embedded worker's and management commands
may legitimately run long, and keep the server's setting. So the limit is
set on a connection only while a request holds it:

- ``StatementTimeoutMiddleware`` marks the request (a context variable) and
  bounds a connection the thread already holds (a persistent one);
- a connection opened or taken from the pool during a request is bounded
  as it is handed over (``connection_created``, sent on both);
- a connection going back to the pool is reset (``reset_connection`` in
  ``nexus.database_settings``), so the embedded worker, which draws from
  the same pool, never inherits a request's limit. Without a pool a
  connection belongs to its thread, and a server's request threads run
  nothing but requests.

Each connection remembers the limit it was given, so a persistent one is
set once, not per request.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

from django.conf import settings
from django.db import connection as default_connection
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.signals import connection_created
from django.http import HttpRequest, HttpResponse

__all__ = ["StatementTimeoutMiddleware", "bound_statements"]

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


def _handed_over(sender: Any, connection: BaseDatabaseWrapper, **kwargs: Any) -> None:
    # A new connection, or one back from the pool (reset): the server's setting.
    setattr(connection, GIVEN, 0)
    if _in_request.get():
        bound_statements(connection)


connection_created.connect(_handed_over, dispatch_uid="nexus.statement_timeout")


class StatementTimeoutMiddleware:
    """Bounds the statements of the request it wraps (module docstring)."""

    def __init__(self, get_response: Any) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        marked = _in_request.set(True)
        try:
            if default_connection.connection is not None:
                bound_statements(default_connection)
            return self.get_response(request)
        finally:
            _in_request.reset(marked)
