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
then kept to the person's in one query; by meaning, the newest exchanges
of the person's ``MEANING_SESSIONS`` most recently active shared sessions
(``CONTEXT_RETRIEVE_CANDIDATES`` in all) are compared, with the episodes
found by words.
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
from django.db.models import Count, Sum, Value
from django.db.models.functions import Coalesce

from sessions_app.models import ChatSession, Episode, EpisodeVector, MemoryScope
from sessions_app.retrieval import WORDS_WEIGHT
from sessions_app.search import EmptyQuery, Hit, Ranking
from sessions_app.search.across import STATS_SESSIONS
from sessions_app.search.base import owner_scope
from sessions_app.semantic.vectors import VECTOR_BYTES, to_matrix

__all__ = ["Lent", "lenders", "lent_texts", "rank_lent", "shares"]

#: Compared by meaning: the newest exchanges of this many of the person's
#: most recently active other shared sessions, ``CONTEXT_RETRIEVE_CANDIDATES``
#: in all; older ones are found by their words.
MEANING_SESSIONS = 10


def shares(session: ChatSession) -> bool:
    return session.memory_scope == MemoryScope.SHARED


def lenders(session: ChatSession):  # -> QuerySet[ChatSession]
    """The person's other shared sessions; none for a session that is not shared."""
    if not shares(session):
        return ChatSession.objects.none()
    return ChatSession.objects.filter(
        owner_id=session.owner_id, end_user=session.end_user, memory_scope=MemoryScope.SHARED
    ).exclude(pk=session.pk)


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
        ids, tokens, heads, of_session = _vectors(session, [hit.episode_id for hit in by_words])
        if len(ids):
            similarity = heads @ vector.astype(np.float32)
            deviation = float(similarity.std())
            standing = (similarity - float(similarity.mean())) / max(deviation, 1e-6)
            for pk, count, stand, owner_session in zip(
                ids.tolist(), tokens.tolist(), standing.tolist(), of_session, strict=True
            ):
                scores[pk] = scores.get(pk, 0.0) + stand
                hits.setdefault(pk, Hit(pk, 0.0, frozenset(), count))
                sessions[pk] = owner_session
    order = sorted(scores, key=lambda pk: (-scores[pk], -pk))[:limit]
    lent.hits = [Hit(pk, scores[pk], hits[pk].terms, hits[pk].token_count) for pk in order]
    lent.sessions = {pk: sessions[pk] for pk in order}
    return lent


def _words(session: ChatSession, question: str, limit: int) -> Ranking:
    """The question's ranking in the owner's scope, with the statistics of
    the owner's newest ``STATS_SESSIONS`` sessions, the scope whose
    episodes the terms' frequencies count (as the search across sessions
    takes its own)."""
    newest = ChatSession.objects.filter(owner_id=session.owner_id).order_by("-updated_at")[:STATS_SESSIONS]
    totals = newest.aggregate(
        sessions=Count("pk"),
        episodes=Coalesce(Sum("cached_episode_count"), Value(0)),
        tokens=Coalesce(Sum("cached_total_tokens"), Value(0)),
    )
    return Ranking(
        scope=owner_scope(session.owner_id),
        episode_count=totals["episodes"],
        total_tokens=totals["tokens"],
        text=question,
        limit=limit,
        exact_count=totals["sessions"] < STATS_SESSIONS,
    )


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


def _vectors(session: ChatSession, also: list[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[int]]:
    """The whole exchange's vector of the newest exchanges of the person's
    ``MEANING_SESSIONS`` most recently active other shared sessions
    (``CONTEXT_RETRIEVE_CANDIDATES`` in all), and of those of ``also``
    (found by words): ids, token counts, vectors, sessions. Two queries: the
    sessions, from the ``(owner, end_user, memory_scope)`` index; then each
    one's newest vectors as a range of the ``(session, episode)`` index (row
    comparisons, as ``semantic.neighbours`` reads one session's), so no plan
    walks the person's episodes whatever the planner's statistics say."""
    sessions = list(lenders(session).order_by("-updated_at").values_list("pk", flat=True)[:MEANING_SESSIONS])
    episode, chat, vector = Episode._meta.db_table, ChatSession._meta.db_table, EpisodeVector._meta.db_table
    head = f'substr(v."vector", 1, {VECTOR_BYTES})'
    each = max(1, settings.CONTEXT_RETRIEVE_CANDIDATES // MEANING_SESSIONS)
    # SQLite takes no LIMIT in a branch of a compound, PostgreSQL none without
    # parentheses: a subquery in FROM suits both.
    newest = [
        f'SELECT * FROM (SELECT v."episode_id", v."token_count", {head}, v."session_id" FROM "{vector}" v'
        f' WHERE (v."session_id", v."episode_id") > (%s, 0) AND (v."session_id", v."episode_id") <= (%s, %s)'
        f' ORDER BY v."session_id" DESC, v."episode_id" DESC LIMIT %s) AS s{n}'
        for n in range(len(sessions))
    ]
    params: list[object] = []
    for pk in sessions:
        params += [pk, pk, 2**63 - 1, each]
    if also:
        marks = ", ".join(["%s"] * len(also))
        newest.append(
            f'SELECT v."episode_id", v."token_count", {head}, e."session_id" FROM "{vector}" v'
            f' JOIN "{episode}" e ON e."id" = v."episode_id" JOIN "{chat}" s ON s."id" = e."session_id"'
            f' WHERE v."episode_id" IN ({marks}) AND s."owner_id" = %s AND s."end_user" = %s'
            f' AND s."memory_scope" = %s AND s."id" <> %s'
        )
        params += [*also, session.owner_id, session.end_user, MemoryScope.SHARED.value, session.pk]
    rows: list[tuple] = []
    if newest:
        with connection.cursor() as cursor:
            cursor.execute(" UNION ".join(newest), params)
            rows = sorted(cursor.fetchall())
    matrix, _ = to_matrix([bytes(row[2]) for row in rows])
    ids = np.asarray([row[0] for row in rows], dtype=np.int64)
    tokens = np.asarray([row[1] for row in rows], dtype=np.int64)
    return ids, tokens, matrix, [row[3] for row in rows]


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
