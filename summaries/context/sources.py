"""What a context reads: each a bounded query, whatever the session's length."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.db import connections, router

from sessions_app.excerpts import matched_words
from sessions_app.models import ChatSession, Episode
from sessions_app.querysets import MAX_ID
from sessions_app.search.database import episode_backend
from sessions_app.search.snippets import marker_pair
from summaries.context.layout import Exchange
from summaries.models import Summary

# extractive_digest quotes at most five questions and three answers, always
# the first ones it is given, so it never needs more than five episodes.
DIGEST_EPISODES = 5
#: Retrieved exchanges ranked for one question: at least this many, and
#: more for a budget that holds more of the session's exchanges
#: (``retrieval_depth``); the budget takes what fits.
RETRIEVED_MIN = 48
#: How many more than fit at the session's mean size: exchanges too large
#: for what is left are passed over for smaller ones further down.
RETRIEVED_SPARE = 1.5


@dataclass(frozen=True, slots=True)
class SummaryPart:
    id: int
    content: str
    token_count: int
    first_episode_id: int
    last_episode_id: int


@dataclass(frozen=True, slots=True)
class Window:
    """The recent window and what stands in for the episodes before it."""

    recent: list[Exchange]  # the last ``window`` episodes, oldest first
    chain: list[SummaryPart]  # oldest first; empty unless the window is full
    uncovered: list[Exchange]  # the oldest episodes no row of ``chain`` reaches, as many as the digest quotes
    tokens: dict[int, int]  # each recent episode's token count


@functools.cache
def _window_sql() -> str:
    summary, episode = Summary._meta.db_table, Episode._meta.db_table
    # ``start`` is the first id of a full window (the end of the ids for a
    # window of 0) and NULL for a window that is not full: then nothing is
    # older and the other two parts read no rows. SQLite takes no parentheses
    # around a SELECT in a compound, PostgreSQL no LIMIT in a branch without
    # them; a subquery in FROM suits both. Typed NULLs: PostgreSQL reads a bare
    # NULL in a subquery as text. CTEs read twice are computed once.
    return f"""
        WITH recent AS (
            SELECT id, user_input, response, position, token_count FROM "{episode}"
             WHERE (session_id, id) > (%(session)s, 0) AND (session_id, id) <= (%(session)s, %(max_id)s)
             ORDER BY session_id DESC, id DESC
             LIMIT %(window)s
        ), bound AS (
            SELECT CASE WHEN count(*) >= %(window)s THEN coalesce(min(id), %(max_id)s) END AS start FROM recent
        ), chain AS (
            SELECT id, content, token_count, first_episode_id, last_episode_id
              FROM "{summary}"
             WHERE session_id = %(session)s AND first_episode_id < (SELECT start FROM bound)
               AND content <> ''
             ORDER BY last_episode_id DESC, id DESC
             LIMIT %(summaries)s
        )
        SELECT 0, id, user_input, response, position, CAST(token_count AS BIGINT), CAST(NULL AS BIGINT)
          FROM recent
        UNION ALL
        SELECT 1, id, content, CAST(NULL AS TEXT), token_count, first_episode_id, last_episode_id FROM chain
        UNION ALL
        SELECT * FROM (
            SELECT 2, e.id, e.user_input, e.response, e.position, CAST(NULL AS BIGINT), CAST(NULL AS BIGINT)
              FROM "{episode}" e
             WHERE (e.session_id, e.id) > (%(session)s, (SELECT coalesce(max(last_episode_id), 0) FROM chain))
               AND (e.session_id, e.id) < (%(session)s, (SELECT start FROM bound))
             ORDER BY e.session_id, e.id
             LIMIT %(digest)s
        ) AS uncovered
    """


def recent_window(session_pk: int, window: int, summaries: int) -> Window:
    """In one query: the last ``window`` episodes; and, when the session
    holds more than that (every episode is older for a window of 0), the
    newest ``summaries`` summary rows that cover at least one episode older
    than the window, and the oldest episodes between the end of those rows
    and the window, as many as the digest can quote.

    The episodes are ranges of the ``(session, id)`` index and the rows are
    read newest first on the ``(session, last_episode_id)`` index, so a
    long session costs no more. A row lying wholly inside the recent window
    adds nothing the full episodes do not already say, so it is left out.
    """
    params = {
        "session": session_pk,
        "window": max(window, 0),
        "max_id": MAX_ID,
        "summaries": summaries,
        "digest": DIGEST_EPISODES,
    }
    connection = connections[router.db_for_read(Episode)]
    with connection.cursor() as cursor:
        cursor.execute(_window_sql(), params)
        rows = cursor.fetchall()
    # The fifth column is an episode's position, a summary row's token count;
    # the sixth a recent episode's token count.
    recent = [
        Exchange(pk, user_input, response, number)
        for part, pk, user_input, response, number, *_ in rows
        if part == 0
    ]
    chain = [
        SummaryPart(pk, text, tokens, first, last)
        for part, pk, text, _, tokens, first, last in rows
        if part == 1
    ]
    uncovered = [
        Exchange(pk, user_input, response, number)
        for part, pk, user_input, response, number, *_ in rows
        if part == 2
    ]
    tokens = {pk: count for part, pk, _, _, _, count, _ in rows if part == 0}
    return Window(recent=recent[::-1], chain=chain[::-1], uncovered=uncovered, tokens=tokens)


def retrieval_depth(session: ChatSession, budget: int, piece_tokens: int) -> int:
    """How many exchanges to rank for a context of ``budget`` tokens: enough
    to fill it with exchanges of the session's mean size (each with
    ``piece_tokens`` of labels), ``RETRIEVED_SPARE`` times over; at least
    ``RETRIEVED_MIN``, at most ``CONTEXT_RETRIEVE_CANDIDATES``. A fixed
    number would leave a large budget to the summaries once it ran out,
    though the exchanges keep more (``summaries.context``'s docstring)."""
    # A long exchange is quoted by its passages, at most CONTEXT_PASSAGE_TOKENS (summaries.context.selection).
    mean = session.cached_total_tokens / max(session.cached_episode_count, 1)
    mean = min(mean, settings.CONTEXT_PASSAGE_TOKENS)
    fits = budget / (mean + piece_tokens)
    return int(min(max(RETRIEVED_MIN, RETRIEVED_SPARE * fits), settings.CONTEXT_RETRIEVE_CANDIDATES))


def episode_texts(session_pk: int, ids: Iterable[int]) -> dict[int, tuple[Exchange, datetime]]:
    """The chosen episodes in full with their dates, in one query."""
    wanted = list(ids)
    if not wanted:
        return {}
    rows = Episode.objects.filter(session_id=session_pk, pk__in=wanted).values_list(
        "pk", "user_input", "response", "position", "created_at"
    )
    return {
        pk: (Exchange(pk, user_input, response, position), created)
        for pk, user_input, response, position, created in rows
    }


def quoted_texts(
    session_pk: int, ids: Iterable[int], terms: Sequence[str]
) -> tuple[dict[int, tuple[Exchange, datetime]], dict[int, tuple[list, list]]]:
    """``episode_texts`` and the words of ``terms`` the index matches in
    them (``excerpts.matched_words``), in one query on PostgreSQL. The
    markers are the first pair ``marker_pair`` tries; in the rare text that
    holds one, the words are marked again with a pair it does not hold (one query more)."""
    wanted = list(ids)
    if not wanted or not terms:
        return episode_texts(session_pk, wanted), {}
    backend = episode_backend()
    start, stop = marker_pair(())
    rows = backend.marked_texts(session_pk, wanted, list(terms), start=start, stop=stop)
    texts = {
        pk: (Exchange(pk, row.user_input, row.response, row.position), row.created_at)
        for pk, row in rows.items()
    }
    sides = [side for row in rows.values() for side in (row.user_input, row.response)]
    if any(start in side or stop in side for side in sides):
        start, stop = marker_pair(sides)
        marked = backend.marked(list(rows), list(terms), start=start, stop=stop)
    else:
        marked = {pk: row.marked for pk, row in rows.items() if row.marked is not None}
    return texts, matched_words(marked, start, stop)


def whole_history(session_pk: int, limit: int) -> list[Exchange]:
    """The session's episodes, oldest first, at most ``limit`` (the newest):
    read only when the counters say the whole history fits a context."""
    rows = Episode.objects.filter(session_id=session_pk).order_by("-pk").values_list(
        "pk", "user_input", "response", "position"
    )[:limit]
    return [Exchange(*row) for row in reversed(rows)]


def episode_dates(session_pk: int, ids: Iterable[int]) -> dict[int, datetime]:
    """When the given episodes were written (the ends of summary rows), in one query."""
    wanted = sorted(set(ids))
    if not wanted:
        return {}
    return dict(Episode.objects.filter(session_id=session_pk, pk__in=wanted).values_list("pk", "created_at"))
