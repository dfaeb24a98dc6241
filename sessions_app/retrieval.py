"""The earlier episodes a question needs: by the words they share
(``sessions_app.search``) and by what they mean (``sessions_app.semantic``).

The two are added up, as scores on scales that mean the same in every
session: an episode's closeness in meaning counts by how many standard
deviations it stands above the session's mean (``Neighbour.standing``), and
its words by their BM25 score, whose rare terms weigh more, times
``WORDS_WEIGHT``. An episode only one of them finds gets nothing from the
other: a word-only hit not yet encoded counts as of average closeness.

Scores, not ranks (the reciprocal rank fusion used before): a rank says
nothing of how far ahead the first is, so a question that names the one
rare word of the exchange it asks about is answered by that word, and one
asked in other words is left to meaning. The context then chooses its
exchanges so that they do not repeat each other (``semantic.variety``); the
search endpoint lists its hits in the plain order. How the weights were
chosen, with the figures: bench/README.md (bench/retrieval_rankings.py,
bench/memory_recall.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass

import numpy as np
from django.conf import settings

from sessions_app import semantic
from sessions_app.models import ChatSession
from sessions_app.search import EmptyQuery, Hit, Ranking, rank_question
from sessions_app.semantic import variety

__all__ = ["WORDS_WEIGHT", "PendingRanking", "begin_ranking", "fuse", "meaning_text"]

#: What a point of BM25 counts for against a standard deviation of closeness
#: in meaning. One rare term matched scores about 5 (idf in a few hundred
#: episodes), a common one about 1 (bench/README.md for the choice).
WORDS_WEIGHT = 0.8
#: Episodes found by meaning for each place when the choice is varied.
VARIETY_POOL = 2


def begin_ranking(
    *, session: ChatSession, question: str, limit: int, words_required: bool = False
) -> PendingRanking:
    """The session's episodes that best answer ``question``, in two steps:
    this reads the question's words (one query) and starts encoding what of
    it is compared by meaning on another core; ``PendingRanking.hits`` does
    the rest. A caller with other reads to do (the context's recent window)
    does them in between. Cost is bounded by ``CONTEXT_RETRIEVE_CANDIDATES``
    and ``CONTEXT_SEMANTIC_CANDIDATES``. ``words_required``: ``EmptyQuery``
    for a question without a word to search for, before anything is encoded
    (else meaning alone ranks it)."""
    try:
        ranking: Ranking | None = rank_question(
            session_pk=session.pk,
            episode_count=session.cached_episode_count,
            total_tokens=session.cached_total_tokens,
            text=question,
            limit=limit,
        )
    except EmptyQuery:
        if words_required:
            raise
        ranking = None
    vector = semantic.question_vector_soon(meaning_text(question, ranking)) if semantic.enabled() else None
    return PendingRanking(session, limit, ranking, vector)


@dataclass(slots=True)
class PendingRanking:
    session: ChatSession
    limit: int
    ranking: Ranking | None  # None: no word of the question is searched for
    vector: Future[np.ndarray] | None  # None: retrieval by meaning is off
    #: What the last ``hits()`` compared by meaning (None before, or with meaning off):
    #: the context scores the ranked exchanges' passages from its rows.
    closeness: semantic.Closeness | None = None

    def hits(
        self,
        exclude_ids: Iterable[int] = (),
        *,
        by_meaning_alone: bool = True,
        varied: bool = True,
        lift: Mapping[int, float] | None = None,
    ) -> list[Hit]:
        """The best ``limit``, best first, those in ``exclude_ids`` left out
        (an episode found by meaning alone has no matched terms), chosen so
        that they do not repeat each other (``varied``: the context's). The
        search endpoint's (neither flag): only episodes that hold a word of
        the question, ordered as the context scores them, but that only
        they are compared by their passages (the closest by meaning alone,
        never listed, are not read). ``lift``: points
        added to these episodes' scores (those written when the question
        says, ``sessions_app.question_dates``), found or not otherwise."""
        excluded = list(exclude_ids)
        by_words = self.ranking.hits(excluded) if self.ranking else []
        if self.vector is None:
            return by_words
        closeness = semantic.closeness(
            session_pk=self.session.pk,
            newest_episode_id=self.session.cached_last_episode_id,
            revision=self.session.history_revision,
            vector=self.vector.result(),
            scan=settings.CONTEXT_SEMANTIC_CANDIDATES,
            exclude_ids=excluded,
            # Passages are compared for the question's candidates alone: its
            # words' hits and the CONTEXT_RETRIEVE_CANDIDATES closest as whole
            # exchanges (fewer lowered recall: bench/README.md, read_scaling.py).
            # Without those found by meaning alone (the search endpoint's), the
            # words' hits alone: the closest are never listed.
            also=[hit.episode_id for hit in by_words],
            refine=None if by_meaning_alone else 0,
            stamp=(self.session.end_user, self.session.memory_scope),
        )
        self.closeness = closeness
        return fuse(
            by_words, closeness, self.limit, by_meaning_alone=by_meaning_alone, varied=varied, lift=lift or {}
        )


def meaning_text(question: str, ranking: Ranking | None) -> str:
    """What of the question is compared by meaning: the question less the
    words the session's episodes commonly hold (``Ranking.without_common_words``),
    or the whole question when that leaves nothing to ask.

    A sentence encoder weighs names heavily: "What is the name of Rohan's
    daughter?" put to a chat with Rohan lands nearest the exchanges that
    greet Rohan, not the one where he speaks of Sigrid. Without the name
    that every tenth exchange holds, "What is the name of 's daughter?" is
    what is compared. Stop words stay: without them a question becomes a
    bag of keywords, which the encoder reads worse (bench/memory_recall.py;
    figures in bench/README.md).
    """
    asked = ranking.without_common_words() if ranking else ""
    return asked or question


def fuse(
    by_words: list[Hit],
    closeness: semantic.Closeness,
    limit: int,
    *,
    by_meaning_alone: bool = True,
    varied: bool = False,
    lift: Mapping[int, float] | None = None,
) -> list[Hit]:
    """The best ``limit`` of the words' hits and (``by_meaning_alone``) the
    episodes nearest in meaning, by the sum of their scores (module
    docstring); ties newest first. ``varied``: chosen one at a time, each
    choice lowering the scores of the episodes like it
    (``semantic.variety``), from twice as many found by meaning, so that
    the repeats passed over leave room for others."""
    standing = closeness.standing_of(hit.episode_id for hit in by_words)
    scores: dict[int, float] = {}
    hits: dict[int, Hit] = {}
    for hit in by_words:
        scores[hit.episode_id] = standing.get(hit.episode_id, 0.0) + WORDS_WEIGHT * hit.score
        hits[hit.episode_id] = hit
    near = closeness.nearest(limit * (VARIETY_POOL if varied else 1)) if by_meaning_alone else []
    for neighbour in near:
        if neighbour.episode_id not in hits:
            scores[neighbour.episode_id] = neighbour.standing
            hits[neighbour.episode_id] = Hit(neighbour.episode_id, 0.0, frozenset(), neighbour.token_count)
    _add_lift(scores, hits, closeness, lift or {})
    order = sorted(scores, key=lambda pk: (-scores[pk], -pk))
    if varied and len(closeness.ids):  # with no vectors read, nothing is like anything
        chosen = variety.varied(np.array([scores[pk] for pk in order]), closeness.vectors_of(order), limit)
        order = [order[i] for i in chosen]
    return [Hit(pk, scores[pk], hits[pk].terms, hits[pk].token_count) for pk in order[:limit]]


def _add_lift(
    scores: dict[int, float], hits: dict[int, Hit], closeness: semantic.Closeness, lift: Mapping[int, float]
) -> None:
    """``lift`` added to the scores; a lifted episode neither ranking found
    joins with its closeness (when it was compared) or none."""
    if not lift:
        return
    standing = closeness.standing_of(pk for pk in lift if pk not in scores)
    tokens = dict(zip(closeness.ids.tolist(), closeness.tokens.tolist(), strict=True)) if standing else {}
    for pk, points in lift.items():
        if pk in scores:
            scores[pk] += points
        elif pk in standing:
            scores[pk] = standing[pk] + points
            hits[pk] = Hit(pk, 0.0, frozenset(), int(tokens[pk]))
