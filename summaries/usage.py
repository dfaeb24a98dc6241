"""What summarization costs and what it saves, per session and overall.

Read-only selectors behind the admin's usage page and ``GET /api/usage/``.
Figures are SQL aggregates, in a fixed number of queries per chunk of
sessions however many calls and rows there are:

- ``utility_calls``: every utility-model call, one ``UtilityCall`` row each
  (fresh summaries, cumulative updates, regenerations, rebuilds), whether
  it answered or not. ``failed_calls``: those that raised (transient or
  permanent); ``dropped_calls``: those that answered but whose answer was
  dropped as stale (the rows or the lease changed meanwhile).
- ``prompt_tokens`` / ``completion_tokens`` / ``utility_duration_ms``: sums
  over those calls, as the model server reported the tokens (a failed call
  reports none and counts zero tokens, but its time).
- ``episodes_covered``: episodes inside the summaries' ranges (the rows
  tile a session's episodes, so that is every episode from the first row's
  first id to the last row's last id).
- ``full_history_tokens``: the session's token counter (every episode in
  full). ``context_tokens``: the summaries' tokens plus the episodes not
  yet covered and the last ``CONTEXT_RECENT_EPISODES``, at most what the
  context puts in besides its fixed text (the window takes no more than its
  share of a budget: ``summaries.context.window``). ``saved_tokens`` is
  the difference, never below zero; ``savings_ratio`` is it over the full
  history.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator
from typing import Any, TypedDict

from django.conf import settings
from django.db.models import Count, F, Max, Min, OuterRef, Q, QuerySet, Subquery, Sum, Value, Window
from django.db.models.functions import Coalesce, RowNumber

from sessions_app.models import ChatSession, Episode
from summaries.models import Summary, UtilityCall

FAILED = Q(outcome__in=UtilityCall.FAILED)
DROPPED = Q(outcome=UtilityCall.Outcome.DROPPED_STALE)

# Figures of the utility calls: per session from ``sessions_with_usage``,
# overall from one aggregate over the calls (``call_totals``).
CALL_COUNTERS = (
    "utility_calls",
    "failed_calls",
    "dropped_calls",
    "prompt_tokens",
    "completion_tokens",
    "utility_duration_ms",
)

# The other per-session figures, summed over the sessions for the totals.
COUNTERS = (
    "episodes",
    "episodes_covered",
    "summary_rows",
    "full_history_tokens",
    "summary_tokens",
    "context_tokens",
    "saved_tokens",
)


class SessionUsage(TypedDict):
    session: str
    title: str
    owner: str
    episodes: int
    episodes_covered: int
    summary_rows: int
    utility_calls: int
    failed_calls: int
    dropped_calls: int
    prompt_tokens: int
    completion_tokens: int
    utility_duration_ms: int
    full_history_tokens: int
    summary_tokens: int
    context_tokens: int
    saved_tokens: int
    savings_ratio: float


def _call_figures() -> dict[str, Any]:
    """The aggregate expressions of ``CALL_COUNTERS`` over utility calls."""
    return {
        "utility_calls": Count("pk"),
        "failed_calls": Count("pk", filter=FAILED),
        "dropped_calls": Count("pk", filter=DROPPED),
        "prompt_tokens": Sum("prompt_tokens"),
        "completion_tokens": Sum("completion_tokens"),
        "utility_duration_ms": Sum("duration_ms"),
    }


def _per_session(queryset: QuerySet, expression: Any) -> Coalesce:
    """One figure of ``queryset`` (rows of one session) as a correlated subquery."""
    grouped = queryset.order_by().values("session").annotate(v=expression).values("v")
    return Coalesce(Subquery(grouped), Value(0))


def sessions_with_usage(queryset: QuerySet[ChatSession] | None = None) -> QuerySet[ChatSession]:
    """Sessions annotated with every per-session figure that SQL can give
    directly; ``session_usage_rows`` adds the recent-episode part."""
    qs = queryset if queryset is not None else ChatSession.objects.all()
    summaries = Summary.objects.filter(session=OuterRef("pk"))
    calls = UtilityCall.objects.filter(session=OuterRef("pk"))
    qs = qs.annotate(
        # Prefixed: ``utility_calls`` is also the name of the calls' relation.
        **{f"call_{name}": _per_session(calls, expr) for name, expr in _call_figures().items()},
        summary_rows=_per_session(summaries, Count("pk")),
        summary_tokens=_per_session(summaries, Sum("token_count")),
        covered_first=Subquery(
            summaries.order_by().values("session").annotate(v=Min("first_episode_id")).values("v")
        ),
        covered_last=Subquery(
            summaries.order_by().values("session").annotate(v=Max("last_episode_id")).values("v")
        ),
    )
    episodes = Episode.objects.filter(session=OuterRef("pk"))
    return qs.annotate(
        episodes_covered=_per_session(
            episodes.filter(pk__gte=OuterRef("covered_first"), pk__lte=OuterRef("covered_last")),
            Count("pk"),
        ),
        tail_tokens=_per_session(
            episodes.filter(pk__gt=Coalesce(OuterRef("covered_last"), Value(0))), Sum("token_count")
        ),
    ).select_related("owner")


def _recent_covered_tokens(sessions: list[ChatSession], recent: int) -> dict[int, int]:
    """Per session: tokens of the last ``recent`` episodes that a summary
    already covers (the context's window may give them as well, within its
    share of the budget). One query."""
    if not sessions or recent <= 0:
        return {}
    covered_last = {s.pk: s.covered_last for s in sessions if s.covered_last is not None}
    if not covered_last:
        return {}
    rows = (
        Episode.objects.filter(session_id__in=list(covered_last))
        .annotate(rank=Window(RowNumber(), partition_by=F("session_id"), order_by=F("id").desc()))
        .filter(rank__lte=recent)
        .values_list("session_id", "id", "token_count")
    )
    totals: dict[int, int] = defaultdict(int)
    for session_id, episode_id, tokens in rows:
        if episode_id <= covered_last[session_id]:
            totals[session_id] += tokens
    return totals


def session_usage_rows(sessions: Iterable[ChatSession]) -> list[SessionUsage]:
    """Rows of ``sessions_with_usage()`` as plain dicts, with the context estimate."""
    sessions = list(sessions)
    recent = _recent_covered_tokens(sessions, settings.CONTEXT_RECENT_EPISODES)
    rows: list[SessionUsage] = []
    for s in sessions:
        full = s.cached_total_tokens
        context = s.summary_tokens + s.tail_tokens + recent.get(s.pk, 0) if s.summary_rows else full
        saved = max(0, full - context)
        rows.append(
            SessionUsage(
                session=str(s.uuid),
                title=s.title,
                owner=s.owner.get_username(),
                episodes=s.cached_episode_count,
                episodes_covered=s.episodes_covered,
                summary_rows=s.summary_rows,
                utility_calls=s.call_utility_calls,
                failed_calls=s.call_failed_calls,
                dropped_calls=s.call_dropped_calls,
                prompt_tokens=s.call_prompt_tokens,
                completion_tokens=s.call_completion_tokens,
                utility_duration_ms=s.call_utility_duration_ms,
                full_history_tokens=full,
                summary_tokens=s.summary_tokens,
                context_tokens=context,
                saved_tokens=saved,
                savings_ratio=round(saved / full, 4) if full else 0.0,
            )
        )
    return rows


def _empty_totals() -> dict[str, Any]:
    return {"sessions": 0, **{key: 0 for key in CALL_COUNTERS + COUNTERS}}


def call_totals(queryset: QuerySet[ChatSession] | None = None) -> dict[str, Any]:
    """``CALL_COUNTERS`` over every call of the sessions in ``queryset`` (all
    sessions by default), and the calls by kind: one aggregate query."""
    calls = UtilityCall.objects.order_by()
    if queryset is not None:
        calls = calls.filter(session__in=queryset.order_by().values("pk"))
    by_kind = {f"kind_{kind}": Count("pk", filter=Q(kind=kind)) for kind in UtilityCall.Kind.values}
    figures = calls.aggregate(**_call_figures(), **by_kind)
    totals = {key: figures[key] or 0 for key in CALL_COUNTERS}
    totals["calls_by_kind"] = {kind: figures[f"kind_{kind}"] for kind in UtilityCall.Kind.values}
    return totals


def _add(totals: dict[str, Any], rows: Iterable[SessionUsage]) -> None:
    for row in rows:
        totals["sessions"] += 1
        for key in COUNTERS:
            totals[key] += row[key]


def _finish(totals: dict[str, Any]) -> dict[str, Any]:
    full = totals["full_history_tokens"]
    totals["savings_ratio"] = round(totals["saved_tokens"] / full, 4) if full else 0.0
    return totals


def usage_report(
    *, queryset: QuerySet[ChatSession] | None = None, limit: int = 50, chunk_size: int = 500
) -> dict[str, Any]:
    """Overall totals over every session in ``queryset`` and the ``limit``
    sessions with the longest history, largest first.

    The call figures of the totals are one aggregate over the calls; the
    rest are summed over sessions read in chunks (two queries per chunk), so
    memory stays bounded by the chunk and the rows shown, however many
    sessions there are.
    """
    qs = sessions_with_usage(queryset).order_by("-cached_total_tokens", "-pk")
    totals = _empty_totals()
    totals.update(call_totals(queryset))
    shown: list[SessionUsage] = []
    for chunk in _chunked(qs.iterator(chunk_size=chunk_size), chunk_size):
        rows = session_usage_rows(chunk)
        _add(totals, rows)
        shown.extend(rows[: max(0, limit - len(shown))])
    return {"totals": _finish(totals), "sessions": shown}


def _chunked(items: Iterable[ChatSession], size: int) -> Iterator[list[ChatSession]]:
    chunk: list[ChatSession] = []
    for item in items:
        chunk.append(item)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk
