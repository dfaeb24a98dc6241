"""Ranking the episodes of every session a user may read at once: their
own, or every session for staff who may read them all.

The ranking is one session's (``Ranking``: BM25 from the scope's newest
episodes and its rare terms' matches in the full-text index), over a wider
scope: the owner's episodes (``Episode.owner`` is the session's owner, and
the index holds it) or every episode. The search never names the sessions
it reads, so its cost is that of the scope's window and of its rare terms'
matches (at most ``CONTEXT_RETRIEVE_CANDIDATES`` each), whether the owner
has ten sessions or thirty thousand; a term common in the scope is judged
from the window, whose episodes are its candidates, as in a long session.

Another user's text weighs on nothing, not even a count: BM25's collection
size and average length are the sums of the counters of the sessions
searched, the ``STATS_SESSIONS`` most recently written (all of them for
nearly every owner; for the few with more, the newest, which hold the
newest episodes): a sum over every session row would cost what the old
shape did, a query that grows with the sessions.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Count, QuerySet, Sum, Value
from django.db.models.functions import Coalesce

from sessions_app.access import reads_all_sessions
from sessions_app.models import ChatSession
from sessions_app.search import Hit, Ranking
from sessions_app.search.base import EVERY_EPISODE, Scope, owner_scope

__all__ = ["STATS_SESSIONS", "rank_visible", "ranking_in", "visible_scope"]

#: The most sessions whose counters make a search's statistics (module docstring).
STATS_SESSIONS = 1000


def visible_scope(user: Any) -> Scope | None:
    """The episodes ``user`` may read, as a search scope (the rule of
    ``ChatSession.objects.visible_to``); ``None`` for an anonymous user."""
    if not user.is_authenticated:
        return None
    return EVERY_EPISODE if reads_all_sessions(user) else owner_scope(user.pk)


def rank_visible(*, user: Any, text: str, limit: int) -> list[Hit]:
    """The episodes of the sessions ``user`` may read that best match ``text``,
    best first, at most ``limit``. ``EmptyQuery`` when the text holds no
    searchable term."""
    scope = visible_scope(user)
    if scope is None:
        return []
    # An owner's newest sessions are a range of the (owner, updated_at) index; everyone's, of the key.
    newest = ChatSession.objects.visible_to(user).order_by("-updated_at" if scope.keys else "-pk")
    return ranking_in(scope=scope, newest=newest, text=text, limit=limit).hits()


def ranking_in(*, scope: Scope, newest: QuerySet[ChatSession], text: str, limit: int) -> Ranking:
    """``text``'s ranking in ``scope``, with the statistics (collection size,
    average length) of the first ``STATS_SESSIONS`` of ``newest``: the
    sessions whose episodes ``scope`` holds, newest first (module docstring).
    ``EmptyQuery`` when the text holds no searchable term."""
    totals = newest[:STATS_SESSIONS].aggregate(
        sessions=Count("pk"),
        episodes=Coalesce(Sum("cached_episode_count"), Value(0)),
        tokens=Coalesce(Sum("cached_total_tokens"), Value(0)),
    )
    return Ranking(
        scope=scope,
        episode_count=totals["episodes"],
        total_tokens=totals["tokens"],
        text=text,
        limit=limit,
        exact_count=totals["sessions"] < STATS_SESSIONS,
    )
