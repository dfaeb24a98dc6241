"""Episodes matching a query across every session, through the full-text index.

The staff admin searches the whole episode table; ``rank_session`` ranks one
session. This is the plain lookup for the former: the ids of the episodes
that hold the query's terms (all of them by default, as the admin's own
search requires every word; or any of them), newest first, at most
``limit``. The terms are ``search_terms(text)``: stemmed as the index holds
them and taken verbatim, so no query syntax ever reaches the database.

- PostgreSQL: ``search_vector @@ 'a' & 'b'`` (``|`` for any) on the generated
  column, which the GIN index on ``(session_id, search_vector)`` serves for
  the vector alone. The matches are gathered in a materialized CTE before
  the newest are taken, so a LIMIT cannot talk the planner into walking the
  primary key backwards in the hope of meeting a rare term early.
- SQLite: ``sessions_app_episode_fts MATCH '{user_input response} : ("a" "b")'`` (``OR`` for any),
  each term an FTS5 string; FTS5 yields rowids (the episode ids) newest first.
"""

from __future__ import annotations

from django.db import connections, router

from sessions_app.models import Episode
from sessions_app.search import EmptyQuery, search_terms
from sessions_app.search.postgres import tsquery_literal
from sessions_app.search.sqlite import text_query

__all__ = ["LOOKUP_LIMIT", "EmptyQuery", "matching_episode_ids"]

#: The most ids one lookup returns.
LOOKUP_LIMIT = 1000

TABLE = "sessions_app_episode"
FTS = "sessions_app_episode_fts"


def matching_episode_ids(text: str, *, match_all: bool = True, limit: int = LOOKUP_LIMIT) -> list[int]:
    """Ids of the episodes holding all (or, with ``match_all=False``, any) of
    the terms of ``text``, newest first, at most ``limit``.

    ``EmptyQuery`` when ``text`` holds no searchable term (empty, or only stop words).
    """
    # PostgreSQL refuses NUL in any string; it is no word anyway.
    terms = search_terms(text.replace("\x00", " "))
    connection = connections[router.db_for_read(Episode)]
    if connection.vendor == "postgresql":
        query = (" & " if match_all else " | ").join(map(tsquery_literal, terms))
        sql = (
            f"WITH m AS MATERIALIZED (SELECT id FROM {TABLE} WHERE search_vector @@ %s::tsquery)"
            " SELECT id FROM m ORDER BY id DESC LIMIT %s"
        )
    elif connection.vendor == "sqlite":
        query = text_query(terms, match_all=match_all)
        sql = f"SELECT rowid FROM {FTS} WHERE {FTS} MATCH %s ORDER BY rowid DESC LIMIT %s"
    else:
        raise NotImplementedError(f"No episode search for the {connection.vendor} database.")
    with connection.cursor() as cursor:
        cursor.execute(sql, [query, limit])
        return [row[0] for row in cursor.fetchall()]
