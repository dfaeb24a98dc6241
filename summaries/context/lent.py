"""A shared session's context reads from the person's other shared
sessions (``sessions_app.shared_memory``): their exchanges that best answer
the question are ranked with this session's own older ones and go through
the same passage selection and floor (``summaries.context.selection``),
labelled with their chat's title (``[8 May 2023 · "Trip planning" #12]``).
A session short enough for the seed's layout keeps it for what it holds
and quotes them under "From your other chats:". The summary rows of the
chats those exchanges come from compete too, when they answer the
question (``lent_summaries``), offered with the best lent exchanges.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from django.conf import settings

from sessions_app import semantic, shared_memory
from sessions_app.labels import exchanges_label
from sessions_app.models import ChatSession, MemoryScope
from sessions_app.retrieval import PendingRanking
from sessions_app.search import Hit
from sessions_app.semantic import small_talk
from sessions_app.tokens import count_tokens
from summaries.context.budget import Piece
from summaries.context.sources import SummaryPart
from summaries.context.summary_ranking import answering_passages, quoted
from summaries.models import Summary

#: The kind of a piece that is a summary row of another chat: quoted with
#: the lent exchanges, in their section, and counted against it.
LENT_SUMMARY = "lent_summary"


@dataclass(frozen=True, slots=True)
class Borrowed:
    session: ChatSession
    ranked: shared_memory.Lent
    vector: np.ndarray | None  # the question's, None when retrieval by meaning is off


def borrow(
    *, session: ChatSession, question: str, pending: PendingRanking | None, depth: int
) -> Borrowed | None:
    """The person's other chats' best exchanges for ``question`` (at most
    ``depth``), or None: a session that is not shared, a question that
    needs no memory, nothing found. ``pending``: this session's own
    ranking, whose question vector is reused when it has one."""
    if not shared_memory.shares(session):
        return None
    vector = None
    if pending is not None and pending.vector is not None:
        vector = pending.vector.result()
    elif semantic.enabled():
        vector = semantic.question_vector(question)
        if small_talk.is_small_talk(question, vector):
            return None
    ranked = shared_memory.rank_lent(session=session, question=question, vector=vector, limit=depth)
    return Borrowed(session, ranked, vector) if ranked.hits else None


def merged(own: list[Hit], borrowed: Borrowed | None) -> list[Hit]:
    """This session's ranked exchanges and the lent ones, best first by score."""
    if borrowed is None:
        return own
    return sorted([*own, *borrowed.ranked.hits], key=lambda hit: (-hit.score, -hit.episode_id))


#: The other chats whose summary rows compete: those of the best lent exchanges, at most this many.
SUMMARY_SESSIONS = 4


def lent_summaries(
    borrowed: Borrowed | None, question: str
) -> tuple[list[Piece], dict[int, str]]:
    """The summary rows of the other chats the best lent exchanges come
    from (``SUMMARY_SESSIONS`` of them, their newest ``CONTEXT_MAX_SUMMARIES``
    rows in all: one query) that answer ``question``
    (``summary_ranking.answering_passages``), quoted by their passages that do,
    labelled with their chat's title; and each row's session uuid."""
    if borrowed is None:
        return [], {}
    order = list(dict.fromkeys(borrowed.ranked.sessions[hit.episode_id] for hit in borrowed.ranked.hits))
    session = borrowed.session
    rows = list(
        Summary.objects.filter(
            session_id__in=order[:SUMMARY_SESSIONS],
            session__owner_id=session.owner_id,
            session__end_user=session.end_user,
            session__memory_scope=MemoryScope.SHARED,
        )
        .exclude(session_id=session.pk)
        .select_related("session")
        .only(
            "pk", "content", "token_count", "first_episode_id", "last_episode_id", "first_position",
            "last_position", "session__title", "session__uuid",
        )
        .order_by("-last_episode_id", "-pk")[: settings.CONTEXT_MAX_SUMMARIES]
    )  # fmt: skip
    if not rows:
        return [], {}
    parts = [SummaryPart(r.pk, r.content, r.token_count, r.first_episode_id, r.last_episode_id) for r in rows]
    pieces = []
    for row, passages in zip(rows, answering_passages(parts, question, borrowed.vector), strict=True):
        if not passages:
            continue
        name = row.session.title.strip() or "Untitled chat"
        label = f'["{name}" · {exchanges_label(row.first_position, row.last_position)}] '
        whole = Piece(LENT_SUMMARY, row.pk, label + row.content, row.token_count + count_tokens(label) + 1)
        pieces.append(quoted(whole, row.content, passages) or whole)
    return pieces, {row.pk: str(row.session.uuid) for row in rows if any(p.id == row.pk for p in pieces)}
