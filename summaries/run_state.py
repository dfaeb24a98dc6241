"""The per-session summarization state machine: its row and its lease.

States and their transitions (each function below is one transition)::

    idle/failed --mark_triggered--> queued --claim--> running --release--> idle
    any but running --mark_queued--> queued        running --mark_failed--> failed
    running --defer, release--> idle, deferred until the owner's model-call cap allows
    queued --mark_unsent--> idle (the broker refused the message)
    running --note_busy / mark_triggered--> running with rerun_requested

Lock contract: at most one run per session holds the lease
(``SummarizationState.lease_owner``, with ``lease_expires_at``). Every
transition is one conditional UPDATE whose row count says whether it
happened, so two workers racing for the same session can never both win:
"0 rows updated" means somebody else got there first.

- ``claim``: idle/queued/failed, or an expired lease, or our own lease (a
  redelivered task keeps its task id, so it may take over at once what its
  killed predecessor held).
- ``hold``: inside the short write transaction; re-checks that we still own
  the lease and extends it. The UPDATE takes the state row's lock until
  commit, so a takeover waits for our write and then reads it.
- ``release``: back to idle unless a trigger arrived meanwhile
  (``rerun_requested``), in which case the run goes round once more.

No function here may be called while a model call is in flight inside a
transaction: model calls happen outside any transaction (see runner).
"""

from __future__ import annotations

import contextlib
import enum
from datetime import datetime, timedelta

from django.conf import settings
from django.core.cache import cache
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from nexus.store_guard import StoreUnavailable, store_call
from sessions_app.models import ChatSession
from summaries.models import SummarizationState

State = SummarizationState.State
_states = SummarizationState.objects

# last_error is shown to people and kept in one row: a bounded excerpt is enough.
MAX_ERROR_CHARS = 2000


def _lease_until(now: datetime) -> datetime:
    return now + timedelta(seconds=settings.SUMMARY_LEASE_SECONDS)


def ensure_state(session_pk: int) -> bool:
    """Create the state row if missing; concurrent callers are harmless.

    False (and nothing created) when the session is gone: a run or a
    request that was in flight when its session was erased or deleted must
    not leave a state row behind, nor fail on the foreign key. The insert is
    a no-op when the row exists, and never happens for a missing session.
    """
    if _states.filter(session_id=session_pk).exists():
        return True
    if not ChatSession.objects.filter(pk=session_pk).exists():
        return False
    try:
        with transaction.atomic():
            _states.bulk_create([SummarizationState(session_id=session_pk)], ignore_conflicts=True)
    except IntegrityError:
        # Deleted between the check and the insert (the foreign key refused it).
        return False
    return True


# --- the write path --------------------------------------------------------


def mark_triggered(*, session_pk: int, state: str | None) -> bool:
    """Record a trigger whose gate fired; True when the caller must send the task.

    ``state`` is what the gate query saw. Idle (or no row, or a failure
    older than SUMMARY_RETRY_AFTER_SECONDS) becomes queued and the caller sends the task; queued needs
    nothing (the queued task reads the tail when it starts); running gets
    ``rerun_requested`` so the run re-checks the gate before it ends. If the
    state moved between the gate read and here, the conditional UPDATEs miss
    and the next branch is tried, at most once each.
    """
    now = timezone.now()
    retry_cutoff = now - timedelta(seconds=settings.SUMMARY_RETRY_AFTER_SECONDS)
    if state is None:
        try:
            with transaction.atomic():
                _states.create(session_id=session_pk, state=State.QUEUED)
            return True
        except IntegrityError:
            pass  # a concurrent writer created it: fall through to the updates
    if state == State.RUNNING:
        if _states.filter(session_id=session_pk, state=State.RUNNING).update(rerun_requested=True):
            return False
    if state == State.QUEUED:
        return False
    queued = (
        _states.filter(session_id=session_pk)
        .filter(
            Q(state=State.IDLE)
            | Q(state=State.FAILED, failed_at__lte=retry_cutoff)
            | Q(state=State.FAILED, failed_at__isnull=True)
        )
        .update(state=State.QUEUED, updated_at=now)
    )
    if queued:
        return True
    # Someone else queued it, a run is on, or a recent failure waits for its retry.
    _states.filter(session_id=session_pk, state=State.RUNNING).update(rerun_requested=True)
    return False


def mark_queued(session_pk: int) -> None:
    """Unconditional queued mark for explicit requests (sweep, regenerate, rebuild).

    A running session keeps its state: the queued task will find it busy and
    leave a rerun request instead.
    """
    ensure_state(session_pk)
    _states.filter(session_id=session_pk).exclude(state=State.RUNNING).update(
        state=State.QUEUED, updated_at=timezone.now()
    )


def mark_unsent(session_pk: int) -> None:
    """The broker refused the message: go back to idle so the sweep sees the
    pending work (queued would hide it until the stale-queue timeout)."""
    _states.filter(session_id=session_pk, state=State.QUEUED).update(
        state=State.IDLE, updated_at=timezone.now()
    )


# --- the run ---------------------------------------------------------------


def claim(session_pk: int, owner: str) -> bool:
    """Take the session's lease for ``owner`` (a task id); False when another run holds it."""
    ensure_state(session_pk)
    now = timezone.now()
    return bool(
        _states.filter(session_id=session_pk)
        .filter(~Q(state=State.RUNNING) | Q(lease_expires_at__lt=now) | Q(lease_owner=owner))
        .update(
            state=State.RUNNING,
            lease_owner=owner,
            lease_expires_at=_lease_until(now),
            rerun_requested=False,
            updated_at=now,
        )
    )


def note_busy(session_pk: int, owner: str) -> None:
    """A task found the lease taken: make sure the holder looks again before it stops."""
    _states.filter(session_id=session_pk, state=State.RUNNING).exclude(lease_owner=owner).update(
        rerun_requested=True
    )


def hold(session_pk: int, owner: str) -> bool:
    """Still ours? Extend the lease and, inside a transaction, lock the row until commit."""
    now = timezone.now()
    return bool(
        _states.filter(session_id=session_pk, lease_owner=owner, state=State.RUNNING).update(
            lease_expires_at=_lease_until(now), updated_at=now
        )
    )


class Release(enum.Enum):
    DONE = "done"
    RERUN = "rerun"  # a trigger arrived during the run: check the gate again
    LOST = "lost"  # the lease went to another run


def release(session_pk: int, owner: str) -> Release:
    now = timezone.now()
    if _states.filter(session_id=session_pk, lease_owner=owner, rerun_requested=False).update(
        state=State.IDLE,
        lease_owner="",
        lease_expires_at=None,
        last_error="",
        failed_at=None,
        updated_at=now,
    ):
        return Release.DONE
    if _states.filter(session_id=session_pk, lease_owner=owner).update(
        rerun_requested=False, lease_expires_at=_lease_until(now), updated_at=now
    ):
        return Release.RERUN
    return Release.LOST


def defer(session_pk: int, owner: str, *, until: datetime) -> None:
    """The run found the session's owner at the model-call cap: the session
    waits until ``until`` (neither the gate nor the sweep sends it before).
    Call while holding the lease; the run then releases it as usual, so the
    state goes back to idle, not failed: nothing went wrong."""
    _states.filter(session_id=session_pk, lease_owner=owner).update(deferred_until=until)


def mark_failed(session_pk: int, owner: str, error: str) -> None:
    """Record a failed attempt and free the lease, so a retry (same task id)
    or the sweep can run. Stores the error text only, never model output."""
    now = timezone.now()
    _states.filter(session_id=session_pk, lease_owner=owner).update(
        state=State.FAILED,
        last_error=error[:MAX_ERROR_CHARS],
        failed_at=now,
        lease_owner="",
        lease_expires_at=None,
        updated_at=now,
    )


# --- one regeneration per row ---------------------------------------------------
#
# A row's regeneration is marked in the shared cache from the moment it is
# queued until its task ends, so repeated requests for the same row while one
# is queued or running are coalesced into it instead of each calling the
# model. ``cache.add`` is atomic (set only if absent) in every backend the
# project uses. The mark expires on its own, so a task lost with its broker
# does not block the row for longer than that.
#
# While the shared store cannot be reached these raise ``StoreUnavailable``
# (``nexus.store_guard``): without the mark a regeneration could not be
# coalesced, and the broker is most likely down with it.
#
# A regeneration that replaces a curated text has a mark of its own: one
# queued without that confirmation leaves a row curated meanwhile as it is,
# so a confirmed request is never folded into it. A plain request is folded
# into either.


def _regeneration_key(summary_pk: int, replace_curated: bool) -> str:
    return f"nexus:regenerate:{summary_pk}{':replace-curated' if replace_curated else ''}"


def mark_regeneration(summary_pk: int, *, replace_curated: bool = False) -> bool:
    """Mark the row's regeneration queued; False when one that does as much
    already is (or runs)."""
    confirmed = _regeneration_key(summary_pk, True)
    if not replace_curated and store_call("regenerations", lambda: cache.get(confirmed)) is not None:
        return False
    timeout = max(settings.SUMMARY_LEASE_SECONDS, settings.SUMMARY_QUEUED_STALE_SECONDS)
    return store_call(
        "regenerations", lambda: cache.add(_regeneration_key(summary_pk, replace_curated), 1, timeout=timeout)
    )


def end_regeneration(summary_pk: int, *, replace_curated: bool = False) -> None:
    """The row's regeneration ended (done, failed for good, or never sent).
    With the store unreachable the mark is left to expire."""
    with contextlib.suppress(StoreUnavailable):
        store_call("regenerations", lambda: cache.delete(_regeneration_key(summary_pk, replace_curated)))
