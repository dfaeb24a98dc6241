"""What a context reads: each a bounded query, whatever the session's length."""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from django.db import connections, router

from sessions_app.models import ChatSession, Episode
from sessions_app.querysets import MAX_ID
from sessions_app.search import EmptyQuery, Hit, rank_session
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


@dataclass(frozen=True, slots=True)
class Older:
    """What stands in for the episodes before the recent window."""

    chain: list[SummaryPart]  # oldest first
    uncovered: list[Exchange]  # the oldest episodes no row of ``chain`` reaches, as many as the digest quotes


@functools.cache
def _older_sql() -> str:
    summary, episode = Summary._meta.db_table, Episode._meta.db_table
    # SQLite takes no parentheses around a SELECT in a compound, PostgreSQL no
    # LIMIT in a branch without them; a subquery in FROM suits both. Typed
    # NULLs: PostgreSQL reads a bare NULL in a subquery as text. ``chain`` is
    # read twice, so both databases compute it once.
    return f"""
        WITH chain AS (
            SELECT id, content, token_count, first_episode_id, last_episode_id
              FROM "{summary}"
             WHERE session_id = %s AND first_episode_id < %s
             ORDER BY last_episode_id DESC, id DESC
             LIMIT %s
        )
        SELECT 1, id, content, CAST(NULL AS TEXT), token_count, first_episode_id, last_episode_id FROM chain
        UNION ALL
        SELECT * FROM (
            SELECT 2, e.id, e.user_input, e.response,
                   CAST(NULL AS INTEGER), CAST(NULL AS BIGINT), CAST(NULL AS BIGINT)
              FROM "{episode}" e
             WHERE (e.session_id, e.id) > (%s, (SELECT coalesce(max(last_episode_id), 0) FROM chain))
               AND (e.session_id, e.id) <= (%s, %s)
             ORDER BY e.session_id, e.id
             LIMIT %s
        ) AS uncovered
    """


def older(session_pk: int, before_episode_id: int | None, limit: int) -> Older:
    """In one query: the newest ``limit`` summary rows that cover at least
    one episode older than ``before_episode_id`` (the start of the recent
    window; ``None``: every episode is older), oldest first; and the oldest
    episodes between the end of those rows and the window, as many as the
    digest can quote.

    The rows are read newest first on the ``(session, last_episode_id)``
    index and the episodes as a range of the ``(session, id)`` index, so a
    long session costs no more. A row lying wholly inside the recent window
    adds nothing the full episodes do not already say, so it is left out.
    """
    before = MAX_ID if before_episode_id is None else before_episode_id
    through = MAX_ID if before_episode_id is None else before_episode_id - 1
    params = [session_pk, before, limit, session_pk, session_pk, through, DIGEST_EPISODES]
    connection = connections[router.db_for_read(Episode)]
    with connection.cursor() as cursor:
        cursor.execute(_older_sql(), params)
        rows = cursor.fetchall()
    chain = [
        SummaryPart(pk, text, tokens, first, last)
        for kind, pk, text, _, tokens, first, last in rows
        if kind == 1
    ]
    uncovered = [
        Exchange(pk, user_input, response) for kind, pk, user_input, response, *_ in rows if kind == 2
    ]
    return Older(chain=chain[::-1], uncovered=uncovered)


def ranked_hits(session: ChatSession, question: str, exclude_ids: Iterable[int]) -> list[Hit]:
    """The older episodes that rank highest for the question, best first;
    none for a question with nothing to search for."""
    try:
        return rank_session(
            session_pk=session.pk,
            episode_count=session.cached_episode_count,
            total_tokens=session.cached_total_tokens,
            text=question,
            limit=RETRIEVED_MAX,
            exclude_ids=exclude_ids,
        )
    except EmptyQuery:
        return []


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
    return dict(Episode.objects.filter(session_id=session_pk, pk__in=wanted).values_list("pk", "created_at"))
