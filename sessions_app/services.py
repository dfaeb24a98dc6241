"""Writes for sessions and episodes."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from sessions_app.models import ChatSession, Episode
from sessions_app.tokens import count_episode_tokens


def session_create(*, owner: Any, title: str = "", metadata: dict | None = None) -> ChatSession:
    return ChatSession.objects.create(owner=owner, title=title, metadata=metadata or {})


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
