"""What summarization costs and what it saves, per session and overall.

Read-only selectors behind the admin's usage page and ``GET /api/usage/``.
All figures come from what the summary tables hold, in a fixed number of
queries whatever the number of sessions:

- ``utility_calls``: automatic writes, counted as the summary rows a model
  wrote (``model`` set) plus the automatic and regeneration revisions of
  those rows (each revision is the state before one more model call). A
  model call that failed and stored nothing leaves no row and is not
  counted.
- ``prompt_tokens`` / ``completion_tokens`` / ``utility_duration_ms``: the
  sums over summary rows. A row keeps the figures of its *last* automatic
  write only, so for a row updated cumulatively these are a lower bound;
  an exact figure needs one record per call (see README, cost reporting).
- ``episodes_covered``: episodes inside the summaries' ranges (the rows
  tile a session's episodes, so that is every episode from the first row's
  first id to the last row's last id).
- ``full_history_tokens``: the session's token counter (every episode in
  full). ``context_tokens``: the summaries' tokens plus, in full, the
  episodes not yet covered and the last ``CONTEXT_RECENT_EPISODES``, which
  is what the context puts in besides its fixed text. ``saved_tokens`` is
  the difference, never below zero; ``savings_ratio`` is it over the full
  history.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator
from typing import Any, TypedDict

from django.conf import settings
from django.db.models import Count, F, Max, Min, OuterRef, QuerySet, Subquery, Sum, Value, Window
from django.db.models.functions import Coalesce, RowNumber

from sessions_app.models import ChatSession, Episode
from summaries.models import Summary, SummaryRevision

# Revisions that stand for one more model call on an existing row.
CALL_SOURCES = (SummaryRevision.Source.AUTOMATIC, SummaryRevision.Source.REGENERATE)

COUNTERS = (
    "episodes",
    "episodes_covered",
    "summary_rows",
    "utility_calls",
    "prompt_tokens",
    "completion_tokens",
    "utility_duration_ms",
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
    prompt_tokens: int
    completion_tokens: int
    utility_duration_ms: int
    full_history_tokens: int
    summary_tokens: int
    context_tokens: int
    saved_tokens: int
    savings_ratio: float


def _per_session(queryset: QuerySet, expression: Any) -> Coalesce:
    """One figure of ``queryset`` (rows of one session) as a correlated subquery."""
    grouped = queryset.order_by().values("session").annotate(v=expression).values("v")
    return Coalesce(Subquery(grouped), Value(0))


def sessions_with_usage(queryset: QuerySet[ChatSession] | None = None) -> QuerySet[ChatSession]:
    """Sessions annotated with every per-session figure that SQL can give
    directly; ``session_usage_rows`` adds the recent-episode part."""
    qs = queryset if queryset is not None else ChatSession.objects.all()
    summaries = Summary.objects.filter(session=OuterRef("pk"))
    automatic = summaries.exclude(model="")
    revisions = SummaryRevision.objects.filter(summary__session=OuterRef("pk"), source__in=CALL_SOURCES)
    revision_count = revisions.order_by().values("summary__session").annotate(n=Count("pk")).values("n")
    qs = qs.annotate(
        summary_rows=_per_session(summaries, Count("pk")),
        automatic_rows=_per_session(automatic, Count("pk")),
        revision_calls=Coalesce(Subquery(revision_count), Value(0)),
        prompt_tokens=_per_session(summaries, Sum("prompt_tokens")),
        completion_tokens=_per_session(summaries, Sum("completion_tokens")),
        utility_duration_ms=_per_session(summaries, Sum("duration_ms")),
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
    already covers (the context gives them in full as well). One query."""
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
                utility_calls=s.automatic_rows + s.revision_calls,
                prompt_tokens=s.prompt_tokens,
                completion_tokens=s.completion_tokens,
                utility_duration_ms=s.utility_duration_ms,
                full_history_tokens=full,
                summary_tokens=s.summary_tokens,
                context_tokens=context,
                saved_tokens=saved,
                savings_ratio=round(saved / full, 4) if full else 0.0,
            )
        )
    return rows


def session_usage(session: ChatSession) -> SessionUsage:
    """Usage of one session."""
    return session_usage_rows(sessions_with_usage(ChatSession.objects.filter(pk=session.pk)))[0]


def _empty_totals() -> dict[str, Any]:
    return {"sessions": 0, **{key: 0 for key in COUNTERS}}


def _add(totals: dict[str, Any], rows: Iterable[SessionUsage]) -> None:
    for row in rows:
        totals["sessions"] += 1
        for key in COUNTERS:
            totals[key] += row[key]


def _finish(totals: dict[str, Any]) -> dict[str, Any]:
    full = totals["full_history_tokens"]
    totals["savings_ratio"] = round(totals["saved_tokens"] / full, 4) if full else 0.0
    return totals


def usage_totals(rows: Iterable[SessionUsage]) -> dict[str, Any]:
    """Sums of the per-session figures, with the overall savings ratio."""
    totals = _empty_totals()
    _add(totals, rows)
    return _finish(totals)


def usage_report(
    *, queryset: QuerySet[ChatSession] | None = None, limit: int = 50, chunk_size: int = 500
) -> dict[str, Any]:
    """Overall totals over every session in ``queryset`` and the ``limit``
    sessions with the longest history, largest first.

    Sessions are read in chunks (two queries per chunk), so memory stays
    bounded by the chunk and the rows shown, however many sessions there are.
    """
    qs = sessions_with_usage(queryset).order_by("-cached_total_tokens", "-pk")
    totals = _empty_totals()
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
