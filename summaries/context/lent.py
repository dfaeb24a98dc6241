"""A shared session's context reads from the person's other shared
sessions (``sessions_app.shared_memory``): their exchanges that best answer
the question are ranked with this session's own older ones and go through
the same passage selection and floor (``summaries.context.selection``),
labelled with their chat's title (``[8 May 2023 · "Trip planning" #12]``).
A session short enough for the seed's layout keeps it for what it holds
and quotes them under "From your other chats:".
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sessions_app import semantic, shared_memory
from sessions_app.models import ChatSession
from sessions_app.retrieval import PendingRanking
from sessions_app.search import Hit
from sessions_app.semantic import small_talk


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
