"""Changing a session's history after the fact: deleting one exchange,
clearing them all, and filling in a reply stored empty.

What chat-history interfaces need (LangChain's ``clear``, the Agents SDK's
``pop_item`` and ``clear_session``, a user message stored before its reply).

Deleting leaves nothing behind. In the transaction that deletes the rows,
under the session's row lock (every write takes it first, so no write lands
halfway): the episode, its vectors (no foreign key points at them), the
answers kept for the session's idempotency keys (they repeat what was
written), and ``episodes_deleted`` for what the apps above derived from it
(summaries). After the commit, the SQLite full-text index merges the
deleted words out (``sessions_app.search.tasks``, in batches). Every
process drops the vectors it kept of the session, as the session's
``history_revision`` has moved.

Flat cost: one exchange's deletion reads and writes by primary key and by
the ``(session, id)`` index, a fixed number of queries however long the
session is. A clear deletes by session.
"""

from __future__ import annotations

from typing import Any

from django.db import router, transaction
from django.db.models import F, Value
from django.db.models.functions import Least
from django.utils import timezone

from sessions_app.errors import EpisodeNotFound, ReplyAlreadyStored, SessionNotFound
from sessions_app.history_fingerprint import EMPTY, history_fingerprint
from sessions_app.models import ChatSession, Episode, EpisodeVector, IdempotencyKey
from sessions_app.querysets import session_range
from sessions_app.search.tasks import purge_after_commit
from sessions_app.semantic.neighbours import forget
from sessions_app.semantic.tasks import embedding_due, queue_embedding
from sessions_app.signals import episodes_deleted
from sessions_app.tokens import count_episode_tokens


def _lock(session_pk: int) -> dict[str, Any]:
    """The session's row lock and the counters the changes below need."""
    row = (
        ChatSession.objects.select_for_update()
        .filter(pk=session_pk)
        .values(
            "cached_last_episode_id", "cached_last_position", "encoded_through_position", "history_fingerprint"
        )
        .first()
    )
    if row is None:
        raise SessionNotFound
    return row


def _fingerprint_again(session: ChatSession) -> None:
    """The history fingerprint of a session that keeps one, read again from
    its exchanges after one was deleted or changed (under its row lock): a
    client sending the history as it was no longer finds it, one sending it
    as it is does. Reads the whole session, but only a session the OpenAI
    endpoint made; others keep none (a fingerprint's absence never changes)."""
    if session.history_fingerprint is None:
        return
    exchanges = (
        Episode.objects.filter(session_id=session.pk)
        .order_by("position")
        .values_list("user_input", "response")
        .iterator(chunk_size=500)
    )
    ChatSession.objects.filter(pk=session.pk).update(history_fingerprint=history_fingerprint(exchanges))


def episode_in_session(*, session: ChatSession, episode_pk: int) -> Episode:
    """The session's episode with this id; ``EpisodeNotFound`` when it has none."""
    episode = Episode.objects.filter(session_id=session.pk, pk=episode_pk).first()
    if episode is None:
        raise EpisodeNotFound
    return episode


def episode_delete(*, session: ChatSession, episode_pk: int) -> None:
    """Delete one exchange and every trace of it (module docstring);
    ``EpisodeNotFound`` when the session holds no such exchange.

    Counters move as the aggregate would (its position is never given
    again). Lock contract: takes the session's row lock first, as writes do.
    """
    using = router.db_for_write(Episode)
    with transaction.atomic(using=using):
        locked = _lock(session.pk)
        row = (
            Episode.objects.filter(session_id=session.pk, pk=episode_pk)
            .values("position", "token_count")
            .first()
        )
        if row is None:
            raise EpisodeNotFound
        EpisodeVector.objects.filter(episode_id=episode_pk).delete()
        Episode.objects.filter(pk=episode_pk).delete()
        changes: dict[str, Any] = {
            "cached_episode_count": F("cached_episode_count") - 1,
            "cached_total_tokens": F("cached_total_tokens") - row["token_count"],
            "history_revision": F("history_revision") + 1,
            "updated_at": timezone.now(),
        }
        if locked["cached_last_episode_id"] == episode_pk:
            before = (
                Episode.objects.filter(*session_range(session.pk, through_id=episode_pk - 1))
                .newest_first()
                .values("pk", "created_at")
                .first()
            )
            changes["cached_last_episode_id"] = before["pk"] if before else None
            changes["cached_last_episode_at"] = before["created_at"] if before else None
        if (
            row["position"] > locked["encoded_through_position"]
            and not Episode.objects.filter(
                session_id=session.pk, position__gt=locked["encoded_through_position"]
            ).exists()
        ):
            # It was the last one waiting for vectors: none is missing now (else the sweep looks forever).
            changes["encoded_through_position"] = locked["cached_last_position"]
        ChatSession.objects.filter(pk=session.pk).update(**changes)
        _fingerprint_again(session)
        IdempotencyKey.objects.filter(session_id=session.pk).delete()
        episodes_deleted.send(
            sender=ChatSession, session_pk=session.pk, episodes=[(episode_pk, row["position"])]
        )
        purge_after_commit(using=using)
    forget(session.pk)


def session_history_clear(*, session: ChatSession) -> int:
    """Delete every exchange of the session, and all derived from them; the
    session stays (its title, metadata, and its position counter: numbers
    are not given again). The number of exchanges deleted."""
    using = router.db_for_write(Episode)
    with transaction.atomic(using=using):
        locked = _lock(session.pk)
        EpisodeVector.objects.filter(session_id=session.pk).delete()
        deleted, _ = Episode.objects.filter(session_id=session.pk).delete()
        changes: dict[str, Any] = {}
        if locked["history_fingerprint"] is not None:
            changes["history_fingerprint"] = EMPTY  # the empty history's, known without a read
        ChatSession.objects.filter(pk=session.pk).update(
            cached_episode_count=0,
            cached_total_tokens=0,
            cached_last_episode_id=None,
            cached_last_episode_at=None,
            encoded_through_position=locked["cached_last_position"],
            history_revision=F("history_revision") + 1,
            updated_at=timezone.now(),
            **changes,
        )
        IdempotencyKey.objects.filter(session_id=session.pk).delete()
        episodes_deleted.send(sender=ChatSession, session_pk=session.pk, episodes=None)
        if deleted:
            purge_after_commit(using=using)
    forget(session.pk)
    return deleted


def reply_fill(*, session: ChatSession, episode: Episode, response: str) -> Episode:
    """Store the reply of an exchange stored without one. Call inside a
    transaction holding the session's row lock (``episode_reply_fill``);
    ``ReplyAlreadyStored`` when it has one.

    Its token count and the session's move with it; its vectors are written
    again (the encoder's reach goes back to it) and every process drops what
    it kept of the session's, as they were made from the text without the reply.
    """
    if episode.response:
        raise ReplyAlreadyStored
    tokens = count_episode_tokens(episode.user_input, response)
    if not Episode.objects.filter(pk=episode.pk, response="").update(response=response, token_count=tokens):
        raise ReplyAlreadyStored
    ChatSession.objects.filter(pk=session.pk).update(
        cached_total_tokens=F("cached_total_tokens") + (tokens - episode.token_count),
        encoded_through_position=Least("encoded_through_position", Value(episode.position - 1)),
        history_revision=F("history_revision") + 1,
        updated_at=timezone.now(),
    )
    EpisodeVector.objects.filter(episode_id=episode.pk).delete()
    _fingerprint_again(session)
    episode.response, episode.token_count = response, tokens
    session_pk = session.pk
    transaction.on_commit(lambda: _after_fill(session_pk))
    return episode


def _after_fill(session_pk: int) -> None:
    forget(session_pk)
    if embedding_due(1):
        queue_embedding(session_pk)


def episode_reply_fill(*, session: ChatSession, episode_pk: int, response: str) -> Episode:
    """``reply_fill`` for the session's episode with this id, in its own
    transaction (``EpisodeNotFound``, ``ReplyAlreadyStored``)."""
    with transaction.atomic():
        _lock(session.pk)
        episode = episode_in_session(session=session, episode_pk=episode_pk)
        return reply_fill(session=session, episode=episode, response=response)
