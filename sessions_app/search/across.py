"""Ranking the episodes of many sessions at once: the caller's, or all those
a staff member may see.

The ranking is ``rank_session``'s BM25 with the statistics of the sessions
searched, and nothing else's: the collection size and average length are
the sums of the sessions' counters, and each term's document frequency is
the number of its matches the index finds in those sessions, at most
``CONTEXT_RETRIEVE_CANDIDATES``. So another user's text weighs on nothing,
not even a count, and the cost is bounded by the cap per term whatever the
sessions hold: one query of the index for every term, however many
sessions and episodes. A term that reaches the cap is common among them;
its frequency is then the cap, an underestimate that keeps it cheap, and a
rare term still outweighs it.

Terms are gathered rarest first: when the candidates exceed the cap, the
episodes holding the rarer terms are the ones kept.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from django.conf import settings

from sessions_app.search import K1, B, EmptyQuery, Hit
from sessions_app.search.base import Match
from sessions_app.search.database import episode_backend

__all__ = ["bm25", "rank_sessions"]


def rank_sessions(
    *, session_pks: Sequence[int], episode_count: int, total_tokens: int, text: str, limit: int
) -> list[Hit]:
    """The episodes of the sessions ``session_pks`` that best match ``text``, best first, at most ``limit``.

    ``episode_count`` and ``total_tokens`` are the sums of those sessions'
    counters. ``EmptyQuery`` when the text holds no searchable term.
    """
    backend = episode_backend()
    terms = backend.terms(text)
    if not terms:
        raise EmptyQuery("Nothing to search for: the query holds only stop words or no words.")
    if not session_pks or limit <= 0:
        return []
    cap = settings.CONTEXT_RETRIEVE_CANDIDATES
    probed = backend.probe_sessions(list(session_pks), terms, limit=cap)
    found = {term: len(probed.get(term, ())) for term in terms}
    total = max(episode_count, *found.values(), 1)
    idf = {term: math.log(1 + (total - df + 0.5) / (df + 0.5)) for term, df in found.items()}

    candidates: dict[int, Match] = {}
    for term in sorted(terms, key=lambda t: -idf[t]):
        for match in probed.get(term, ()):
            known = candidates.get(match.episode_id)
            if known is not None:
                candidates[match.episode_id] = known.merged(match)
            elif len(candidates) < cap:
                candidates[match.episode_id] = match
    average = total_tokens / total if total_tokens else 1.0
    hits = [
        Hit(match.episode_id, bm25(match, idf, average), match.terms, match.token_count)
        for match in candidates.values()
    ]
    hits.sort(key=lambda hit: (-hit.score, -hit.episode_id))
    return hits[:limit]


def bm25(match: Match, idf: dict[str, float], average_length: float) -> float:
    """BM25 of an episode, each term it holds counted once (as ``rank_session`` scores)."""
    norm = K1 * (1 - B + B * max(match.token_count, 1) / max(average_length, 1.0))
    return sum(idf[term] * (K1 + 1) / (1 + norm) for term in match.terms)
