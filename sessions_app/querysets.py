"""Read-side querysets for sessions and episodes.

Every per-session read costs the same whatever the session's length and
whatever its neighbours hold: session figures come from counters kept on
the session row by the write path (in the same transaction as the insert),
and episode reads take the ``(session, id)`` index by their shape.

Why the episode reads take the plan they take. Given ``session_id = n``
with ``ORDER BY id``, PostgreSQL may answer from the primary key instead of
the ``(session, id)`` index, filtering out other sessions' rows as it walks.
It does so in two cases that grow without bound in production: a literal
``n`` for a session that holds most of the table (its statistics promise
matches every few rows, but the rows it walks first may be another large
session's), and a small old session under a large new one (the walk from
the top passes every newer episode before it meets one of the session's).
Hiding ``n`` from the planner trades one case for the other. So a session's
episodes are named by row comparisons on ``(session_id, id)`` and ordered
by both columns: no equality makes ``session_id`` a constant the planner
could drop from the ordering, and only the ``(session, id)`` index yields
rows in that order, so every plan is a range scan of that index over the
session's own rows.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypedDict

from django.db import models
from django.db.models import Count, F, Func, Max, Min, OuterRef, Subquery, Sum, Value
from django.db.models.functions import Coalesce
from django.db.models.lookups import GreaterThan, LessThanOrEqual

from sessions_app.access import changes_all_sessions, reads_all_sessions, session_confinement

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser

# Largest value a PostgreSQL bigint (and a SQLite integer) can hold.
MAX_ID = 2**63 - 1


class SessionStats(TypedDict):
    episode_count: int
    total_tokens: int
    last_episode_id: int | None


class ChatSessionQuerySet(models.QuerySet):
    def with_stats(self) -> ChatSessionQuerySet:
        """Annotate ``episode_count``, ``total_tokens`` and ``last_episode_id``
        from the counters on the session row: no read of the episodes."""
        return self.annotate(
            episode_count=F("cached_episode_count"),
            total_tokens=F("cached_total_tokens"),
            last_episode_id=F("cached_last_episode_id"),
        )

    def with_aggregate_stats(self) -> ChatSessionQuerySet:
        """The same figures aggregated from the episodes themselves: the
        truth the counters are checked against (``check_session_counters``,
        tests). Its cost grows with the sessions' length; never on a hot path.

        Each figure is its own correlated subquery rather than a JOIN, so
        adding another annotation later cannot multiply rows.
        """
        from sessions_app.models import Episode  # models imports this module

        per_session = Episode.objects.filter(session=OuterRef("pk")).order_by().values("session")
        return self.annotate(
            episode_count=Coalesce(Subquery(per_session.annotate(n=Count("pk")).values("n")), Value(0)),
            total_tokens=Coalesce(Subquery(per_session.annotate(t=Sum("token_count")).values("t")), Value(0)),
            last_episode_id=Subquery(per_session.annotate(m=Max("pk")).values("m")),
        )

    def visible_to(self, user: AbstractBaseUser) -> ChatSessionQuerySet:
        """The sessions ``user`` may read: their own, or every one for staff
        with the view (or change) permission (``sessions_app.access``)."""
        return self._scoped(user, every=reads_all_sessions)

    def changeable_by(self, user: AbstractBaseUser) -> ChatSessionQuerySet:
        """The sessions ``user`` may change (episodes, title, deletion, chat):
        their own, or every one for staff with the change permission."""
        return self._scoped(user, every=changes_all_sessions)

    def _scoped(self, user: AbstractBaseUser, *, every: Callable[[Any], bool]) -> ChatSessionQuerySet:
        if not user.is_authenticated:
            return self.none()
        if every(user):
            return self
        return self.filter(session_confinement(user), owner=user)

    def stats_for(self, session_pk: int) -> SessionStats:
        """Stats of one session from its counters, in one query of constant cost."""
        row = (
            self.filter(pk=session_pk)
            .values("cached_episode_count", "cached_total_tokens", "cached_last_episode_id")
            .get()
        )
        return SessionStats(
            episode_count=row["cached_episode_count"],
            total_tokens=row["cached_total_tokens"],
            last_episode_id=row["cached_last_episode_id"],
        )


class Row(Func):
    """``(a, b)``: a row value, compared in the order of a two-column index."""

    template = "(%(expressions)s)"
    arg_joiner = ", "
    output_field = models.BigIntegerField()


def session_range(session_pk: int, *, after_id: int = 0, through_id: int = MAX_ID) -> list[GreaterThan]:
    """Conditions naming the episodes of one session with ``after_id < id <= through_id``
    as a range of the ``(session, id)`` index (see the module docstring)."""
    key = Row(F("session_id"), F("id"))
    return [
        GreaterThan(key, Row(Value(session_pk), Value(after_id))),
        LessThanOrEqual(key, Row(Value(session_pk), Value(through_id))),
    ]


class EpisodeQuerySet(models.QuerySet):
    def for_session(self, session_pk: int) -> EpisodeQuerySet:
        """A session's episodes, oldest first, as a range of the ``(session, id)`` index."""
        return self.filter(*session_range(session_pk)).in_index_order()

    def after(self, session_pk: int, after_id: int, through_id: int | None = None) -> EpisodeQuerySet:
        """The tail of a session: ``after_id < id <= through_id`` (no upper bound when None), oldest first."""
        upper = MAX_ID if through_id is None else through_id
        return self.filter(*session_range(session_pk, after_id=after_id, through_id=upper)).in_index_order()

    def in_index_order(self, *, newest_first: bool = False) -> EpisodeQuerySet:
        """Ordered by ``(session_id, id)``, the index's own order: within one
        session the same as by id, and a plan only that index can serve."""
        if newest_first:
            return self.order_by("-session_id", "-pk")
        return self.order_by("session_id", "pk")

    def newest_first(self) -> EpisodeQuerySet:
        return self.in_index_order(newest_first=True)

    def range_positions(self, session_pk: int, first_id: int, last_id: int) -> tuple[int, int]:
        """The positions of the first and the last episode with ``first_id <= id <= last_id``
        (a summary row's range), in one query; ``(0, 0)`` when the range holds none."""
        found = self.after(session_pk, first_id - 1, last_id).order_by().aggregate(
            first=Min("position"), last=Max("position")
        )
        return found["first"] or 0, found["last"] or 0
