"""Episode search on SQLite: the FTS5 table ``sessions_app_episode_fts``
(migration 0003; tokenizer ``porter unicode61``), kept by triggers.

FTS5 stems a query the way it stemmed the text, but keeps stop words, so
the terms are the query's words less ``STOP_WORDS``; two words with one
stem stay two terms, which only weighs that stem twice.

A search reads a ``Scope`` (one session, one owner, or every episode): its
window is the newest rows of the ``(session_id, id)`` or ``(owner_id, id)``
index (the rowid's for every episode), a probe the term's FTS5 matches
joined to the episodes with the scope's equalities.

Terms match the text columns only (``{user_input response}``). An owner's
scope is also a term of the ``MATCH`` (``owner_id : "42"``, the index's
third column): FTS5 intersects the two, so what a query reads and hands
back never depends on how many of other users' episodes hold a word
(their count would show in its timing).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from django.db.backends.base.base import BaseDatabaseWrapper

from sessions_app.models import Episode
from sessions_app.search.base import MAX_TERMS, WORD, Lookup, MarkedText, Match, Scope, matches_by_term
from sessions_app.search.stopwords import STOP_WORDS

TABLE = "sessions_app_episode"
FTS = "sessions_app_episode_fts"


def fts_string(term: str) -> str:
    """A term as an FTS5 string: matched as a word, never read as query syntax."""
    return '"' + term.replace('"', '""') + '"'


#: The columns a term is looked for in (not the owner's).
TEXT_COLUMNS = "{user_input response}"


def text_query(terms: Sequence[str], *, match_all: bool = False) -> str:
    """The ``MATCH`` string for any (or every) one of ``terms`` in the episodes' text (never the owner column)."""
    return f"{TEXT_COLUMNS} : (" + (" " if match_all else " OR ").join(map(fts_string, terms)) + ")"


def fts_query(scope: Scope, *terms: str) -> str:
    """The ``MATCH`` string for any of ``terms`` in the episodes' text,
    within the scope's owner when it has one."""
    text = text_query(terms)
    owner = dict(scope.keys).get("owner_id")
    return text if owner is None else f"owner_id : {fts_string(str(int(owner)))} AND {text}"


class SqliteSearch:
    def __init__(self, connection: BaseDatabaseWrapper) -> None:
        self.connection = connection

    def terms(self, text: str) -> list[str]:
        seen: dict[str, None] = {}
        for word in WORD.findall(text.lower()):
            if _is_term(word):
                seen.setdefault(word, None)
                if len(seen) == MAX_TERMS:
                    break
        return list(seen)

    def terms_and_window(self, scope: Scope, text: str, *, size: int, words: Sequence[str] = ()) -> Lookup:
        terms = self.terms(text)
        window = self.window(scope, terms, size=size) if terms else []
        lowered = (word.lower() for word in words)
        return Lookup(terms, window, [frozenset([w]) if _is_term(w) else frozenset() for w in lowered])

    def window(self, scope: Scope, terms: list[str], *, size: int) -> list[Match]:
        where = " AND ".join(f"{column} = %s" for column in scope.columns) or "1"
        with self.connection.cursor() as cursor:
            cursor.execute(
                f"SELECT id, token_count, owner_id FROM {TABLE} WHERE {where} ORDER BY id DESC LIMIT %s",
                [*scope.values, size],
            )
            rows = cursor.fetchall()
            if not rows:
                return []
            lowest, highest = rows[-1][0], rows[0][0]
            # Other users' episodes between those ids are none of this search's
            # business: a session's (or an owner's) window asks for its owner's only.
            owners = {row[2] for row in rows}
            within = Scope((("owner_id", owners.pop()),)) if scope.keys and len(owners) == 1 else scope
            branches = " UNION ALL ".join(
                f"SELECT rowid, {n} FROM {FTS} WHERE {FTS} MATCH %s AND rowid BETWEEN %s AND %s"
                for n in range(len(terms))
            )
            params: list[object] = []
            for term in terms:
                params += [fts_query(within, term), lowest, highest]
            cursor.execute(branches, params)
            holders: dict[int, set[str]] = {}
            for pk, n in cursor.fetchall():
                holders.setdefault(pk, set()).add(terms[n])
        return [Match(pk, tokens, frozenset(holders.get(pk, ()))) for pk, tokens, _ in rows]

    def probe(self, scope: Scope, terms: list[str], *, limit: int) -> dict[str, list[Match]]:
        # A LIMIT per branch needs each branch wrapped in its own SELECT. SQLite
        # walks a session's episodes and tests each against the term; an owner's
        # may be tens of thousands, so there the index's matches lead (CROSS JOIN
        # keeps that order), the owner's only (``fts_query``).
        keys = "".join(f" AND e.{column} = %s" for column in scope.columns)
        join = "JOIN" if scope.columns == ["session_id"] else "CROSS JOIN"
        branches = " UNION ALL ".join(
            f"""SELECT * FROM (SELECT {n}, e.id, e.token_count FROM {FTS} {join} {TABLE} e ON e.id = {FTS}.rowid
                 WHERE {FTS} MATCH %s{keys} LIMIT %s)"""
            for n in range(len(terms))
        )
        params: list[object] = []
        for term in terms:
            params += [fts_query(scope, term), *scope.values, limit]
        with self.connection.cursor() as cursor:
            cursor.execute(branches, params)
            rows = cursor.fetchall()
        return matches_by_term(terms, rows)

    def marked(
        self, episode_ids: list[int], terms: list[str], *, start: str, stop: str
    ) -> dict[int, tuple[str, str]]:
        # highlight() marks the phrases of the MATCH as the tokenizer (and its stemmer) found them.
        sql = (
            f"SELECT rowid, highlight({FTS}, 0, %s, %s), highlight({FTS}, 1, %s, %s) FROM {FTS}"
            f" WHERE {FTS} MATCH %s AND rowid IN (SELECT value FROM json_each(%s))"
        )
        params = [start, stop, start, stop, fts_query(Scope(), *terms), json.dumps(list(episode_ids))]
        with self.connection.cursor() as cursor:
            cursor.execute(sql, params)
            return {pk: (user_input or "", response or "") for pk, user_input, response in cursor.fetchall()}

    def marked_texts(
        self, session_pk: int, episode_ids: list[int], terms: list[str], *, start: str, stop: str
    ) -> dict[int, MarkedText]:
        # Two queries: highlight() is FTS5's only where its table is matched,
        # and a query in process costs no round trip.
        rows = Episode.objects.filter(session_id=session_pk, pk__in=episode_ids).values_list(
            "pk", "user_input", "response", "position", "created_at"
        )
        texts = {pk: rest for pk, *rest in rows}
        marked = self.marked(list(texts), terms, start=start, stop=stop) if texts and terms else {}
        return {pk: MarkedText(*row, marked.get(pk)) for pk, row in texts.items()}


def _is_term(word: str) -> bool:
    """Whether a lower-case word is searched for: not a stop word, and not FTS5's column syntax."""
    return word not in STOP_WORDS and not word.startswith("_")
