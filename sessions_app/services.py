"""Writes for sessions and episodes."""

from __future__ import annotations

import functools
import uuid as uuid_lib
from collections.abc import Sequence
from datetime import datetime
from typing import Any, NotRequired, TypedDict

from django.db import connections, router, transaction
from django.db.models import Value
from django.db.models.functions import Coalesce, Greatest
from django.db.models.signals import post_save
from django.utils import timezone

from sessions_app.access import changes_all_sessions, session_confinement
from sessions_app.episode_insert import EPISODE_FIELDS, fused_episode_insert_sql
from sessions_app.errors import EpisodeDateInvalid, SessionNotFound, earlier_than_newest
from sessions_app.history_fingerprint import exchange_digest, fingerprint_after
from sessions_app.models import ChatSession, Episode
from sessions_app.selectors import parse_session_uuid, session_for_user
from sessions_app.session_writes import (  # noqa: F401 (the writes of sessions, named here with the rest)
    session_counters_repair,
    session_create,
    session_delete,
    session_update,
)
from sessions_app.signals import episodes_bulk_created
from sessions_app.tokens import count_episode_tokens
from sessions_app.validation import created_at_problems


class EpisodeInput(TypedDict):
    user_input: str
    response: str
    metadata: NotRequired[dict]
    created_at: NotRequired[datetime | None]


@functools.cache
def _bump_sql(*, dated: bool) -> str:
    """The counter UPDATE of ``_bump_counters``; parameters: episodes, tokens,
    episodes, now, session pk, [dated_from]."""
    date_filter = ' AND ("cached_last_episode_at" IS NULL OR "cached_last_episode_at" <= %s)' if dated else ""
    return f"""
        UPDATE "{ChatSession._meta.db_table}"
           SET "cached_episode_count" = "cached_episode_count" + %s,
               "cached_total_tokens" = "cached_total_tokens" + %s,
               "cached_last_position" = "cached_last_position" + %s,
               "updated_at" = %s
         WHERE "id" = %s{date_filter}
     RETURNING "cached_last_position", "history_fingerprint"
    """


def _bump_counters(
    *, session_pk: int, episodes: int, tokens: int, dated_from: datetime | None
) -> tuple[int, str | None]:
    """Add to the session's counters, taking its row lock; the first position
    of the ``episodes`` about to be written (they take the next ones in order)
    and the history fingerprint before them, which ``_record_newest`` extends.

    One statement that also hands back the raised position counter (the
    ORM's ``update()`` returns no values; PostgreSQL and SQLite both take
    ``UPDATE ... RETURNING``). ``SessionNotFound`` if the row is gone (the
    INSERT that follows would otherwise fail only on the foreign key, at
    commit, as a server error); ``EpisodeDateInvalid`` if ``dated_from``
    (the first date a caller gave) precedes the session's newest episode,
    checked in the same UPDATE that takes the lock, so two writers cannot
    both pass it. Episodes dated "now" are not checked: a writer that
    waited for the lock may hold a "now" a moment older than the episode
    committed before it.
    """
    connection = connections[router.db_for_write(ChatSession)]
    adapt = connection.ops.adapt_datetimefield_value
    params: list[Any] = [episodes, tokens, episodes, adapt(timezone.now()), session_pk]
    if dated_from is not None:
        params.append(adapt(dated_from))
    with connection.cursor() as cursor:
        cursor.execute(_bump_sql(dated=dated_from is not None), params)
        row = cursor.fetchone()
    if row is None:
        rows = ChatSession.objects.filter(pk=session_pk)
        newest = rows.values_list("cached_last_episode_at", flat=True).first()
        if newest is None:
            raise SessionNotFound
        raise earlier_than_newest(newest)
    return row[0] - episodes + 1, row[1]


def _record_newest(*, session_pk: int, episode: Episode, fingerprint: str | None) -> None:
    """The session's newest episode and history fingerprint, kept on its row
    (the lock is already ours); its date never moves back (see ``_bump_counters``)."""
    ChatSession.objects.filter(pk=session_pk).update(
        history_fingerprint=fingerprint,
        cached_last_episode_id=episode.pk,
        cached_last_episode_at=Greatest(
            Coalesce("cached_last_episode_at", Value(episode.created_at)), Value(episode.created_at)
        ),
    )


def _checked_dates(dates: list[datetime | None]) -> list[datetime]:
    """Each episode's date (now when not given); ``EpisodeDateInvalid`` for the first bad one."""
    now = timezone.now()
    problems = created_at_problems(dates, now=now)
    if problems:
        position = min(problems)
        raise EpisodeDateInvalid(problems[position], position=position)
    return [now if value is None else value for value in dates]


def episode_create(
    *,
    session: ChatSession,
    user_input: str,
    response: str,
    metadata: dict | None = None,
    created_at: datetime | None = None,
) -> Episode:
    """Store one exchange and bump the session's counters atomically.

    The counter UPDATE runs first: it takes the session's row lock, so the
    episodes of one session get their ids in commit order. A summarizer that
    reads "episodes after id N" therefore never skips one that commits late.

    ``created_at`` (imported history) may not be in the future nor earlier
    than the session's newest episode (``EpisodeDateInvalid``). Raises
    ``SessionNotFound`` when the session is gone (deleted since it was read,
    e.g. while a chat reply was being written): nothing is stored.
    """
    (created,) = _checked_dates([created_at])
    tokens = count_episode_tokens(user_input, response)
    with transaction.atomic():
        position, before = _bump_counters(
            session_pk=session.pk, episodes=1, tokens=tokens, dated_from=created_at
        )
        episode = Episode.objects.create(
            session=session,
            owner_id=session.owner_id,
            position=position,
            user_input=user_input,
            response=response,
            token_count=tokens,
            metadata=metadata or {},
            created_at=created,
        )
        after = fingerprint_after(before, [(user_input, response)])
        _record_newest(session_pk=session.pk, episode=episode, fingerprint=after)
    return episode


def episode_create_for_user(
    *,
    user: Any,
    session_uuid: str | uuid_lib.UUID,
    user_input: str,
    response: str,
    metadata: dict | None = None,
    created_at: datetime | None = None,
) -> Episode:
    """``episode_create`` for the session with this uuid, if ``user`` may change it (else ``SessionNotFound``).

    On PostgreSQL the visibility check, the counter UPDATE (which takes the
    session's row lock first, as in ``episode_create``) and the INSERT are
    one statement, committed on its own: one round trip instead of a lookup,
    BEGIN, UPDATE, INSERT and COMMIT. The row comes back as a model instance
    through ``Model.from_db``, as the ORM builds every row it reads, and
    ``post_save`` is sent as ``Model.save()`` sends it, so the summarization
    trigger runs as usual (after the commit). Other databases, and a key
    bound to an end user, take the two-step path.
    """
    parsed = parse_session_uuid(session_uuid)
    alias = router.db_for_write(Episode)
    connection = connections[alias]
    fused = connection.vendor == "postgresql" and user.is_authenticated
    if not fused or session_confinement(user):
        session = session_for_user(user, parsed, change=True)
        return episode_create(
            session=session, user_input=user_input, response=response, metadata=metadata, created_at=created_at
        )

    (created,) = _checked_dates([created_at])
    tokens = count_episode_tokens(user_input, response)
    now = timezone.now()
    metadata = metadata or {}
    every = changes_all_sessions(user)
    owner_params = [] if every else [user.pk]
    metadata_db = Episode._meta.get_field("metadata").get_db_prep_save(metadata, connection)
    date_params = [] if created_at is None else [created]
    params = [
        tokens, now, created, exchange_digest(user_input, response), parsed, *owner_params, *date_params,
        user_input, response, tokens, created, metadata_db,
    ]  # fmt: skip
    sql = fused_episode_insert_sql(owner_check=not every, dated=created_at is not None)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    if row is None:
        # Not changeable, gone, or dated before the session's newest episode: tell which.
        session = session_for_user(user, parsed, change=True)
        raise earlier_than_newest(session.cached_last_episode_at)
    episode_id, session_id, position, owner_id = row
    episode = Episode.from_db(
        alias,
        EPISODE_FIELDS,
        (episode_id, session_id, user_input, response, tokens, created, metadata, position, owner_id),
    )
    post_save.send(sender=Episode, instance=episode, created=True, update_fields=None, raw=False, using=alias)
    return episode


def episodes_bulk_create(*, session: ChatSession, items: Sequence[EpisodeInput]) -> list[Episode]:
    """Store many exchanges in one transaction: all of them or none.

    One counter UPDATE (taking the session's row lock first, as
    ``episode_create`` does, so ids follow commit order), one multi-row
    INSERT, the newest episode recorded on the session row, and one
    ``episodes_bulk_created`` signal for the whole batch (``bulk_create``
    sends no ``post_save``), sent inside the transaction so its receivers
    can defer their work to after the commit. Dates, when given, must not
    decrease along the batch (``EpisodeDateInvalid`` with the position).
    ``SessionNotFound`` (nothing stored) if the session is gone.
    """
    if not items:
        return []
    dates = _checked_dates([item.get("created_at") for item in items])
    counts = [count_episode_tokens(item["user_input"], item["response"]) for item in items]
    episodes = [
        Episode(
            session=session,
            owner_id=session.owner_id,
            user_input=item["user_input"],
            response=item["response"],
            token_count=tokens,
            metadata=item.get("metadata") or {},
            created_at=created,
        )
        for item, tokens, created in zip(items, counts, dates, strict=True)
    ]
    with transaction.atomic():
        given = next((item.get("created_at") for item in items if item.get("created_at") is not None), None)
        first, before = _bump_counters(
            session_pk=session.pk, episodes=len(episodes), tokens=sum(counts), dated_from=given
        )
        for position, episode in enumerate(episodes, start=first):
            episode.position = position
        created = Episode.objects.bulk_create(episodes)
        after = fingerprint_after(before, ((e.user_input, e.response) for e in created))
        _record_newest(session_pk=session.pk, episode=max(created, key=lambda e: e.pk), fingerprint=after)
        episodes_bulk_created.send(sender=ChatSession, session_pk=session.pk, episodes=created)
    return created
