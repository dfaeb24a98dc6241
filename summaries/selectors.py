"""Reads for summarization: the cheap gate, the un-summarized tail, the state.

Every read here has a cost bounded by what it returns, never by the length of
the session: counters come from the session row, "how far do summaries reach"
is one probe of the ``(session, last_episode_id)`` index, and "are there at
least N new episodes" is one probe of the ``(session, id)`` index with an
OFFSET/LIMIT instead of a COUNT.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import lru_cache
from typing import Any, TypedDict

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.models import F, OuterRef, Q, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from sessions_app.models import ChatSession, Episode
from summaries.models import SummarizationState, Summary

State = SummarizationState.State


@dataclass(frozen=True, slots=True)
class Gate:
    """What the write path and a run need to decide whether a pass is due."""

    session_pk: int
    total_tokens: int
    covered_through: int  # last episode id folded into a summary; 0 when none
    enough_new_episodes: bool  # at least SUMMARY_MIN_EPISODES after covered_through
    state: str | None  # None: the session has no state row yet
    last_episode_id: int | None = None  # only filled by gate_for_run

    @property
    def fires(self) -> bool:
        return self.total_tokens > settings.SUMMARY_THRESHOLD_TOKENS and self.enough_new_episodes


def _covered_through_expr(session_ref: OuterRef | F) -> Coalesce:
    """Highest ``last_episode_id`` of the session's rows (0 when none): one backward index probe."""
    latest = (
        Summary.objects.filter(session_id=session_ref)
        .order_by("-last_episode_id")
        .values("last_episode_id")[:1]
    )
    return Coalesce(Subquery(latest), Value(0))


def _nth_pending_expr(n: int) -> Subquery:
    """Id of the n-th episode after the summarized part, or NULL when there are fewer.

    The OFFSET stops the index scan after ``n`` entries, so this costs the
    same for a session of ten episodes and of a million.
    """
    return Subquery(
        Episode.objects.filter(
            session_id=OuterRef("pk"), pk__gt=_covered_through_expr(OuterRef(OuterRef("pk")))
        )
        .order_by("pk")
        .values("pk")[n - 1 : n]
    )


def _gate_queryset(session_pks: QuerySet | list[int] | None = None) -> QuerySet:
    qs = ChatSession.objects.all() if session_pks is None else ChatSession.objects.filter(pk__in=session_pks)
    return qs.order_by().annotate(
        covered_through=_covered_through_expr(OuterRef("pk")),
        nth_pending=_nth_pending_expr(settings.SUMMARY_MIN_EPISODES),
        # LEFT JOIN on the one-to-one state row: no extra query for the state.
        st_state=F("summarization__state"),
        st_failed_at=F("summarization__failed_at"),
    )


# A primary key no session has: marks where the real one goes in the cached SQL.
_PK_SENTINEL = -7_211_939_733
_GATE_COLUMNS = ("pk", "cached_total_tokens", "covered_through", "nth_pending", "st_state")


@lru_cache(maxsize=16)
def _gate_sql(alias: str, vendor: str, min_episodes: int) -> tuple[str, tuple[Any, ...]]:
    """The gate's SQL, compiled once per database and setting.

    Compiling the nested subqueries costs the ORM about a millisecond, four
    times what PostgreSQL needs to run them, and this runs on every write.
    ``min_episodes`` is part of the key because it is inlined as the OFFSET.
    """
    query = _gate_queryset([_PK_SENTINEL]).values(*_GATE_COLUMNS).query
    sql, params = query.get_compiler(using=alias).as_sql()
    return sql, tuple(params)


def session_gate(session_pk: int, *, using: str = DEFAULT_DB_ALIAS) -> Gate | None:
    """The gate of one session in a single query (None when the session is gone).

    This runs after every episode commit, so it must stay one query of
    constant cost; tests count it.
    """
    connection = connections[using]
    sql, params = _gate_sql(using, connection.vendor, settings.SUMMARY_MIN_EPISODES)
    with connection.cursor() as cursor:
        cursor.execute(sql, tuple(session_pk if p == _PK_SENTINEL else p for p in params))
        row = cursor.fetchone()
    return None if row is None else _gate_from(dict(zip(_GATE_COLUMNS, row)))


def gate_for_run(session_pk: int) -> Gate | None:
    """The gate plus the session's last episode id, which bounds what a run folds."""
    row = _gate_queryset([session_pk]).with_last_episode_id().values(*_GATE_COLUMNS, "last_episode_id").first()
    return None if row is None else _gate_from(row)


def _gate_from(values: dict[str, Any]) -> Gate:
    return Gate(
        session_pk=values["pk"],
        total_tokens=values["cached_total_tokens"],
        covered_through=values["covered_through"] or 0,
        enough_new_episodes=values["nth_pending"] is not None,
        state=values["st_state"],
        last_episode_id=values.get("last_episode_id"),
    )


def covered_through(session_pk: int) -> int:
    """Last episode id folded into any summary row of the session (0 when none)."""
    value = (
        Summary.objects.filter(session_id=session_pk)
        .order_by("-last_episode_id")
        .values_list("last_episode_id", flat=True)
        .first()
    )
    return value or 0


def latest_summary(session_pk: int) -> Summary | None:
    """The row that reaches furthest: the one a cumulative update would extend."""
    return Summary.objects.latest_for(session_pk)


EpisodeText = tuple[int, str, str]  # (id, user_input, response)


def tail_for_chunk(
    session_pk: int, *, after_id: int, through_id: int | None, max_chars: int, page: int = 40
) -> list[EpisodeText]:
    """The oldest un-summarized episodes, just enough to fill one call.

    Pages through ``id > after_id`` (bounded by ``through_id``) and stops as
    soon as the text read exceeds ``max_chars``, so a backlog of thousands of
    episodes costs one short query per call, not one huge read.
    """
    rows: list[EpisodeText] = []
    seen_chars = 0
    cursor = after_id
    while True:
        qs = Episode.objects.after(session_pk, cursor)
        if through_id is not None:
            qs = qs.filter(pk__lte=through_id)
        batch = list(qs.values_list("pk", "user_input", "response")[:page])
        for row in batch:
            rows.append(row)
            seen_chars += len(row[1]) + len(row[2])
            if seen_chars > max_chars:
                return rows
        if len(batch) < page:
            return rows
        cursor = batch[-1][0]


def pending_episode_count(session_pk: int) -> int:
    """Episodes not yet folded into a summary (a COUNT over the tail only)."""
    return Episode.objects.after(session_pk, covered_through(session_pk)).count()


class SummarizationStatus(TypedDict):
    state: str
    last_error: str
    updated_at: datetime | None
    pending_episodes: int


def summarization_status(session_or_pk: ChatSession | int) -> SummarizationStatus:
    """The session's summarization state as views and the API show it.

    A session that never had a run is ``idle``. ``pending_episodes`` counts
    the episodes no summary covers yet.
    """
    session_pk = session_or_pk.pk if isinstance(session_or_pk, ChatSession) else int(session_or_pk)
    row = (
        SummarizationState.objects.filter(session_id=session_pk)
        .values("state", "last_error", "updated_at")
        .first()
    )
    if row is None:
        row = {"state": State.IDLE, "last_error": "", "updated_at": None}
    return SummarizationStatus(
        state=row["state"],
        last_error=row["last_error"],
        updated_at=row["updated_at"],
        pending_episodes=pending_episode_count(session_pk),
    )


def sessions_with_pending_work(*, now: datetime | None = None, limit: int = 500) -> list[int]:
    """Primary keys of sessions the sweep should enqueue, oldest activity first.

    - the gate fires and nothing is queued or running (a lost trigger: broker
      down at write time, or a write path that skipped the signal);
    - the gate fires and the last run failed long enough ago;
    - a run's lease expired (its worker died and nothing took over);
    - queued for so long that the message must have been lost.
    """
    now = now or timezone.now()
    retry_cutoff = now - timedelta(seconds=settings.SUMMARY_RETRY_AFTER_SECONDS)
    stale_queued = now - timedelta(seconds=settings.SUMMARY_QUEUED_STALE_SECONDS)
    gate_fires = Q(cached_total_tokens__gt=settings.SUMMARY_THRESHOLD_TOKENS, nth_pending__isnull=False)
    wanted = (
        (gate_fires & (Q(st_state__isnull=True) | Q(st_state=State.IDLE)))
        | (
            gate_fires
            & Q(st_state=State.FAILED)
            & (Q(st_failed_at__isnull=True) | Q(st_failed_at__lte=retry_cutoff))
        )
        | Q(st_state=State.RUNNING, summarization__lease_expires_at__lt=now)
        | Q(st_state=State.QUEUED, summarization__updated_at__lt=stale_queued)
    )
    qs = (
        _gate_queryset()
        # Only sessions over the threshold or with a state row can qualify;
        # this keeps the correlated subqueries off the bulk of small sessions.
        .filter(Q(cached_total_tokens__gt=settings.SUMMARY_THRESHOLD_TOKENS) | Q(summarization__isnull=False))
        .filter(wanted)
        .order_by("updated_at")
        .values_list("pk", flat=True)[:limit]
    )
    return list(qs)
