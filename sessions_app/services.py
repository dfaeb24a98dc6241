"""Writes for sessions and episodes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NotRequired, TypedDict

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from sessions_app.models import ChatSession, Episode
from sessions_app.tokens import count_episode_tokens


class EpisodeInput(TypedDict):
    user_input: str
    response: str
    metadata: NotRequired[dict]


def session_create(*, owner: Any, title: str = "", metadata: dict | None = None) -> ChatSession:
    return ChatSession.objects.create(owner=owner, title=title, metadata=metadata or {})


def session_update(*, session: ChatSession, title: str | None = None, metadata: dict | None = None) -> ChatSession:
    """Change a session's title and/or metadata; fields left as ``None`` stay as they are."""
    fields = ["updated_at"]
    if title is not None:
        session.title = title
        fields.append("title")
    if metadata is not None:
        session.metadata = metadata
        fields.append("metadata")
    session.save(update_fields=fields)
    return session


def session_delete(*, session: ChatSession) -> None:
    """Delete a session with its episodes, summaries and state (cascade)."""
    session.delete()


def episode_create(
    *, session: ChatSession, user_input: str, response: str, metadata: dict | None = None
) -> Episode:
    """Store one exchange and bump the session's counters atomically.

    The counter UPDATE runs first: it takes the session's row lock, so the
    episodes of one session get their ids in commit order. A summarizer that
    reads "episodes after id N" therefore never skips one that commits late.
    """
    tokens = count_episode_tokens(user_input, response)
    with transaction.atomic():
        ChatSession.objects.filter(pk=session.pk).update(
            cached_episode_count=F("cached_episode_count") + 1,
            cached_total_tokens=F("cached_total_tokens") + tokens,
            updated_at=timezone.now(),
        )
        episode = Episode.objects.create(
            session=session,
            user_input=user_input,
            response=response,
            token_count=tokens,
            metadata=metadata or {},
        )
    return episode


def episodes_bulk_create(*, session: ChatSession, items: Sequence[EpisodeInput]) -> list[Episode]:
    """Store many exchanges in one transaction: all of them or none.

    One counter UPDATE (taking the session's row lock first, as
    ``episode_create`` does, so ids follow commit order), one multi-row
    INSERT, and one summarization check for the whole batch: ``bulk_create``
    sends no ``post_save``, so the check is requested here, and it runs only
    after the commit.
    """
    # Imported here: summaries depends on sessions_app, not the other way round.
    from summaries.services import summarization_request

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
        ChatSession.objects.filter(pk=session.pk).update(
            cached_episode_count=F("cached_episode_count") + len(episodes),
            cached_total_tokens=F("cached_total_tokens") + sum(counts),
            updated_at=timezone.now(),
        )
        created = Episode.objects.bulk_create(episodes)
        summarization_request(session_pk=session.pk)
    return created
