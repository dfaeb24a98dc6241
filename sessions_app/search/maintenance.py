"""Upkeep of the full-text index after mass deletes.

PostgreSQL keeps the index in the episode row itself (a generated
``tsvector`` column and its GIN index), so a deleted row takes its terms
with it. SQLite's FTS5 table is kept by triggers: a delete writes a
tombstone into the index, and the deleted terms stay in its segments until
they are merged. ``optimize`` merges every segment into one, dropping them.
"""

from __future__ import annotations

from django.db import connections

from sessions_app.search.schema import FTS


def purge_deleted_terms(*, using: str = "default") -> None:
    """Make deleted episodes' terms leave the index (a no-op on PostgreSQL)."""
    connection = connections[using]
    if connection.vendor != "sqlite":
        return
    with connection.cursor() as cursor:
        cursor.execute(f"INSERT INTO {FTS}({FTS}) VALUES('optimize')")
