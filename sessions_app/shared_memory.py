"""What a shared session finds in the person's other shared sessions: the
earlier exchanges of every session with the same owner, the same
``end_user`` and ``memory_scope = "shared"`` that best answer a question.

Isolation is kept where rows are read, not only where ids are ranked: every
query below names the person (owner, end user, shared) through the session
row, so an episode of another owner, of another end user or of a
session-scoped session is never returned, whatever the ranking found; a
session that is not shared lends and reads nothing.

Cost does not grow with the person's sessions, in the shape of the search
across sessions (``sessions_app.search.across``): the words are ranked in
the owner's scope (the full-text index's own key), at most
``CONTEXT_RETRIEVE_CANDIDATES`` matches a term, and the ranked ids are
then kept to the person's in one query; by meaning, the newest
``CONTEXT_SEMANTIC_CANDIDATES`` exchanges of the person's most recently
active shared sessions are compared, as one session compares its own, their
vectors kept in the process between questions
(``sessions_app.semantic.person_vectors``), with the episodes found by words.
Scores are on the scale of one session's retrieval
(``sessions_app.retrieval``): a standard deviation of closeness over the
compared exchanges, plus ``WORDS_WEIGHT`` per point of BM25.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np
from django.conf import settings
from django.db import connection

from sessions_app.models import ChatSession, Episode, EpisodeVector, MemoryScope
from sessions_app.retrieval import WORDS_WEIGHT
from sessions_app.search import EmptyQuery, Hit, Ranking
from sessions_app.search.across import ranking_in
from sessions_app.search.base import owner_scope
from sessions_app.semantic import person_vectors
from sessions_app.semantic.vectors import VECTOR_BYTES, to_matrix

__all__ = ["Lent", "lent_texts", "rank_lent", "shares"]


def shares(session: ChatSession) -> bool:
    return session.memory_scope == MemoryScope.SHARED


@dataclass(slots=True)
class Lent:
    """The other sessions' ranked exchanges, best first, and what they were ranked with."""

    hits: list[Hit] = field(default_factory=list)
    #: episode id -> its session's id (every one of ``hits``)
    sessions: dict[int, int] = field(default_factory=dict)
    terms: tuple[str, ...] = ()
    idf: dict[str, float] = field(default_factory=dict)


def rank_lent(*, session: ChatSession, question: str, vector: np.ndarray | None, limit: int) -> Lent:
    """The ``limit`` exchanges of the person's other shared sessions that
    best answer ``question`` (``vector``: its meaning, None when retrieval
    by meaning is off), best first."""
    lent = Lent()
    if not shares(session) or limit <= 0:
        return lent
    by_words: list[Hit] = []
    try:
        ranking = _words(session, question, settings.CONTEXT_RETRIEVE_CANDIDATES)
    except EmptyQuery:
        ranking = None
    if ranking is not None:
        by_words = ranking.hits()
        lent.terms, lent.idf = tuple(ranking.terms), dict(ranking.idf)
    owned = _persons_episodes(session, [hit.episode_id for hit in by_words])
    by_words = [hit for hit in by_words if hit.episode_id in owned]
    scores = {hit.episode_id: WORDS_WEIGHT * hit.score for hit in by_words}
    hits = {hit.episode_id: hit for hit in by_words}
    sessions = dict(owned)
    if vector is not None:
        for pk, count, stand, owner_session in _by_meaning(session, vector, by_words, limit):
            scores[pk] = scores.get(pk, 0.0) + stand
            hits.setdefault(pk, Hit(pk, 0.0, frozenset(), count))
            sessions[pk] = owner_session
    order = sorted(scores, key=lambda pk: (-scores[pk], -pk))[:limit]
    lent.hits = [Hit(pk, scores[pk], hits[pk].terms, hits[pk].token_count) for pk in order]
    lent.sessions = {pk: sessions[pk] for pk in order}
    return lent


def _by_meaning(
    session: ChatSession, vector: np.ndarray, by_words: list[Hit], limit: int
) -> list[tuple[int, int, float, int]]:
    """(episode id, tokens, standing, session id) of the compared exchanges
    that may rank among the best ``limit``: the ``limit`` closest, and those
    found by words. No other can: its score is its standing alone, below
    ``limit`` others' (words only add to a score)."""
    kept = person_vectors.compared(owner_id=session.owner_id, end_user=session.end_user, asking_pk=session.pk)
    worded = np.asarray([hit.episode_id for hit in by_words], dtype=np.int64)
    also = _vectors_of(session, worded[~np.isin(worded, kept.ids)].tolist())
    ids = np.concatenate([kept.ids, also.ids])
    if not len(ids):
        return []
    vector = vector.astype(np.float32)
    similarity = np.concatenate([kept.heads @ vector, also.heads @ vector])  # never a copy of the matrix
    standing = (similarity - float(similarity.mean())) / max(float(similarity.std()), 1e-6)
    count = min(limit, len(ids))
    chosen = np.argpartition(-standing, count - 1)[:count]
    chosen = np.union1d(chosen, np.flatnonzero(np.isin(ids, worded)))
    tokens = np.concatenate([kept.tokens, also.tokens])[chosen].tolist()
    of_session = np.concatenate([kept.sessions, also.sessions])[chosen].tolist()
    return list(zip(ids[chosen].tolist(), tokens, standing[chosen].tolist(), of_session, strict=True))


def _words(session: ChatSession, question: str, limit: int) -> Ranking:
    """The question's ranking in the owner's scope, with the statistics of
    the owner's newest sessions, as the search across sessions takes its own."""
    newest = ChatSession.objects.filter(owner_id=session.owner_id).order_by("-updated_at")
    return ranking_in(scope=owner_scope(session.owner_id), newest=newest, text=question, limit=limit)


def _persons_episodes(session: ChatSession, ids: Iterable[int]) -> dict[int, int]:
    """Those of ``ids`` that belong to the person's other shared sessions -> their session's id."""
    wanted = list(ids)
    if not wanted:
        return {}
    return dict(
        Episode.objects.filter(
            pk__in=wanted,
            session__owner_id=session.owner_id,
            session__end_user=session.end_user,
            session__memory_scope=MemoryScope.SHARED,
        )
        .exclude(session_id=session.pk)
        .order_by()
        .values_list("pk", "session_id")
    )


def _vectors_of(session: ChatSession, ids: list[int]) -> person_vectors.Compared:
    """The whole exchange's vector of each of ``ids`` (found by words, not
    among the compared) that is the person's, in one query."""
    if not ids:
        return person_vectors.Compared.empty()
    vector, chat = EpisodeVector._meta.db_table, ChatSession._meta.db_table
    marks = ", ".join(["%s"] * len(ids))
    with connection.cursor() as cursor:
        cursor.execute(
            f'SELECT v."episode_id", v."token_count", substr(v."vector", 1, {VECTOR_BYTES}), v."session_id"'
            f' FROM "{vector}" v JOIN "{chat}" s ON s."id" = v."session_id"'
            f' WHERE v."episode_id" IN ({marks}) AND s."owner_id" = %s AND s."end_user" = %s'
            f' AND s."memory_scope" = %s AND s."id" <> %s',
            [*ids, session.owner_id, session.end_user, MemoryScope.SHARED.value, session.pk],
        )
        rows = sorted(cursor.fetchall())
    matrix, _ = to_matrix([bytes(row[2]) for row in rows])
    return person_vectors.Compared(
        np.asarray([row[0] for row in rows], dtype=np.int64),
        np.asarray([row[1] for row in rows], dtype=np.int64),
        matrix,
        np.asarray([row[3] for row in rows], dtype=np.int64),
    )


def lent_texts(session: ChatSession, ids: Iterable[int]) -> dict[int, tuple[Episode, str, str]]:
    """The chosen exchanges of the person's other shared sessions in full,
    with their session's title and uuid, in one query; an id that is not
    the person's (or no longer shared) is left out."""
    wanted = list(ids)
    if not wanted or not shares(session):
        return {}
    rows = (
        Episode.objects.filter(
            pk__in=wanted,
            session__owner_id=session.owner_id,
            session__end_user=session.end_user,
            session__memory_scope=MemoryScope.SHARED,
        )
        .exclude(session_id=session.pk)
        .select_related("session")
        .only("pk", "user_input", "response", "position", "created_at", "session__title", "session__uuid")
        .order_by()
    )
    return {row.pk: (row, row.session.title, str(row.session.uuid)) for row in rows}
