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
then the covering summary row, as erasure does. Flat cost: the covering row
is one probe of the ``(session, last_episode_id)`` index; only revisions are
found by a join over the session's rows.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.db.models import F, Value
from django.db.models.functions import Greatest
from django.utils import timezone

from sessions_app.labels import exchanges_label
from sessions_app.models import Episode
from summaries.coverage import refresh_coverage
from summaries.models import SummarizationState, Summary, SummaryIndex, SummaryRevision
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
    for episode_id, position in episodes:
        _forget(session_pk, episode_id, position)


def _stop_run(session_pk: int, *, covered_id: int | None = None, reset_coverage: bool = False) -> None:
    """Take the lease from a run in flight (it stores nothing then) and queue
    the session again after the commit; the coverage counters lose the
    deleted exchange (``covered_id``) or everything (``reset_coverage``)."""
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
    elif covered_id is not None and covered_id <= state["covered_through"]:
        changes["covered_episodes"] = Greatest(F("covered_episodes") - 1, Value(0))
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


def _forget(session_pk: int, episode_id: int, position: int) -> None:
    _stop_run(session_pk, covered_id=episode_id)
    row = (
        Summary.objects.select_for_update()
        .filter(session_id=session_pk, last_episode_id__gte=episode_id)
        .order_by("last_episode_id", "pk")
        .first()
    )
    covering = row is not None and row.first_episode_id <= episode_id
    # Earlier texts that covered it, of this row or of one a rebuild has moved since.
    revisions = SummaryRevision.objects.filter(
        summary__session_id=session_pk, first_episode_id__lte=episode_id, last_episode_id__gte=episode_id
    )
    if covering and row.curated:
        revisions.filter(curated=False).delete()
        label = exchanges_label(position, position)
        row.review_note = (
            f"{label}, which this text covers, was deleted on {timezone.now():%Y-%m-%d}: make sure the text "
            "no longer says what it said, then save it to clear this note."
        )
        row.save(update_fields=["review_note", "updated_at"])
        return
    revisions.delete()
    if not covering:
        return
    if not Episode.objects.after(session_pk, row.first_episode_id - 1, row.last_episode_id).exists():
        row.delete()
        refresh_coverage(session_pk)
        return
    SummaryIndex.objects.filter(summary_id=row.pk).delete()
    row.cover(first_episode_id=row.first_episode_id, last_episode_id=row.last_episode_id)
    row.content, row.token_count, row.replaced_curation = "", 0, False
    row.save(
        update_fields=[
            "content",
            "token_count",
            "first_position",
            "last_position",
            "replaced_curation",
            "updated_at",
        ]
    )
    summary_regenerate(summary=row)
