"""One session's search, ranked as its context ranks earlier exchanges.

The episodes that hold a word of the query, ordered by the context's score
(``sessions_app.retrieval``: BM25 and closeness in meaning added up; only
these episodes are compared by their passages), with the snippets of
``sessions_app.search.results``. Exchanges the context would
find by meaning alone are left out: a search box answers with what holds
its words, which it highlights, and says so when nothing does.
"""

from __future__ import annotations

from sessions_app.models import ChatSession
from sessions_app.retrieval import begin_ranking
from sessions_app.search.results import Found, found_for

__all__ = ["search_session"]


def search_session(*, session: ChatSession, text: str, limit: int) -> list[Found]:
    """The episodes of ``session`` that best match ``text``, best first; ``EmptyQuery`` if nothing to search."""
    pending = begin_ranking(session=session, question=text, limit=limit, words_required=True)
    return found_for(pending.hits(by_meaning_alone=False, varied=False))
