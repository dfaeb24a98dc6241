"""The search backend of the database episodes are read from (``BACKENDS`` by vendor)."""

from __future__ import annotations

from django.db import connections, router

from sessions_app.models import Episode
from sessions_app.search.base import Backend
from sessions_app.search.postgres import PostgresSearch
from sessions_app.search.sqlite import SqliteSearch

BACKENDS: dict[str, type[Backend]] = {"postgresql": PostgresSearch, "sqlite": SqliteSearch}


def episode_backend() -> Backend:
    """The backend for the database ``Episode`` is read from; ``NotImplementedError`` for others."""
    connection = connections[router.db_for_read(Episode)]
    try:
        return BACKENDS[connection.vendor](connection)
    except KeyError:
        raise NotImplementedError(f"No episode search for the {connection.vendor} database.") from None
