"""What a database gives the ranking (``sessions_app.search``): the query's
terms, the newest episodes with the terms each holds, and each term's
matches from the index. One module per database implements ``Backend``."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import NamedTuple, Protocol

#: At most this many distinct terms of a query are searched for.
MAX_TERMS = 32
#: What a word is when a text is cut into words (``Backend.terms_and_window``'s ``words``).
WORD = re.compile(r"\w+")


@dataclass(frozen=True, slots=True)
class Scope:
    """Whose episodes a search reads: those with ``column = key`` for each of
    ``keys`` (columns of the episode table, never caller input), or every
    episode when there are none. Each column is a key of the full-text index
    and leads a btree index with ``id`` (``(session_id, id)``,
    ``(owner_id, id)``), so the newest episodes of a scope are a range of
    that index, and its matches one lookup of the full-text index."""

    keys: tuple[tuple[str, int], ...] = ()

    @property
    def columns(self) -> list[str]:
        return [column for column, _ in self.keys]

    @property
    def values(self) -> list[int]:
        return [value for _, value in self.keys]


def session_scope(session_pk: int) -> Scope:
    """One session's episodes."""
    return Scope((("session_id", session_pk),))


def owner_scope(owner_pk: int) -> Scope:
    """The episodes of every session of one owner."""
    return Scope((("owner_id", owner_pk),))


#: Every episode (staff who may read every session).
EVERY_EPISODE = Scope()


@dataclass(frozen=True, slots=True)
class Match:
    episode_id: int
    token_count: int
    terms: frozenset[str]

    def merged(self, other: Match) -> Match:
        return Match(self.episode_id, self.token_count, self.terms | other.terms)


class Lookup(NamedTuple):
    """What ``Backend.terms_and_window`` reads: the query's terms, the newest
    episodes with the terms each holds, and for each of the ``words`` asked
    about, the terms it stands for (none for a stop word)."""

    terms: list[str]
    window: list[Match]
    word_terms: list[frozenset[str]]


def matches_by_term(terms: list[str], rows: list[tuple[int, int, int]]) -> dict[str, list[Match]]:
    """Probe rows ``(term index, episode id, token count)`` grouped by term."""
    found: dict[str, list[Match]] = {term: [] for term in terms}
    for n, pk, tokens in rows:
        found[terms[n]].append(Match(pk, tokens, frozenset([terms[n]])))
    return found


class MarkedText(NamedTuple):
    """An episode's text, position and date, and its two sides with the
    words of the terms marked (None: the index matched none of them)."""

    user_input: str
    response: str
    position: int
    created_at: datetime
    marked: tuple[str, str] | None


class Backend(Protocol):
    def terms(self, text: str) -> list[str]:
        """The distinct terms of ``text`` as the index holds them, at most MAX_TERMS."""

    def terms_and_window(self, scope: Scope, text: str, *, size: int, words: Sequence[str] = ()) -> Lookup:
        """``terms(text)``, the scope's newest ``size`` episodes, newest first, each
        with the terms it holds (none without terms), and the terms of each of
        ``words``; on PostgreSQL in one round trip."""

    def probe(self, scope: Scope, terms: list[str], *, limit: int) -> dict[str, list[Match]]:
        """Each term's matches in the scope, found through the index, at most ``limit`` per term."""

    def marked(
        self, episode_ids: list[int], terms: list[str], *, start: str, stop: str
    ) -> dict[int, tuple[str, str]]:
        """Episode id -> its ``(user_input, response)`` with every word that matches one of
        ``terms`` (as the index matches it) between ``start`` and ``stop``."""

    def marked_texts(
        self, session_pk: int, episode_ids: list[int], terms: list[str], *, start: str, stop: str
    ) -> dict[int, MarkedText]:
        """Episode id -> its ``MarkedText``, for those of ``episode_ids`` in the
        session: ``marked`` as ``marked`` gives it; on PostgreSQL in one round trip."""
