"""What a context reads: each a bounded query, whatever the session's length."""

from __future__ import annotations

from collections.abc import Iterable
from concurrent.futures import Future
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.conf import settings

from sessions_app import semantic
from sessions_app.models import ChatSession, Episode
from sessions_app.retrieval import rank_for_question
from sessions_app.search import Hit
from summaries.context.layout import Exchange
from summaries.models import Summary

# extractive_digest quotes at most five questions and three answers, always
# the first ones it is given, so it never needs more than five episodes.
DIGEST_EPISODES = 5
#: Retrieved exchanges ranked for one question at most; the budget takes
#: what fits (at 4,000 tokens, a few dozen exchanges of usual length).
RETRIEVED_MAX = 48


@dataclass(frozen=True, slots=True)
class SummaryPart:
    id: int
    content: str
    token_count: int
    first_episode_id: int
    last_episode_id: int


def recent_exchanges(session_pk: int, limit: int) -> list[Exchange]:
    """The last ``limit`` episodes, oldest first."""
    if limit <= 0:
        return []
    rows = (
        Episode.objects.for_session(session_pk)
        .newest_first()
        .values_list("pk", "user_input", "response")[:limit]
    )
    return [Exchange(pk, user_input, response) for pk, user_input, response in reversed(list(rows))]


def summary_chain(session_pk: int, before_episode_id: int | None, limit: int) -> list[SummaryPart]:
    """The newest ``limit`` rows that cover at least one episode older than
    the recent window, oldest first (read newest first on the
    ``(session, last_episode_id)`` index, so a long chain costs no more).

    A row lying wholly inside the recent window adds nothing the full
    episodes do not already say, so it is left out.
    """
    qs = Summary.objects.filter(session_id=session_pk)
    if before_episode_id is not None:
        qs = qs.filter(first_episode_id__lt=before_episode_id)
    rows = qs.order_by("-last_episode_id", "-pk").values_list(
        "pk", "content", "token_count", "first_episode_id", "last_episode_id"
    )[:limit]
    return [SummaryPart(*row) for row in reversed(list(rows))]


def uncovered_exchanges(session_pk: int, after_id: int, before_id: int | None) -> list[Exchange]:
    """The oldest episodes between the end of the summary chain and the
    recent window, as many as the digest can quote."""
    qs = Episode.objects.after(session_pk, after_id, None if before_id is None else before_id - 1)
    rows = qs.values_list("pk", "user_input", "response")[:DIGEST_EPISODES]
    return [Exchange(*row) for row in rows]


def ranked_hits(
    session: ChatSession, question: str, exclude_ids: Iterable[int], vector: Future[Any] | None = None
) -> list[Hit]:
    """The older episodes that rank highest for the question, best first
    (``sessions_app.retrieval``: by words and by meaning)."""
    return rank_for_question(
        session=session, question=question, limit=RETRIEVED_MAX, exclude_ids=exclude_ids, vector=vector
    )


def question_vector_soon(session: ChatSession, question: str) -> Future[Any] | None:
    """Start encoding the question while the rest is read, when retrieval
    by meaning is on and the session may hold episodes older than the recent window."""
    if not semantic.enabled() or session.cached_episode_count <= settings.CONTEXT_RECENT_EPISODES:
        return None
    return semantic.question_vector_soon(question)


def episode_texts(session_pk: int, ids: Iterable[int]) -> dict[int, tuple[Exchange, datetime]]:
    """The chosen episodes in full with their dates, in one query."""
    wanted = list(ids)
    if not wanted:
        return {}
    rows = Episode.objects.filter(session_id=session_pk, pk__in=wanted).values_list(
        "pk", "user_input", "response", "created_at"
    )
    return {pk: (Exchange(pk, user_input, response), created) for pk, user_input, response, created in rows}


def episode_dates(session_pk: int, ids: Iterable[int]) -> dict[int, datetime]:
    """When the given episodes were written (the ends of summary rows), in one query."""
    wanted = sorted(set(ids))
    if not wanted:
        return {}
    return dict(
        Episode.objects.filter(session_id=session_pk, pk__in=wanted).values_list("pk", "created_at")
    )
