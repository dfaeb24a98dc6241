"""What the summaries said of deleted exchanges goes with them.

``sessions_app.history`` deletes exchanges and announces it
(``episodes_deleted``) inside its transaction, under the session's row lock;
this runs there, so the commit that removes an exchange removes what the
summaries derived from it too:

- the automatic row that covered it: emptied at once (its text, its search
  index and every revision that covered the exchange go) and written again
  from the exchanges left in its range, after the commit, by the usual
  regeneration (``summaries.triggers.summary_regenerate``); a row left with
  no exchange is deleted. Until then the context leaves the empty row out
  and the next pass starts a new row after it (``summaries.policy``);
- a curated row that covered it: a person's text, so it is kept, its
  automatic revisions that covered the exchange go, and it is flagged for
  review with a note that says why (``Summary.review_note``);
- a run in flight, which may have read the exchange before it was deleted,
  loses its lease, so its result is dropped (``summaries.store``), and the
  session is queued again after the commit.

A clear deletes every row, curated ones too, with their revisions.

Lock contract: called holding the session's row lock; locks the state row,
then the covering summary rows, as erasure does. Bounded cost: a deletion of
any number of exchanges costs the same fixed number of queries; the covering
rows are one range of the ``(session, last_episode_id)`` index, and only
revisions are found by a join over the session's rows.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from typing import Any

from django.db import transaction
from django.db.models import Case, F, IntegerField, Max, Min, Q, Value, When
from django.db.models.functions import Greatest
from django.utils import timezone

from sessions_app.models import Episode
from summaries.coverage import refresh_coverage
from summaries.models import SummarizationState, Summary, SummaryIndex, SummaryRevision
from summaries.summary_index import queue_refresh
from summaries.tasks import queue_run
from summaries.triggers import summary_regenerate

State = SummarizationState.State


def exchanges_deleted(*, session_pk: int, episodes: list[tuple[int, int]] | None) -> None:
    """The receiver's work (module docstring); ``episodes``: (id, position)
    pairs, or None when the whole history was cleared."""
    if episodes is None:
        _stop_run(session_pk, reset_coverage=True)
        Summary.objects.filter(session_id=session_pk).delete()
        return
    if not episodes:
        return
    ids = sorted(episode_id for episode_id, _ in episodes)
    _stop_run(session_pk, covered_ids=ids)
    rows = list(
        Summary.objects.select_for_update()
        .filter(session_id=session_pk, last_episode_id__gte=ids[0], first_episode_id__lte=ids[-1])
        .order_by("last_episode_id", "pk")
        .only("pk", "session_id", "first_episode_id", "last_episode_id", "curated")
    )
    # Rows tile the session without overlap: each exchange has at most one.
    covered: dict[int, list[tuple[int, int]]] = {}
    for episode_id, position in episodes:
        row = next((r for r in rows if r.first_episode_id <= episode_id <= r.last_episode_id), None)
        if row is not None:
            covered.setdefault(row.pk, []).append((episode_id, position))
    touched = [row for row in rows if row.pk in covered]
    curated = [row for row in touched if row.curated]
    _forget_revisions(session_pk, ids, [e for row in curated for e, _ in covered[row.pk]])
    _flag(curated, covered)
    _empty([row for row in touched if not row.curated])


def _stop_run(session_pk: int, *, covered_ids: Sequence[int] = (), reset_coverage: bool = False) -> None:
    """Take the lease from a run in flight (it stores nothing then) and queue
    the session again after the commit; the coverage counters lose the
    deleted exchanges (``covered_ids``) or everything (``reset_coverage``)."""
    state = (
        SummarizationState.objects.select_for_update()
        .filter(session_id=session_pk)
        .values("state", "covered_through")
        .first()
    )
    if state is None:
        return
    changes: dict[str, Any] = {}
    if reset_coverage:
        changes.update(covered_through=0, covered_episodes=0)
    else:
        lost = sum(1 for episode_id in covered_ids if episode_id <= state["covered_through"])
        if lost:
            changes["covered_episodes"] = Greatest(F("covered_episodes") - lost, Value(0))
    running = state["state"] == State.RUNNING
    if running:
        changes.update(
            state=State.IDLE,
            lease_owner="",
            lease_expires_at=None,
            rerun_requested=False,
            updated_at=timezone.now(),
        )
    if changes:
        SummarizationState.objects.filter(session_id=session_pk).update(**changes)
    if running and not reset_coverage:
        transaction.on_commit(lambda: queue_run(session_pk=session_pk), robust=True)


def _forget_revisions(session_pk: int, ids: list[int], under_curated: list[int]) -> None:
    """Delete the earlier texts that covered a deleted exchange, of any row (one
    a rebuild has moved since too); under a curated row only automatic ones."""
    kept_curated = sorted(under_curated)
    anywhere = sorted(set(ids) - set(kept_curated))
    found = SummaryRevision.objects.filter(
        summary__session_id=session_pk, first_episode_id__lte=ids[-1], last_episode_id__gte=ids[0]
    ).values_list("pk", "first_episode_id", "last_episode_id", "curated")
    gone = [
        pk
        for pk, first, last, is_curated in found
        if _any_within(anywhere, first, last) or (not is_curated and _any_within(kept_curated, first, last))
    ]
    if gone:
        SummaryRevision.objects.filter(pk__in=gone).delete()


def _any_within(ids: list[int], first: int, last: int) -> bool:
    """Whether sorted ``ids`` hold one with ``first <= id <= last``."""
    at = bisect_left(ids, first)
    return at < len(ids) and ids[at] <= last


def _flag(rows: list[Summary], covered: dict[int, list[tuple[int, int]]]) -> None:
    """A curated row keeps its text and says which exchanges it covered went."""
    if not rows:
        return
    now = timezone.now()
    for row in rows:
        row.review_note = (
            f"{_deleted(sorted(p for _, p in covered[row.pk]))} on {now:%Y-%m-%d}: make sure the text "
            "no longer says what it said, then save it to clear this note."
        )
        row.updated_at = now
    # The text is unchanged, so is its index: nothing to write again.
    Summary.objects.bulk_update(rows, ["review_note", "updated_at"])


def _deleted(positions: list[int]) -> str:
    """``Exchange 5, which this text covers, was deleted``; several named one by one."""
    if len(positions) == 1:
        return f"Exchange {positions[0]}, which this text covers, was deleted"
    named = ", ".join(str(p) for p in positions[:-1]) + f" and {positions[-1]}"
    return f"Exchanges {named}, which this text covers, were deleted"


def _empty(rows: list[Summary]) -> None:
    """Automatic rows that covered a deleted exchange: emptied and written
    again from what is left in their range, or deleted when nothing is."""
    if not rows:
        return
    spans = (
        # One range of the (session, id) index over the rows (they are in order), then each row's part.
        Episode.objects.after(
            rows[0].session_id, rows[0].first_episode_id - 1, max(row.last_episode_id for row in rows)
        )
        .annotate(
            row=Case(
                *[
                    When(Q(pk__gte=row.first_episode_id, pk__lte=row.last_episode_id), then=Value(row.pk))
                    for row in rows
                ],
                output_field=IntegerField(),
            )
        )
        .filter(row__isnull=False)
        .order_by()
        .values("row")
        .annotate(first=Min("position"), last=Max("position"))
    )
    left = {span["row"]: (span["first"], span["last"]) for span in spans}
    gone = [row.pk for row in rows if row.pk not in left]
    if gone:
        Summary.objects.filter(pk__in=gone).delete()
        refresh_coverage(rows[0].session_id)
    kept = [row for row in rows if row.pk in left]
    if not kept:
        return
    SummaryIndex.objects.filter(summary_id__in=[row.pk for row in kept]).delete()
    now = timezone.now()
    for row in kept:
        row.first_position, row.last_position = left[row.pk]
        row.content, row.token_count, row.replaced_curation, row.updated_at = "", 0, False, now
    Summary.objects.bulk_update(
        kept, ["content", "token_count", "first_position", "last_position", "replaced_curation", "updated_at"]
    )
    _refresh_after_commit(kept)
    for row in kept:
        summary_regenerate(summary=row)


def _refresh_after_commit(rows: list[Summary]) -> None:
    """What the rows' post-save signal sends (a bulk update sends none): their
    index written again from their text, after the commit."""
    pks = [row.pk for row in rows]
    transaction.on_commit(lambda: [queue_refresh(pk) for pk in pks])
