"""What a database gives the ranking (``sessions_app.search``): the query's
terms, the newest episodes with the terms each holds, and each term's
matches from the index. One module per database implements ``Backend``."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple, Protocol

#: At most this many distinct terms of a query are searched for.
MAX_TERMS = 32
#: What a word is when a text is cut into words (``Backend.terms_and_window``'s ``words``).
WORD = re.compile(r"\w+")


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


class Backend(Protocol):
    def terms(self, text: str) -> list[str]:
        """The distinct terms of ``text`` as the index holds them, at most MAX_TERMS."""

    def terms_and_window(self, session_pk: int, text: str, *, size: int, words: Sequence[str] = ()) -> Lookup:
        """``terms(text)``, the session's newest ``size`` episodes, newest first, each
        with the terms it holds (none without terms), and the terms of each of
        ``words``; on PostgreSQL in one round trip."""

    def probe(self, session_pk: int, terms: list[str], *, limit: int) -> dict[str, list[Match]]:
        """Each term's matches in the session, found through the index, at most ``limit`` per term."""

    def probe_sessions(
        self, session_pks: list[int], terms: list[str], *, limit: int
    ) -> dict[str, list[Match]]:
        """Each term's matches in any of the sessions, through the index, at most ``limit`` per term."""

    def marked(
        self, episode_ids: list[int], terms: list[str], *, start: str, stop: str
    ) -> dict[int, tuple[str, str]]:
        """Episode id -> its ``(user_input, response)`` with every word that matches one of
        ``terms`` (as the index matches it) between ``start`` and ``stop``."""
