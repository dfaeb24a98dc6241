"""The earlier episodes a question needs: by the words they share
(``sessions_app.search``) and by what they mean (``sessions_app.semantic``).

The two rankings are fused by reciprocal rank (an episode scores
``weight / (K + rank)`` in each list it appears in): ranks, not scores,
because a BM25 score and a cosine share no scale. Meaning leads and words
follow at half weight. Questions are usually asked in other words than the
fact was told, which only meaning sees; words still find what a sentence
vector blurs (a name, a code, a rare term), and lift an exchange both agree
on. Measured by bench/retrieval_rankings.py (answer words found at 1,000 /
2,000 / 4,000 tokens, ranking alone), on its two probe sets:

=========================  ==================  ==================
ranking                    synthetic           dialogue
=========================  ==================  ==================
words (BM25)               0.40 / 0.43 / 0.46  0.27 / 0.34 / 0.39
meaning, whole exchange    0.73 / 0.78 / 0.89  0.17 / 0.33 / 0.42
meaning (with passages)    0.78 / 0.81 / 0.89  0.34 / 0.45 / 0.59
fused, words at 1          0.65 / 0.68 / 0.84  0.33 / 0.39 / 0.50
fused, words at 0.5        0.78 / 0.84 / 0.90  0.34 / 0.44 / 0.55
fused, words at 0.3        0.78 / 0.85 / 0.90  0.34 / 0.45 / 0.58
=========================  ==================  ==================

Words stay at half weight, not lower: both sets ask in other words on
purpose, and on the held-out benchmark that decides, words alone keep far
more (0.76 at 2,000 tokens) than on either.
"""

from __future__ import annotations

from collections.abc import Iterable
from concurrent.futures import Future
from dataclasses import replace

import numpy as np
from django.conf import settings

from sessions_app import semantic
from sessions_app.models import ChatSession
from sessions_app.search import EmptyQuery, Hit, rank_session

__all__ = ["rank_for_question"]

#: Reciprocal rank fusion's constant, at its usual value.
K = 60
WORDS_WEIGHT = 0.5
MEANING_WEIGHT = 1.0


def rank_for_question(
    *,
    session: ChatSession,
    question: str,
    limit: int,
    exclude_ids: Iterable[int] = (),
    vector: Future[np.ndarray] | None = None,
) -> list[Hit]:
    """The session's episodes that best answer ``question``, best first, at
    most ``limit``; those in ``exclude_ids`` left out. An episode found by
    meaning alone has no matched terms. Cost is bounded by
    ``CONTEXT_RETRIEVE_CANDIDATES`` and ``CONTEXT_SEMANTIC_CANDIDATES``.
    ``vector``: the question's vector already being computed
    (``semantic.question_vector_soon``), else it is computed here."""
    excluded = list(exclude_ids)
    try:
        by_words = rank_session(
            session_pk=session.pk,
            episode_count=session.cached_episode_count,
            total_tokens=session.cached_total_tokens,
            text=question,
            limit=limit,
            exclude_ids=excluded,
        )
    except EmptyQuery:
        by_words = []
    if not semantic.enabled():
        return by_words
    by_meaning = semantic.nearest(
        session_pk=session.pk,
        newest_episode_id=session.cached_last_episode_id,
        vector=vector.result() if vector is not None else semantic.question_vector(question),
        limit=limit,
        scan=settings.CONTEXT_SEMANTIC_CANDIDATES,
        exclude_ids=excluded,
    )
    scores: dict[int, float] = {}
    hits: dict[int, Hit] = {}
    for rank, hit in enumerate(by_words):
        scores[hit.episode_id] = WORDS_WEIGHT / (K + rank)
        hits[hit.episode_id] = hit
    for rank, near in enumerate(by_meaning):
        scores[near.episode_id] = scores.get(near.episode_id, 0.0) + MEANING_WEIGHT / (K + rank)
        hits.setdefault(near.episode_id, Hit(near.episode_id, 0.0, frozenset(), near.token_count))
    order = sorted(scores, key=lambda pk: (-scores[pk], -pk))[:limit]
    return [replace(hits[pk], score=scores[pk]) for pk in order]
