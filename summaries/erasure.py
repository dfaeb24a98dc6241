"""Deleting what people stored: a user's erasure, and the retention purge.

Both delete whole sessions through ``sessions_erase``: its episodes (and so
their full-text index entries), its summary rows and their revisions, its
summarization state. What stays is what carries no text of the user: the
utility-call and chat-call rows (the cost record; usage totals and the
model-call cap keep counting them) lose their links to the session, and
admin log entries about the deleted rows lose their text (``object_repr``,
``change_message``) but keep who did what when.

This lives in ``summaries`` because it needs both apps' models;
``sessions_app`` cannot import ``summaries`` (the layers point down), and a
signal sent by ``sessions_app`` would hide a deletion's other half behind a
receiver.

Lock contract: each batch is one short transaction that locks its session
rows (every episode write takes its session's row lock first, so none lands
in a batch being deleted) and then deletes the state rows, which waits for a
store transaction in flight (it holds the state row's lock). A run whose
session is gone then finds no lease (``run_state.hold``) and stores nothing,
and ``run_state.ensure_state`` creates no state row for a missing session.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass
from datetime import timedelta
from typing import Any

from django.contrib.admin.models import LogEntry
from django.contrib.contenttypes.models import ContentType
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from notes.models import Note
from notes.retention import expired_notes_purge, notes_erase
from sessions_app.idempotency import idempotency_keys_erase
from sessions_app.models import ChatSession, Episode
from sessions_app.search.maintenance import purge_deleted_terms
from summaries.models import ChatCall, SummarizationState, Summary, SummaryRevision, UtilityCall

# Sessions per transaction: a user with thousands of sessions is erased in
# many short transactions, never one that holds every lock at once.
BATCH_SESSIONS = 50


@dataclass
class Erased:
    sessions: int = 0
    episodes: int = 0
    summaries: int = 0
    revisions: int = 0
    notes: int = 0

    def add(self, other: Erased) -> None:
        for name, value in asdict(other).items():
            setattr(self, name, getattr(self, name) + value)

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


def _chunks(items: Sequence[int], size: int) -> Iterator[list[int]]:
    for start in range(0, len(items), size):
        yield list(items[start : start + size])


def _scrub_log_entries(model: type, pks: Iterable[Any]) -> None:
    """Admin log entries about these rows keep no text of them."""
    ids = [str(pk) for pk in pks]
    if not ids:
        return
    content_type = ContentType.objects.get_for_model(model, for_concrete_model=False)
    for chunk in _chunks(ids, 500):  # type: ignore[arg-type]
        LogEntry.objects.filter(content_type=content_type, object_id__in=chunk).update(
            object_repr="", change_message=""
        )


def _erase_batch(session_pks: list[int]) -> Erased:
    """Delete these sessions and everything stored with them, in one transaction."""
    with transaction.atomic():
        locked = list(
            ChatSession.objects.select_for_update().filter(pk__in=session_pks).order_by("pk").values_list("pk", flat=True)
        )
        if not locked:
            return Erased()
        # The state rows first: this waits for a store in flight, which then
        # commits before us; any run after that finds no lease.
        SummarizationState.objects.filter(session_id__in=locked).delete()
        summary_pks = list(Summary.objects.filter(session_id__in=locked).values_list("pk", flat=True))
        revision_pks = list(
            SummaryRevision.objects.filter(summary_id__in=summary_pks).values_list("pk", flat=True)
        )
        UtilityCall.objects.filter(session_id__in=locked).update(session=None, summary=None)
        ChatCall.objects.filter(session_id__in=locked).update(session=None)
        _scrub_log_entries(SummaryRevision, revision_pks)
        _scrub_log_entries(Summary, summary_pks)
        _scrub_log_entries(ChatSession, locked)
        _scrub_log_entries(SummarizationState, locked)
        episodes = Episode.objects.filter(session_id__in=locked)
        _scrub_log_entries(Episode, episodes.values_list("pk", flat=True).iterator(chunk_size=2000))
        revisions, _ = SummaryRevision.objects.filter(pk__in=revision_pks).delete()
        summaries, _ = Summary.objects.filter(pk__in=summary_pks).delete()
        notes = Note.objects.filter(Q(session_id__in=locked) | Q(source_episode__session_id__in=locked))
        _scrub_log_entries(Note, notes.values_list("pk", flat=True))
        deleted, by_episode = episodes.delete()
        episode_count = deleted - by_episode.get(Note._meta.label, 0)
        _, by_model = ChatSession.objects.filter(pk__in=locked).delete()
        return Erased(
            sessions=by_model.get(ChatSession._meta.label, 0),
            episodes=episode_count,
            summaries=summaries,
            revisions=revisions,
            # Notes that came only from these sessions' exchanges, or belonged to one of them alone.
            notes=by_model.get(Note._meta.label, 0) + by_episode.get(Note._meta.label, 0),
        )


def sessions_erase(*, session_pks: Sequence[int], batch_size: int = BATCH_SESSIONS) -> Erased:
    """Delete these sessions with everything stored with them, a batch per transaction.

    Afterwards the search index drops the deleted terms (SQLite), so no
    trace of the text is left in any table.
    """
    total = Erased()
    for batch in _chunks(sorted(session_pks), batch_size):
        total.add(_erase_batch(batch))
    if total.episodes:
        purge_deleted_terms()
    return total


def user_memory_erase(*, user: Any, end_user: str | None = None) -> Erased:
    """Erase everything ``user`` stored: every session of theirs, as
    ``sessions_erase``, and every note about the people they serve.

    The account and its tokens stay; the answers kept for its idempotency
    keys go too (they repeat what was stored). With ``end_user`` only that
    person's sessions and notes go ("" : the owner in person's), with the
    answers kept for those sessions; the rest of the account stays as it is.
    """
    sessions = ChatSession.objects.filter(owner=user)
    if end_user is not None:
        sessions = sessions.filter(end_user=end_user)
    pks = list(sessions.values_list("pk", flat=True))
    erased = sessions_erase(session_pks=pks)
    erased.notes += notes_erase(user=user, end_user=end_user)
    if end_user is None:
        idempotency_keys_erase(user=user)
    return erased


# --- retention ---------------------------------------------------------------

BATCH_REVISIONS = 1000


def expired_sessions_purge(*, days: int, batch_size: int = BATCH_SESSIONS) -> Erased:
    """Delete sessions with no write for more than ``days`` days (0: none).

    The time of the last write is the session row's ``updated_at`` (every
    episode write and edit moves it), never an episode's ``created_at``, which
    an import may back-date: old history imported today is kept.
    """
    if days <= 0:
        return Erased()
    cutoff = timezone.now() - timedelta(days=days)
    pks = list(ChatSession.objects.filter(updated_at__lt=cutoff).values_list("pk", flat=True))
    erased = sessions_erase(session_pks=pks, batch_size=batch_size)
    erased.notes += expired_notes_purge(cutoff=cutoff)
    return erased


def old_revisions_prune(*, days: int, batch_size: int = BATCH_REVISIONS) -> int:
    """Delete summary revisions older than ``days`` days (0: none), a batch per transaction."""
    if days <= 0:
        return 0
    cutoff = timezone.now() - timedelta(days=days)
    deleted = 0
    while True:
        with transaction.atomic():
            pks = list(SummaryRevision.objects.filter(created_at__lt=cutoff).values_list("pk", flat=True)[:batch_size])
            if not pks:
                return deleted
            _scrub_log_entries(SummaryRevision, pks)
            count, _ = SummaryRevision.objects.filter(pk__in=pks).delete()
            deleted += count
