"""Sessions whose vectors a lost task left missing, found by an index.

The encoding task is sent after the writes (``sessions_app.semantic.tasks``)
and may be lost: a worker killed mid-run, a broker restarted empty, an
embedded worker's queue gone with its process. Nothing else would send it
again for a session that is no longer written to, so the sweep asks here.

What counts as missing: an episode past the position the session's vectors
reach (``ChatSession.encoded_through_position``), counted as the session's
position counter less that reach, an expression with an index of its own,
so the sweep reads the sessions that are behind and no others. Every write
sends the task, so a session is behind only for the time its task waits,
or for good when the task was lost; and every session was set back to the
start by the migration that widened passages to the whole text
(``sessions_app.semantic.passages``), so the sweep also encodes the
history written before, a few sessions at a time (``embed_pending``
replaces the older rows).

When: once nothing has moved for ``SUMMARY_QUEUED_STALE_SECONDS`` (the
time after which the summaries' sweep also presumes a message lost): no
write (whose own task may still be queued), no batch written by a run, no
task sent by an earlier sweep. A task still queued behind other work gets
that long before a second one is sent (which would then find little to do).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import F, Q
from django.utils import timezone

from sessions_app.models import ChatSession
from sessions_app.semantic import enabled
from sessions_app.semantic.store import embed_pending
from sessions_app.semantic.tasks import queue_embedding

#: Sessions one sweep sends at most: a lost task is rare, and a long backlog
#: (history from before vectors existed) must not bury the worker's other
#: work; each task encodes up to ``tasks.RUN_LIMIT`` episodes and sends the
#: next for the rest.
SWEEP_LIMIT = 20


def sessions_behind(*, now: datetime, limit: int = SWEEP_LIMIT) -> list[int]:
    """Primary keys of sessions with episodes past their vectors' reach,
    quiet for ``SUMMARY_QUEUED_STALE_SECONDS``; those
    missing least first (the quick ones, typically one lost task, before a
    long backlog). One query, a range of ``session_unencoded_idx``."""
    quiet = now - timedelta(seconds=settings.SUMMARY_QUEUED_STALE_SECONDS)
    return list(
        ChatSession.objects.alias(unencoded=F("cached_last_position") - F("encoded_through_position"))
        .filter(unencoded__gt=0, updated_at__lt=quiet)
        .filter(Q(encoding_activity_at__isnull=True) | Q(encoding_activity_at__lt=quiet))
        .order_by("unencoded")
        .values_list("pk", flat=True)[:limit]
    )


def resend_missing(*, synchronous: bool = False, limit: int = SWEEP_LIMIT) -> list[int]:
    """Send the encoding task for each session behind (``synchronous``:
    encode them here, one after another); the sessions sent (or encoded).
    Nothing when retrieval by meaning is off. A failed send (broker down)
    ends the pass, leaving the rest for the next sweep; the sessions sent
    are marked, so the next sweeps wait for their task before sending another."""
    if not enabled():
        return []
    now = timezone.now()
    done: list[int] = []
    for session_pk in sessions_behind(now=now, limit=limit):
        if synchronous:
            embed_pending(session_pk, limit=10**9)
            done.append(session_pk)
        elif queue_embedding(session_pk):
            done.append(session_pk)
        else:
            break
    if done and not synchronous:
        ChatSession.objects.filter(pk__in=done).update(encoding_activity_at=now)
    return done
