"""Full-text search of a session's episodes, ranked the way BM25 ranks.

A question matches on any of its terms, and rare terms outweigh common ones:
a speaker's name in every exchange must not drown the one word that
matters. PostgreSQL's ``ts_rank`` knows nothing of how common a term is, so
the ranking is done here, with BM25's weights, from statistics whose cost
is bounded whatever the session's length:

1. The newest ``WINDOW`` episodes (or as many as asked for) are read
   once, with which of the question's terms each holds. When the window is the whole session (most
   sessions) that is exact and nothing else is read.
2. A term held by at least ``COMMON_SHARE`` of the window is *common*: its
   document frequency is estimated from the window, and its candidates are
   the window's. Looking it up in the index would touch every episode that
   holds it, which in a long session is most of them.
3. Every other term is looked up in the index (the GIN index narrows by
   session and term together), at most ``CONTEXT_RETRIEVE_CANDIDATES``
   matches each: what a rare term finds is exact, and that is where old
   facts are found.

The candidates, rarest terms' first and at most
``CONTEXT_RETRIEVE_CANDIDATES`` of them, are scored by BM25 with the
episode's token count as its length. Term frequency within an episode is
taken as one: exchanges are short, and a term repeated in one is rarely a
better answer than the same term in another.

The same ranking serves a search across sessions (``across``): its scope is
then an owner's episodes, or every episode, instead of one session's.

``rank_question`` also tells which of the question's words are *common*
in the session (held by ``COMMON_SHARE`` of its episodes, as the window
estimates it, and by at least ``COMMON_EPISODES``) before the rare terms
are looked up: the question without them (``Ranking.without_common_words``)
is what retrieval by meaning compares.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import NamedTuple

from django.conf import settings

from sessions_app.search.base import WORD, Match, Scope, session_scope
from sessions_app.search.database import episode_backend

__all__ = ["EmptyQuery", "Hit", "Ranking", "Word", "rank_question", "rank_session", "search_terms"]

#: The newest episodes read with every search (the whole of many sessions),
#: or as many as the search asks for if that is more.
WINDOW = 64
#: A term held by this share of the window is common (see the module docstring).
COMMON_SHARE = 0.1
#: ... and, for ``Ranking.without_common_words``, by at least this many episodes:
#: in a short session a word a few exchanges share still tells them apart.
COMMON_EPISODES = 10
#: The first characters of a question whose words ``rank_question`` weighs
#: (the sentence encoder reads no more of a question either).
QUESTION_CHARACTERS = 2000
#: BM25's parameters, at their usual values.
K1 = 1.2
B = 0.75


class EmptyQuery(ValueError):
    """The query holds nothing to search for: empty, or only stop words."""


@dataclass(frozen=True, slots=True)
class Hit:
    episode_id: int
    score: float
    #: The query's terms the episode holds (normalized as the index holds them).
    terms: frozenset[str]
    token_count: int


class Word(NamedTuple):
    start: int
    end: int
    terms: frozenset[str]  # none for a stop word


class Ranking:
    """One question's ranking in a scope (a session, or ``across``'s), in two steps: made, it has read
    the query's terms and the newest episodes (one query), which tell the
    question's common words; ``hits()`` looks up the rare terms and scores.
    Between the two, a caller can start work that needs only the words
    (retrieval encodes the question without them while the lookup runs)."""

    def __init__(
        self,
        *,
        scope: Scope,
        episode_count: int,
        total_tokens: int,
        text: str,
        limit: int,
        question: str = "",
        exact_count: bool = True,
    ) -> None:
        """``episode_count`` and ``total_tokens``: the scope's (BM25's collection
        size and average length); ``exact_count=False`` when they are those of
        part of it (``across``), so only a window shorter than asked for is
        the whole scope. ``question``: the cut of ``text`` whose words are
        looked up too ("" for none)."""
        self.backend = episode_backend()
        self.scope, self.total_tokens, self.limit = scope, total_tokens, limit
        self.question = question
        spans = list(WORD.finditer(question))
        # At least as many as asked for: a common term's candidates are the window's.
        asked = max(WINDOW, limit)
        self.terms, self.window, word_terms = self.backend.terms_and_window(
            scope, text, size=asked, words=[span.group() for span in spans]
        )
        if not self.terms:
            raise EmptyQuery("Nothing to search for: the query holds only stop words or no words.")
        #: Where the question's words are, with the terms each stands for.
        self.words = [Word(s.start(), s.end(), held) for s, held in zip(spans, word_terms, strict=True)]
        self.size = len(self.window)
        self.in_window = Counter(term for match in self.window for term in match.terms)
        self.whole_scope = self.size < asked or (exact_count and self.size >= episode_count)
        self.total = max(episode_count, self.size, 1)
        #: The terms held by so many of the session's episodes (as the window
        #: estimates them) that they tell few apart.
        least = max(COMMON_SHARE * self.total, COMMON_EPISODES)
        self.common = frozenset(term for term in self.terms if self._estimate(term) >= least)
        self.idf: dict[str, float] = {}
        #: The episodes holding each term whose every match the last ``hits()`` read.
        self._all_holders: dict[str, frozenset[int]] = {}
        self._in_window_by_id: dict[int, frozenset[str]] | None = None

    def _estimate(self, term: str) -> float:
        """The episodes holding ``term``, as the window tells (exact when it is the whole session)."""
        if self.whole_scope:
            return self.in_window[term]
        return self.in_window[term] / self.size * self.total if self.size else 0.0

    def common_words(self) -> list[str]:
        return [self.question[w.start : w.end] for w in self.words if w.terms and w.terms <= self.common]

    def without_common_words(self) -> str:
        """The question less its common words; "" when no word with a term is
        left. A name the conversation keeps repeating says little about which
        exchange a question is after; stop words stay: they carry what is asked."""
        kept: list[str] = []
        start = 0
        content = False
        for word in self.words:
            if word.terms and word.terms <= self.common:
                kept.append(self.question[start : word.start])
                start = word.end
            elif word.terms:
                content = True
        kept.append(self.question[start:])
        return " ".join("".join(kept).split()) if content else ""

    def hits(self, exclude_ids: Iterable[int] = ()) -> list[Hit]:
        """The best ``limit`` episodes, best first (the module docstring);
        those in ``exclude_ids`` left out."""
        excluded = set(exclude_ids)
        cap = settings.CONTEXT_RETRIEVE_CANDIDATES
        in_window, size = self.in_window, self.size
        # Terms whose frequency the window tells well enough (step 2 of the module docstring).
        from_window = {
            term
            for term in self.terms
            if self.whole_scope or in_window[term] >= max(1.0, COMMON_SHARE * size)
        }
        rare = [term for term in self.terms if term not in from_window]
        probed = self.backend.probe(self.scope, rare, limit=cap) if rare else {}
        self._all_holders = {
            term: frozenset(m.episode_id for m in matches)
            for term, matches in probed.items()
            if len(matches) < cap
        }

        def frequency(term: str) -> float:
            if term in from_window:
                return self._estimate(term)
            found = len(probed.get(term, ()))
            return found if found < cap else max(found, self._estimate(term))

        df = {term: frequency(term) for term in self.terms}
        idf = {term: math.log(1 + (self.total - df[term] + 0.5) / (df[term] + 0.5)) for term in self.terms}
        #: Each term's weight in the scope, as the last ``hits()`` estimated it: what
        #: a passage's words are scored by (``sessions_app.excerpts``).
        self.idf = idf
        candidates = _candidates(self.window, probed, rare, idf, cap)
        average = self.total_tokens / self.total if self.total_tokens else 1.0
        hits = [
            Hit(match.episode_id, _score(match, idf, average), match.terms, match.token_count)
            for match in candidates.values()
            if match.episode_id not in excluded and match.terms
        ]
        hits.sort(key=lambda hit: (-hit.score, -hit.episode_id))
        return hits[: self.limit]

    def most_weight(self, episode_id: int) -> float:
        """The most weight (``idf``, as the last ``hits()`` estimated it) of
        the question's terms the episode may hold: every term but those it
        is known not to hold, by the window (which tells every term of its
        episodes) or by a lookup that read all of a term's matches."""
        held = self._window_terms().get(episode_id)
        if held is not None:
            return sum(self.idf.get(term, 0.0) for term in held)
        return sum(
            weight
            for term, weight in self.idf.items()
            if term not in self._all_holders or episode_id in self._all_holders[term]
        )

    def _window_terms(self) -> dict[int, frozenset[str]]:
        if self._in_window_by_id is None:
            self._in_window_by_id = {match.episode_id: match.terms for match in self.window}
        return self._in_window_by_id


def search_terms(text: str) -> list[str]:
    """The query's terms as the index holds them (stemmed, stop words dropped); ``EmptyQuery`` if none."""
    terms = episode_backend().terms(text)
    if not terms:
        raise EmptyQuery("Nothing to search for: the query holds only stop words or no words.")
    return terms


def rank_session(
    *,
    session_pk: int,
    episode_count: int,
    total_tokens: int,
    text: str,
    limit: int,
    exclude_ids: Iterable[int] = (),
) -> list[Hit]:
    """The episodes of a session that best match ``text``, best first, at most ``limit``.

    ``episode_count`` and ``total_tokens`` are the session's counters (the
    BM25 collection size and average length). Episodes in ``exclude_ids``
    (e.g. the recent ones a context shows anyway) are left out.
    ``EmptyQuery`` when the text holds no searchable term.
    """
    return Ranking(
        scope=session_scope(session_pk),
        episode_count=episode_count,
        total_tokens=total_tokens,
        text=text,
        limit=limit,
    ).hits(exclude_ids)


def rank_question(
    *, session_pk: int, episode_count: int, total_tokens: int, text: str, limit: int
) -> Ranking:
    """``rank_session``'s ranking before its hits are scored (``Ranking.hits``),
    with the question's words and which of them are common in the session."""
    return Ranking(
        scope=session_scope(session_pk),
        episode_count=episode_count,
        total_tokens=total_tokens,
        text=text,
        limit=limit,
        question=text[:QUESTION_CHARACTERS],
    )


def _candidates(
    window: list[Match], probed: dict[str, list[Match]], rare: list[str], idf: dict[str, float], cap: int
) -> dict[int, Match]:
    """Episode id -> what it holds: the rarest terms' matches first, then the window's."""
    found: dict[int, Match] = {}
    for term in sorted(rare, key=lambda t: -idf[t]):
        for match in probed.get(term, ()):
            known = found.get(match.episode_id)
            found[match.episode_id] = known.merged(match) if known else match
    for match in window:
        if match.terms:
            # The window knows every term an episode holds: it replaces a partial probe record.
            found[match.episode_id] = match
    if len(found) <= cap:
        return found
    ranked = sorted(found.values(), key=lambda m: -sum(idf[t] for t in m.terms))
    return {m.episode_id: m for m in ranked[:cap]}


def _score(match: Match, idf: dict[str, float], average_length: float) -> float:
    norm = K1 * (1 - B + B * max(match.token_count, 1) / max(average_length, 1.0))
    return sum(idf[term] * (K1 + 1) / (1 + norm) for term in match.terms)
