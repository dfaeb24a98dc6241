"""How strongly a passage speaks for a question, on one absolute scale.

Retrieval's ranking (``sessions_app.retrieval``) stands each exchange
against the session's own mean, so every session's best few stand out,
even for "Thanks!". Whether anything earlier is worth quoting at all needs
evidence that means the same in every session: the cosine of the
passage's vector to the question's, and the weight (BM25's idf in the
session) of the question's terms the passage holds. Both are put on the
cosine's scale; ``CONTEXT_RELEVANCE_FLOOR`` is a point on it (its choice:
bench/README.md, relevance_evidence.py).
"""

from __future__ import annotations

#: A point of the words' weight counts for this much cosine: one rare term
#: of a session of a few hundred exchanges weighs about 4 to 5.
WORDS_SCALE = 0.05
#: A passage without a vector counts as this close.
UNKNOWN_CLOSENESS = 0.0


def of(closeness: float | None, words: float) -> float:
    """A passage's relevance: its closeness in meaning plus its words' weight, scaled."""
    meaning = UNKNOWN_CLOSENESS if closeness is None else closeness
    return meaning + WORDS_SCALE * words
