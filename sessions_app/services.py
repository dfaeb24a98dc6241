"""Writes for sessions and episodes."""

from __future__ import annotations

import functools
import uuid as uuid_lib
from collections.abc import Sequence
from typing import Any, NotRequired, TypedDict

from django.db import connections, router, transaction
from django.db.models import F
from django.db.models.signals import post_save
from django.http import Http404
from django.utils import timezone

from nexus.db import hot_cursor
from sessions_app.models import ChatSession, Episode
from sessions_app.selectors import parse_session_uuid, session_for_user
from sessions_app.tokens import count_episode_tokens


class EpisodeInput(TypedDict):
    user_input: str
    response: str
    metadata: NotRequired[dict]


def session_create(*, owner: Any, title: str = "", metadata: dict | None = None) -> ChatSession:
    return ChatSession.objects.create(owner=owner, title=title, metadata=metadata or {})


def session_update(*, session: ChatSession, title: str | None = None, metadata: dict | None = None) -> ChatSession:
    """Change a session's title and/or metadata; fields left as ``None`` stay as they are.

    ``Http404`` if the session was deleted since it was read (a save would
    fail on the missing row as a server error).
    """
    changes: dict[str, Any] = {"updated_at": timezone.now()}
    if title is not None:
        changes["title"] = title
    if metadata is not None:
        changes["metadata"] = metadata
    if not ChatSession.objects.filter(pk=session.pk).update(**changes):
        raise Http404("No such session.")
    for name, value in changes.items():
        setattr(session, name, value)
    return session


def session_delete(*, session: ChatSession) -> None:
    """Delete a session with its episodes, summaries and state (cascade)."""
    session.delete()


def _bump_counters(*, session_pk: int, episodes: int, tokens: int) -> None:
    """Add to the session's counters, taking its row lock; ``Http404`` if the row is gone.

    Checked here because the INSERT that follows would otherwise fail only on
    the foreign key, at commit, as a server error.
    """
    updated = ChatSession.objects.filter(pk=session_pk).update(
        cached_episode_count=F("cached_episode_count") + episodes,
        cached_total_tokens=F("cached_total_tokens") + tokens,
        updated_at=timezone.now(),
    )
    if not updated:
        raise Http404("No such session.")


def episode_create(
    *, session: ChatSession, user_input: str, response: str, metadata: dict | None = None
) -> Episode:
    """Store one exchange and bump the session's counters atomically.

    The counter UPDATE runs first: it takes the session's row lock, so the
    episodes of one session get their ids in commit order. A summarizer that
    reads "episodes after id N" therefore never skips one that commits late.

    Raises ``Http404`` when the session is gone (deleted since it was read,
    e.g. while a chat reply was being written): nothing is stored.
    """
    tokens = count_episode_tokens(user_input, response)
    with transaction.atomic():
        _bump_counters(session_pk=session.pk, episodes=1, tokens=tokens)
        episode = Episode.objects.create(
            session=session,
            user_input=user_input,
            response=response,
            token_count=tokens,
            metadata=metadata or {},
        )
    return episode


@functools.cache
def _fused_episode_insert_sql(*, owner_check: bool) -> str:
    """The statement of ``episode_create_for_user``, built once per variant
    (with or without the owner check). Parameters: tokens, now, uuid,
    [owner id], user_input, response, tokens, now, metadata."""
    session_meta, episode_meta = ChatSession._meta, Episode._meta
    column = {name: episode_meta.get_field(name).column for name in
              ("session", "user_input", "response", "token_count", "created_at", "metadata")}
    owner_filter = f' AND "{session_meta.get_field("owner").column}" = %s' if owner_check else ""
    return f"""
        WITH locked AS (
            UPDATE "{session_meta.db_table}"
               SET "cached_episode_count" = "cached_episode_count" + 1,
                   "cached_total_tokens" = "cached_total_tokens" + %s,
                   "updated_at" = %s
             WHERE "uuid" = %s{owner_filter}
         RETURNING "id"
        )
        INSERT INTO "{episode_meta.db_table}"
               ("{column['session']}", "{column['user_input']}", "{column['response']}",
                "{column['token_count']}", "{column['created_at']}", "{column['metadata']}")
        SELECT locked."id", %s, %s, %s, %s, %s FROM locked
        RETURNING "id", "{column['session']}"
    """


def episode_create_for_user(
    *, user: Any, session_uuid: str | uuid_lib.UUID, user_input: str, response: str, metadata: dict | None = None
) -> Episode:
    """``episode_create`` for the session with this uuid, if ``user`` may see it (else ``Http404``).

    On PostgreSQL the visibility check, the counter UPDATE (which takes the
    session's row lock first, as in ``episode_create``) and the INSERT are
    one statement, committed on its own: one round trip instead of a lookup,
    BEGIN, UPDATE, INSERT and COMMIT. ``post_save`` is then sent exactly as
    ``Model.save()`` sends it, so the summarization trigger runs as usual
    (after the commit). Other databases take the two-step path.
    """
    parsed = parse_session_uuid(session_uuid)
    alias = router.db_for_write(Episode)
    connection = connections[alias]
    if connection.vendor != "postgresql" or not user.is_authenticated:
        session = session_for_user(user, parsed)
        return episode_create(session=session, user_input=user_input, response=response, metadata=metadata)

    tokens = count_episode_tokens(user_input, response)
    now = timezone.now()
    metadata = metadata or {}
    owner_params = [] if user.is_staff else [user.pk]
    metadata_db = Episode._meta.get_field("metadata").get_db_prep_save(metadata, connection)
    params = [tokens, now, parsed, *owner_params, user_input, response, tokens, now, metadata_db]
    with hot_cursor(connection) as cursor:
        cursor.execute(_fused_episode_insert_sql(owner_check=not user.is_staff), params)
        row = cursor.fetchone()
    if row is None:
        raise Http404("No such session.")
    episode = Episode(
        id=row[0],
        session_id=row[1],
        user_input=user_input,
        response=response,
        token_count=tokens,
        created_at=now,
        metadata=metadata,
    )
    episode._state.adding = False
    episode._state.db = alias
    post_save.send(sender=Episode, instance=episode, created=True, update_fields=None, raw=False, using=alias)
    return episode


def episodes_bulk_create(*, session: ChatSession, items: Sequence[EpisodeInput]) -> list[Episode]:
    """Store many exchanges in one transaction: all of them or none.

    One counter UPDATE (taking the session's row lock first, as
    ``episode_create`` does, so ids follow commit order), one multi-row
    INSERT, and one summarization check for the whole batch: ``bulk_create``
    sends no ``post_save``, so the check is requested here, and it runs only
    after the commit. ``Http404`` (nothing stored) if the session is gone.
    """
    # Imported here: summaries depends on sessions_app, not the other way round.
    from summaries.triggers import request_run

    if not items:
        return []
    counts = [count_episode_tokens(item["user_input"], item["response"]) for item in items]
    episodes = [
        Episode(
            session=session,
            user_input=item["user_input"],
            response=item["response"],
            token_count=tokens,
            metadata=item.get("metadata") or {},
        )
        for item, tokens in zip(items, counts, strict=True)
    ]
    with transaction.atomic():
        _bump_counters(session_pk=session.pk, episodes=len(episodes), tokens=sum(counts))
        created = Episode.objects.bulk_create(episodes)
        request_run(session_pk=session.pk)
    return created
