"""The question's terms that rank a long exchange's passages
(``summaries.context.quoting``): its rare ones. A word the session's
exchanges commonly hold (``Ranking.common``: the user's name, the project's)
is in most passages of the exchange retrieval found too, and would pull
the cut toward the passages that name it rather than the one that answers;
so only the rarer terms rank passages, unless the question has none."""

from __future__ import annotations

from sessions_app.search import Ranking

#: Off: every term of the question ranks passages, as retrieval's words do.
RARE_ONLY = True


def passage_terms(ranking: Ranking | None) -> tuple[str, ...]:
    if ranking is None:
        return ()
    terms = tuple(ranking.terms)
    if not RARE_ONLY:
        return terms
    return tuple(term for term in terms if term not in ranking.common) or terms
