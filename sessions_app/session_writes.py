"""Writes of sessions themselves: create, change, delete, repair counters."""

from __future__ import annotations

from typing import Any

from django.db import router, transaction
from django.db.models import Max, Value
from django.db.models.functions import Greatest
from django.utils import timezone

from sessions_app import semantic
from sessions_app.access import end_user_written
from sessions_app.errors import EndUserLocked, SessionNotFound
from sessions_app.history_fingerprint import EMPTY
from sessions_app.models import ChatSession, Episode
from sessions_app.search.tasks import purge_after_commit


def session_create(
    *,
    owner: Any,
    title: str = "",
    metadata: dict | None = None,
    end_user: str = "",
    memory_scope: str = "session",
    keeps_fingerprint: bool = False,
) -> ChatSession:
    """A new session of ``owner`` (the request's user: a key bound to an end
    user makes that end user's sessions only, ``end_user_written``).
    ``keeps_fingerprint``: it keeps a fingerprint of its history
    (``sessions_app.history_fingerprint``), as the OpenAI endpoint's do."""
    return ChatSession.objects.create(
        owner=owner,
        title=title,
        metadata=metadata or {},
        end_user=end_user_written(owner, end_user, creating=True),
        memory_scope=memory_scope,
        history_fingerprint=EMPTY if keeps_fingerprint else None,
    )


def session_update(
    *,
    session: ChatSession,
    title: str | None = None,
    metadata: dict | None = None,
    end_user: str | None = None,
    memory_scope: str | None = None,
) -> ChatSession:
    """Change a session's fields; those left as ``None`` stay as they are.

    ``SessionNotFound`` if the session was deleted since it was read (a save would
    fail on the missing row as a server error); ``EndUserLocked`` for a new
    ``end_user`` once the session holds an episode: checked in the UPDATE
    itself, which an episode write (holding the session's row) cannot pass.
    """
    changes: dict[str, Any] = {"updated_at": timezone.now()}
    for name, value in (("title", title), ("metadata", metadata), ("memory_scope", memory_scope)):
        if value is not None:
            changes[name] = value
    rows = ChatSession.objects.filter(pk=session.pk)
    if end_user is not None and end_user != session.end_user:
        changes["end_user"] = end_user
        rows = rows.filter(cached_episode_count=0)
    if not rows.update(**changes):
        if "end_user" in changes and ChatSession.objects.filter(pk=session.pk).exists():
            raise EndUserLocked
        raise SessionNotFound
    for name, value in changes.items():
        setattr(session, name, value)
    if "end_user" in changes or "memory_scope" in changes:
        # Whose memory it is changed: this process drops what it kept of the
        # session at once (the others when they next read it: the kept copy's stamp).
        semantic.forget(session.pk)
    return session


def session_counters_repair(*, session_pk: int) -> None:
    """Set a session's counters to the aggregate over its episodes, under its
    row lock; the position counter only rises, to the highest position held."""
    with transaction.atomic():
        ChatSession.objects.select_for_update().filter(pk=session_pk).first()
        truth = ChatSession.objects.with_aggregate_stats().filter(pk=session_pk).first()
        if truth is None:
            return
        newest = Episode.objects.filter(pk=truth.last_episode_id).values_list("created_at", flat=True).first()
        highest = Episode.objects.filter(session_id=session_pk).aggregate(m=Max("position"))["m"] or 0
        ChatSession.objects.filter(pk=session_pk).update(
            cached_episode_count=truth.episode_count,
            cached_total_tokens=truth.total_tokens,
            cached_last_episode_id=truth.last_episode_id,
            cached_last_episode_at=newest,
            # Never lowered: a position once given is not given again.
            cached_last_position=Greatest("cached_last_position", Value(highest)),
        )


def session_delete(*, session: ChatSession) -> None:
    """Delete a session with its episodes, summaries and state (cascade), and
    its words with them from the full-text index's data (SQLite keeps them
    in its segments until they are merged: ``sessions_app.search.tasks``)."""
    using = router.db_for_write(Episode)
    with transaction.atomic(using=using):
        _, deleted = session.delete()
        # SQLite rewrites its whole index for this (a cost that grows with the index), so only
        # when words were indexed, after the commit (not holding the write lock), batched.
        if deleted.get(Episode._meta.label):
            purge_after_commit(using=using)
