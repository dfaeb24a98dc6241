"""Reads for summarization: the cheap gate, the un-summarized tail, the state.

Every read here has a cost bounded by what it returns, never by the length of
the session: the episode count and token total are counters on the session
row, and how far the summaries reach (and how many episodes that covers) are
counters on the state row (``summaries.coverage``); the pending episodes are
their difference, never a count of the tail.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import lru_cache
from typing import Any, TypedDict

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.models import F, Q, QuerySet, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from sessions_app.access import acts_as_staff
from sessions_app.models import ChatSession, Episode
from summaries.coverage import chain_reach
from summaries.models import SummarizationState, Summary

State = SummarizationState.State


@dataclass(frozen=True, slots=True)
class Gate:
    """What the write path and a run need to decide whether a pass is due."""

    session_pk: int
    total_tokens: int
    covered_through: int  # last episode id folded into a summary; 0 when none
    pending_episodes: int  # episodes after covered_through
    state: str | None  # None: the session has no state row yet
    last_episode_id: int | None = None
    # A run found the owner at the model-call cap and the cap does not allow
    # a call yet (run_state.defer): nothing is sent for the gate meanwhile.
    deferred: bool = False
    episode_count: int = 0

    @property
    def enough_new_episodes(self) -> bool:
        return self.pending_episodes >= settings.SUMMARY_MIN_EPISODES

    @property
    def fires(self) -> bool:
        return self.total_tokens > settings.SUMMARY_THRESHOLD_TOKENS and self.enough_new_episodes


def _pending_expr() -> Any:
    """Episodes the chain does not reach: two counters, no read of the episodes."""
    return F("cached_episode_count") - Coalesce(F("summarization__covered_episodes"), Value(0))


def _gate_queryset(session_pks: QuerySet | list[int] | None = None) -> QuerySet:
    qs = ChatSession.objects.all() if session_pks is None else ChatSession.objects.filter(pk__in=session_pks)
    return qs.order_by().annotate(
        # LEFT JOIN on the one-to-one state row: counters and state in one row.
        covered_through=Coalesce(F("summarization__covered_through"), Value(0)),
        pending=_pending_expr(),
        st_state=F("summarization__state"),
        st_failed_at=F("summarization__failed_at"),
    )


_GATE_COLUMNS = (
    "pk",
    "cached_total_tokens",
    "covered_through",
    "pending",
    "st_state",
    "cached_last_episode_id",
    "deferred",
    "cached_episode_count",
)


@lru_cache(maxsize=1)
def _gate_sql() -> str:
    """The gate's statement: two rows joined by primary key. Written out
    rather than built by the ORM, which spends longer compiling it than the
    database spends running it, on every episode write."""
    session, state = ChatSession._meta.db_table, SummarizationState._meta.db_table
    return f"""
        SELECT s."id", s."cached_total_tokens", COALESCE(st."covered_through", 0),
               s."cached_episode_count" - COALESCE(st."covered_episodes", 0), st."state",
               s."cached_last_episode_id",
               CASE WHEN st."deferred_until" > %s THEN 1 ELSE 0 END,
               s."cached_episode_count"
          FROM "{session}" s LEFT JOIN "{state}" st ON st."session_id" = s."id"
         WHERE s."id" = %s
    """


def session_gate(session_pk: int) -> Gate | None:
    """The gate of one session in a single query of constant cost (None when
    the session is gone): counters on the session and state rows.

    This runs after every episode commit; tests count it.
    """
    connection = connections[DEFAULT_DB_ALIAS]
    # ``now`` as the ORM would write it (SQLite keeps naive UTC text).
    now = connection.ops.adapt_datetimefield_value(timezone.now())
    with connection.cursor() as cursor:
        cursor.execute(_gate_sql(), [now, session_pk])
        row = cursor.fetchone()
    return None if row is None else _gate_from(dict(zip(_GATE_COLUMNS, row)))


def _gate_from(values: dict[str, Any]) -> Gate:
    return Gate(
        session_pk=values["pk"],
        total_tokens=values["cached_total_tokens"],
        covered_through=values["covered_through"] or 0,
        pending_episodes=max(0, values["pending"] or 0),
        state=values["st_state"],
        last_episode_id=values["cached_last_episode_id"],
        # Without a cap (a setting changed since) an old deferral holds nothing back.
        deferred=bool(values["deferred"]) and settings.UTILITY_CALLS_PER_USER_HOUR is not None,
        episode_count=values["cached_episode_count"],
    )


def covered_through(session_pk: int) -> int:
    """Last episode id folded into any summary row of the session (0 when
    none), read from the chain itself: the store's staleness check compares with it."""
    return chain_reach(session_pk)


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
        qs = Episode.objects.after(session_pk, cursor, through_id)
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
    """Episodes not yet folded into a summary: the session's counter less the chain's coverage."""
    gate = session_gate(session_pk)
    return gate.pending_episodes if gate else 0


class SummarizationStatus(TypedDict):
    state: str
    last_error: str
    updated_at: datetime | None
    pending_episodes: int


#: What someone who is not staff reads for a failed run, by the kind of
#: error stored: the stored text names the model server's address and its
#: raw answer, which are the operators' business.
FAILURE_FOR_USERS = {
    "TransientInferenceError": "The summary model could not be reached or was busy; it is tried again later.",
    "PermanentInferenceError": "The summary model could not summarize this session; it is tried again later.",
    "ContextWindowExceeded": (
        "The text to summarize is larger than the summary model takes; it is tried again later."
    ),
}
FAILURE_FOR_USERS_OTHERWISE = "Summarization failed; it is tried again later."


def error_shown_to(viewer: Any, last_error: str) -> str:
    """``last_error`` as ``viewer`` may read it: whole for staff (and for an
    operator, ``viewer`` ``None``), else a sentence for its kind
    (``"<ExceptionType>: ..."`` as runs store it)."""
    if not last_error or viewer is None or acts_as_staff(viewer):
        return last_error
    kind = last_error.split(":", 1)[0].strip()
    return FAILURE_FOR_USERS.get(kind, FAILURE_FOR_USERS_OTHERWISE)


def summarization_status(session_or_pk: ChatSession | int, *, viewer: Any) -> SummarizationStatus:
    """The session's summarization state as ``viewer`` sees it in views and
    the API (``None``: an operator's command, which sees everything).

    A session that never had a run is ``idle``. ``pending_episodes`` counts
    the episodes no summary covers yet. ``last_error`` is whole for staff
    only (``error_shown_to``).
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
        last_error=error_shown_to(viewer, row["last_error"]),
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

    A session whose owner was at the model-call cap waits until its
    ``deferred_until`` for the first two.
    """
    now = now or timezone.now()
    retry_cutoff = now - timedelta(seconds=settings.SUMMARY_RETRY_AFTER_SECONDS)
    stale_queued = now - timedelta(seconds=settings.SUMMARY_QUEUED_STALE_SECONDS)
    gate_fires = Q(cached_total_tokens__gt=settings.SUMMARY_THRESHOLD_TOKENS, pending__gte=settings.SUMMARY_MIN_EPISODES)
    if settings.UTILITY_CALLS_PER_USER_HOUR is not None:
        # A session deferred by the model-call cap waits for its time.
        waited = Q(summarization__deferred_until__lte=now)
        gate_fires &= Q(summarization__deferred_until__isnull=True) | waited
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
        # Only sessions over the threshold or with a state row can qualify.
        .filter(Q(cached_total_tokens__gt=settings.SUMMARY_THRESHOLD_TOKENS) | Q(summarization__isnull=False))
        .filter(wanted)
        .order_by("updated_at")
        .values_list("pk", flat=True)[:limit]
    )
    return list(qs)
