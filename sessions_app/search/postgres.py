"""Episode search on PostgreSQL: the generated ``search_vector`` column and
its GIN index on ``(session_id, search_vector)`` (migration 0003).

Why each query takes the plan it takes:

- The window names the session only through row comparisons on
  ``(session_id, id)`` and orders by both columns. Only the ``(session, id)``
  index yields that order, so the planner walks it backwards from the
  session's newest episode. Given ``session_id = n`` instead, it may walk the
  primary key backwards past every newer episode of other sessions.
- A probe is ``session_id = n::bigint AND search_vector @@ term`` in a
  materialized CTE: both conditions are keys of the GIN index (the cast
  matters: ``btree_gin`` indexes bigint, and an integer literal would leave
  the session to a second index), the CTE keeps a LIMIT from talking the
  planner into a scan that hopes to meet matches early, and the LIMIT
  outside stops the heap visits.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.conf import settings
from django.db.backends.base.base import BaseDatabaseWrapper

from sessions_app.search.base import MAX_TERMS, Lookup, Match, matches_by_term

TABLE = "sessions_app_episode"
MAX_ID = 2**63 - 1


def tsquery_literal(lexeme: str) -> str:
    """A one-lexeme tsquery taken verbatim (no second normalization)."""
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


class PostgresSearch:
    def __init__(self, connection: BaseDatabaseWrapper) -> None:
        self.connection = connection

    def terms(self, text: str) -> list[str]:
        with self.connection.cursor() as cursor:
            cursor.execute(
                "SELECT lexeme FROM unnest(to_tsvector(%s::regconfig, %s)) ORDER BY positions[1] LIMIT %s",
                [settings.SEARCH_CONFIG, text, MAX_TERMS],
            )
            return [row[0] for row in cursor.fetchall()]

    def terms_and_window(self, session_pk: int, text: str, *, size: int, words: Sequence[str] = ()) -> Lookup:
        # The terms and the window in one round trip. Each term is tested as
        # the tsquery ``tsquery_literal`` writes for it (quotes doubled,
        # backslashes doubled, in quotes); the first row carries the terms
        # and each word's lexemes (space-separated: a word may give several,
        # a stop word none), the others are the window, newest first, with
        # one flag per term.
        sql = f"""
            WITH found AS MATERIALIZED (
                SELECT lexeme FROM unnest(to_tsvector(%s::regconfig, %s)) ORDER BY positions[1] LIMIT %s
            ), terms AS MATERIALIZED (
                SELECT array_agg(lexeme) AS lexemes,
                       array_agg((
                           '''' || replace(replace(lexeme, '\\', '\\\\'), '''', '''''') || ''''
                       )::tsquery) AS queries
                  FROM found
            )
            SELECT NULL::bigint, NULL::integer, lexemes, NULL::boolean[],
                   ARRAY(SELECT array_to_string(tsvector_to_array(to_tsvector(%s::regconfig, u.word)), ' ')
                           FROM unnest(%s::text[]) WITH ORDINALITY AS u(word, n) ORDER BY u.n)
              FROM terms
            UNION ALL
            (SELECT e.id, e.token_count, NULL::text[],
                    ARRAY(SELECT e.search_vector @@ u.query
                            FROM unnest(terms.queries) WITH ORDINALITY AS u(query, n) ORDER BY u.n),
                    NULL::text[]
               FROM {TABLE} e, terms
              WHERE terms.lexemes IS NOT NULL
                AND (e.session_id, e.id) > (%s, 0) AND (e.session_id, e.id) <= (%s, %s)
              ORDER BY e.session_id DESC, e.id DESC
              LIMIT %s)
        """
        config = settings.SEARCH_CONFIG
        params = [config, text, MAX_TERMS, config, list(words), session_pk, session_pk, MAX_ID, size]
        with self.connection.cursor() as cursor:
            cursor.execute(sql, params)
            (_, _, found, _, lexemes), *rows = cursor.fetchall()
        terms = list(found or [])
        window = [
            Match(pk, tokens, frozenset(term for term, held in zip(terms, flags, strict=True) if held))
            for pk, tokens, _, flags, _ in rows
        ]
        return Lookup(terms, window, [frozenset(each.split()) for each in lexemes or []])

    def probe(self, session_pk: int, terms: list[str], *, limit: int) -> dict[str, list[Match]]:
        ctes = ", ".join(
            f"m{n} AS MATERIALIZED (SELECT id, token_count FROM {TABLE}"
            f" WHERE session_id = %s::bigint AND search_vector @@ %s::tsquery)"
            for n in range(len(terms))
        )
        branches = " UNION ALL ".join(
            f"(SELECT {n}, id, token_count FROM m{n} LIMIT %s)" for n in range(len(terms))
        )
        params: list[object] = []
        for term in terms:
            params += [session_pk, tsquery_literal(term)]
        params += [limit] * len(terms)
        with self.connection.cursor() as cursor:
            cursor.execute(f"WITH {ctes} {branches}", params)
            rows = cursor.fetchall()
        return matches_by_term(terms, rows)

    def probe_sessions(
        self, session_pks: list[int], terms: list[str], *, limit: int
    ) -> dict[str, list[Match]]:
        # The same shape as ``probe``; ``= ANY`` of the ids is still a key of the GIN index
        # (one index scan per session, their bitmaps ORed).
        ctes = ", ".join(
            f"m{n} AS MATERIALIZED (SELECT id, token_count FROM {TABLE}"
            f" WHERE session_id = ANY(%s::bigint[]) AND search_vector @@ %s::tsquery)"
            for n in range(len(terms))
        )
        branches = " UNION ALL ".join(
            f"(SELECT {n}, id, token_count FROM m{n} LIMIT %s)" for n in range(len(terms))
        )
        params: list[object] = []
        for term in terms:
            params += [list(session_pks), tsquery_literal(term)]
        params += [limit] * len(terms)
        with self.connection.cursor() as cursor:
            cursor.execute(f"WITH {ctes} {branches}", params)
            rows = cursor.fetchall()
        return matches_by_term(terms, rows)

    def marked(
        self, episode_ids: list[int], terms: list[str], *, start: str, stop: str
    ) -> dict[int, tuple[str, str]]:
        # ts_headline parses the text with the index's configuration, so it marks
        # exactly the words whose lexemes the query's terms are.
        query = " | ".join(map(tsquery_literal, terms))
        options = f'StartSel="{start}", StopSel="{stop}", HighlightAll=TRUE'
        headline = "ts_headline(%s::regconfig, {column}, %s::tsquery, %s)"
        sql = (
            f"SELECT id, {headline.format(column='user_input')}, {headline.format(column='response')}"
            f" FROM {TABLE} WHERE id = ANY(%s::bigint[])"
        )
        config = settings.SEARCH_CONFIG
        params = [config, query, options, config, query, options, list(episode_ids)]
        with self.connection.cursor() as cursor:
            cursor.execute(sql, params)
            return {pk: (user_input, response) for pk, user_input, response in cursor.fetchall()}
