"""Storing what a run computed: one pass, a regenerated row, a rebuilt chain.

The runner calls the model outside any transaction, then one of the three
store functions here, each one short transaction through the same steps
(``_lock_unchanged`` then ``_revise``):

1. re-check the lease (``run_state.hold``: it also locks the session's state
   row until commit, so a takeover waits for this write and then reads it);
2. lock the summary rows the run read and compare them with what it read;
3. keep each row's old state as a revision, then write the new text.

Lock order everywhere: the state row, then the summary rows (by
``first_episode_id``). A result whose rows changed since they were read
(``STALE``) or whose lease went to another run (``LOST_LEASE``) is dropped,
never stored twice.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction

from sessions_app.tokens import count_tokens
from summaries import run_state, selectors
from summaries.coverage import refresh_coverage
from summaries.curation import record_revision
from summaries.inference import Completion
from summaries.models import Summary, SummaryRevision
from summaries.policy import Action, PassPlan, RowSnapshot

Source = SummaryRevision.Source


class StoreOutcome(enum.Enum):
    CREATED = "created"
    UPDATED = "updated"
    STALE = "stale"  # the rows changed since the pass read them: result dropped
    LOST_LEASE = "lost_lease"  # another run owns the session now: result dropped


def snapshot(row: Summary) -> RowSnapshot:
    """What a run read of ``row``; the store compares the row with it."""
    return RowSnapshot(
        pk=row.pk,
        content=row.content,
        token_count=row.token_count,
        first_episode_id=row.first_episode_id,
        last_episode_id=row.last_episode_id,
        curated=row.curated,
        updated_at=row.updated_at,
    )


@dataclass(frozen=True, slots=True)
class RebuiltRow:
    """A row computed in memory by a rework: its range, text and cost."""

    first_episode_id: int
    last_episode_id: int
    result: Completion
    truncated_chars: int


def _identity(snap: RowSnapshot) -> tuple[Any, ...]:
    # Every save moves updated_at; the range and the curated flag are
    # compared too, so a row changed by a queryset update is noticed as well.
    return (snap.pk, snap.updated_at, snap.first_episode_id, snap.last_episode_id, snap.curated)


def _lock_unchanged(
    *, session_pk: int, owner: str, read: Sequence[RowSnapshot], whole_chain: bool = False
) -> list[Summary] | StoreOutcome:
    """Steps 1 and 2: the locked rows, in the order read, when the lease is
    still ``owner``'s and they are exactly as read; otherwise the outcome
    that drops the result.

    ``whole_chain``: ``read`` is the session's whole chain, so a row added
    or deleted since counts as a change too. Call inside ``atomic()``.
    """
    if not run_state.hold(session_pk, owner):
        return StoreOutcome.LOST_LEASE
    if not read and not whole_chain:
        return []
    locked = Summary.objects.select_for_update().filter(session_id=session_pk)
    if not whole_chain:
        locked = locked.filter(pk__in=[s.pk for s in read])
    rows = list(locked.order_by("first_episode_id", "pk"))
    if [_identity(snapshot(r)) for r in rows] != [_identity(s) for s in read]:
        return StoreOutcome.STALE
    return rows


def _revise(
    row: Summary,
    *,
    source: str,
    actor: Any,
    result: Completion,
    first_episode_id: int,
    last_episode_id: int,
    truncated_chars: int,
    uncurate: bool = False,
) -> None:
    """Step 3: keep ``row``'s state as a revision (when it exists), then
    write the model's text, its range (ids and positions) and cost
    (``uncurate``: the row is no longer a person's text, and says whether it
    was one until now), and save. Call holding the row's lock (or with a
    new, unsaved row)."""
    if row.pk is not None:
        record_revision(summary=row, source=source, actor=actor)
    if uncurate:
        row.replaced_curation = row.curated
        row.curated = False
        row.curated_by = None
        row.review_note = ""
    content = result.text.strip()
    row.cover(first_episode_id=first_episode_id, last_episode_id=last_episode_id)
    row.truncated_chars = truncated_chars
    row.content = content
    row.token_count = count_tokens(content)
    row.model = result.model
    row.prompt_tokens = result.prompt_tokens
    row.completion_tokens = result.completion_tokens
    row.duration_ms = result.duration_ms
    row.save()


def summary_store_pass(
    *, plan: PassPlan, result: Completion, owner: str
) -> tuple[StoreOutcome, Summary | None]:
    """Store one pass's result in one short transaction.

    Stored only if we still hold the lease, the session's summaries still
    reach exactly ``plan.covered_through``, and (for an update) the target
    row is unchanged and not curated. Lock order as the module says.
    """
    chunk = plan.chunk
    read = [plan.target] if plan.action is Action.UPDATE and plan.target is not None else []
    with transaction.atomic():
        locked = _lock_unchanged(session_pk=plan.session_pk, owner=owner, read=read)
        if isinstance(locked, StoreOutcome):
            return locked, None
        if selectors.covered_through(plan.session_pk) != plan.covered_through:
            return StoreOutcome.STALE, None
        if plan.action is Action.UPDATE:
            # Unchanged means still not curated: the plan only updates an uncurated row.
            (row,) = locked
            # The row keeps its first id and moves its last id: rows tile.
            _revise(
                row,
                source=Source.AUTOMATIC,
                actor=None,
                result=result,
                first_episode_id=row.first_episode_id,
                last_episode_id=chunk.last_episode_id,
                truncated_chars=row.truncated_chars + chunk.truncated_chars,
            )
            refresh_coverage(plan.session_pk)
            return StoreOutcome.UPDATED, row
        row = Summary(session_id=plan.session_pk)
        _revise(
            row,
            source=Source.AUTOMATIC,
            actor=None,
            result=result,
            first_episode_id=chunk.first_episode_id,
            last_episode_id=chunk.last_episode_id,
            truncated_chars=chunk.truncated_chars,
        )
        refresh_coverage(plan.session_pk)
        return StoreOutcome.CREATED, row


def summary_store_regenerated(
    *,
    session_pk: int,
    target: RowSnapshot,
    result: Completion,
    truncated_chars: int,
    owner: str,
    actor_pk: int | None,
) -> tuple[StoreOutcome, Summary | None]:
    """Replace a row's text by a regenerated one, keeping its range; the row
    is no longer curated (``replaced_curation`` when it was) and its old
    state is kept as a ``regenerate`` revision.

    Stored only if the row is unchanged since it was read (the snapshot
    carries its curated flag: the runner decided on it, see
    ``regenerate_row``).
    """
    with transaction.atomic():
        locked = _lock_unchanged(session_pk=session_pk, owner=owner, read=[target])
        if isinstance(locked, StoreOutcome):
            return locked, None
        (row,) = locked
        _revise(
            row,
            source=Source.REGENERATE,
            actor=_actor(actor_pk),
            result=result,
            first_episode_id=row.first_episode_id,
            last_episode_id=row.last_episode_id,
            truncated_chars=truncated_chars,
            uncurate=True,
        )
        return StoreOutcome.UPDATED, row


def chain_store_rebuilt(
    *,
    session_pk: int,
    read_chain: Sequence[RowSnapshot],
    new_rows: Sequence[RebuiltRow],
    owner: str,
    actor_pk: int | None,
) -> StoreOutcome:
    """Swap the non-curated rows of a chain for rebuilt ones, in one transaction.

    Existing rows are reused in order (each keeps a ``rebuild`` revision of
    its old state); leftovers are deleted, missing ones created. Dropped if
    any row of the chain changed, appeared or went since it was read.
    """
    actor = _actor(actor_pk)
    with transaction.atomic():
        locked = _lock_unchanged(session_pk=session_pk, owner=owner, read=read_chain, whole_chain=True)
        if isinstance(locked, StoreOutcome):
            return locked
        reusable = [r for r in locked if not r.curated]
        rows = reusable + [Summary(session_id=session_pk) for _ in new_rows[len(reusable) :]]
        for row, new in zip(rows, new_rows):
            # A row reused for a rebuilt range holds none of the text a curation was replaced by.
            row.replaced_curation = False
            _revise(
                row,
                source=Source.REBUILD,
                actor=actor,
                result=new.result,
                first_episode_id=new.first_episode_id,
                last_episode_id=new.last_episode_id,
                truncated_chars=new.truncated_chars,
            )
        for row in reusable[len(new_rows) :]:
            row.delete()
        refresh_coverage(session_pk)
        return StoreOutcome.UPDATED


def _actor(actor_pk: int | None) -> Any:
    if actor_pk is None:
        return None
    return get_user_model().objects.filter(pk=actor_pk).first()
