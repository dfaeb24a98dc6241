"""Episode search on PostgreSQL: the generated ``search_vector`` column and
its GIN index on ``(owner_id, session_id, search_vector)`` (migrations 0003
and 0007).

A search reads a ``Scope``: one session, one owner, or every episode. Why
each query takes the plan it takes:

- The window names the scope only through row comparisons on
  ``(session_id, id)`` (or ``(owner_id, id)``) and orders by both columns.
  Only that btree index yields that order, so the planner walks it backwards
  from the scope's newest episode. Given ``session_id = n`` instead, it may
  walk the primary key backwards past every newer episode of other
  sessions. Every episode's window is the primary key's newest rows.
- A probe is ``owner_id = n::integer AND search_vector @@ term`` (or
  ``session_id = n::bigint``, or the term alone) in a materialized CTE: a
  condition on any column of a GIN index is a key of it, so one index scan
  narrows by scope and term together (the cast matters: ``btree_gin``
  indexes each column's own type, and a literal of another type would
  leave the scope to a second index); the CTE keeps a LIMIT from talking
  the planner into a scan that hopes to meet matches early, and the LIMIT
  outside stops the heap visits. No list of sessions is ever sent: the
  cost of a probe is that of the term's matches in the scope.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.conf import settings
from django.db.backends.base.base import BaseDatabaseWrapper

from sessions_app.models import Episode
from sessions_app.search.base import MAX_TERMS, Lookup, MarkedText, Match, Scope, matches_by_term

TABLE = "sessions_app_episode"
MAX_ID = 2**63 - 1


def tsquery_literal(lexeme: str) -> str:
    """A one-lexeme tsquery taken verbatim (no second normalization)."""
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


def scope_range(scope: Scope) -> tuple[str, str, list[object]]:
    """The condition and the order naming the scope's episodes (alias ``e``) as a
    range of its ``(column, id)`` index, newest first, and their parameters."""
    if not scope.keys:
        return "TRUE", "e.id DESC", []
    key = ", ".join(f"e.{column}" for column in scope.columns)
    marks = ", ".join(["%s"] * len(scope.keys))
    where = f"({key}, e.id) > ({marks}, 0) AND ({key}, e.id) <= ({marks}, %s)"
    order = ", ".join(f"e.{column} DESC" for column in scope.columns)
    return where, f"{order}, e.id DESC", [*scope.values, *scope.values, MAX_ID]


def scope_keys(scope: Scope, connection: BaseDatabaseWrapper) -> str:
    """``column = %s::type AND `` for each of the scope's columns (a key of the GIN index each)."""
    types = {field.column: field.db_type(connection) for field in Episode._meta.concrete_fields}
    return "".join(f"{column} = %s::{types[column]} AND " for column in scope.columns)


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

    def terms_and_window(self, scope: Scope, text: str, *, size: int, words: Sequence[str] = ()) -> Lookup:
        # The terms and the window in one round trip. Each term is tested as
        # the tsquery ``tsquery_literal`` writes for it (quotes doubled,
        # backslashes doubled, in quotes); the first row carries the terms
        # and each word's lexemes (space-separated: a word may give several,
        # a stop word none), the others are the window, newest first, with
        # one flag per term.
        where, order, scope_params = scope_range(scope)
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
              WHERE terms.lexemes IS NOT NULL AND {where}
              ORDER BY {order}
              LIMIT %s)
        """
        config = settings.SEARCH_CONFIG
        params = [config, text, MAX_TERMS, config, list(words), *scope_params, size]
        with self.connection.cursor() as cursor:
            cursor.execute(sql, params)
            (_, _, found, _, lexemes), *rows = cursor.fetchall()
        terms = list(found or [])
        window = [
            Match(pk, tokens, frozenset(term for term, held in zip(terms, flags, strict=True) if held))
            for pk, tokens, _, flags, _ in rows
        ]
        return Lookup(terms, window, [frozenset(each.split()) for each in lexemes or []])

    def probe(self, scope: Scope, terms: list[str], *, limit: int) -> dict[str, list[Match]]:
        keys = scope_keys(scope, self.connection)
        ctes = ", ".join(
            f"m{n} AS MATERIALIZED (SELECT id, token_count FROM {TABLE}"
            f" WHERE {keys}search_vector @@ %s::tsquery)"
            for n in range(len(terms))
        )
        branches = " UNION ALL ".join(
            f"(SELECT {n}, id, token_count FROM m{n} LIMIT %s)" for n in range(len(terms))
        )
        params: list[object] = []
        for term in terms:
            params += [*scope.values, tsquery_literal(term)]
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
        sql = f"SELECT id, {_HEADLINES} FROM {TABLE} WHERE id = ANY(%s::bigint[])"
        with self.connection.cursor() as cursor:
            cursor.execute(sql, [*_headline_params(terms, start, stop), list(episode_ids)])
            return {pk: (user_input, response) for pk, user_input, response in cursor.fetchall()}

    def marked_texts(
        self, session_pk: int, episode_ids: list[int], terms: list[str], *, start: str, stop: str
    ) -> dict[int, MarkedText]:
        # The text and the marked text side by side: ts_headline gives every
        # row its text (marked or not), so whether it matched is whether a marker is in it.
        sql = (
            f"SELECT id, user_input, response, position, created_at, {_HEADLINES} FROM {TABLE}"
            " WHERE session_id = %s AND id = ANY(%s::bigint[])"
        )
        params = [*_headline_params(terms, start, stop), session_pk, list(episode_ids)]
        with self.connection.cursor() as cursor:
            cursor.execute(sql, params)
            rows = cursor.fetchall()
        return {
            pk: MarkedText(
                user_input, response, position, created, tuple(marked) if start in "".join(marked) else None
            )
            for pk, user_input, response, position, created, *marked in rows
        }


_HEADLINE = "ts_headline(%s::regconfig, {column}, %s::tsquery, %s)"
_HEADLINES = f"{_HEADLINE.format(column='user_input')}, {_HEADLINE.format(column='response')}"


def _headline_params(terms: list[str], start: str, stop: str) -> list[str]:
    """The parameters of ``_HEADLINES``: every word of ``terms`` between ``start`` and ``stop``."""
    query = " | ".join(map(tsquery_literal, terms))
    options = f'StartSel="{start}", StopSel="{stop}", HighlightAll=TRUE'
    config = settings.SEARCH_CONFIG
    return [config, query, options, config, query, options]
