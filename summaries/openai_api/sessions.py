"""Which session a chat-completions call speaks in (see ``session_for_request``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sessions_app.models import ChatSession
from sessions_app.selectors import session_for_user
from sessions_app.services import EpisodeInput, episodes_bulk_create, session_create
from summaries.openai_api.request import ChatRequest, Message

#: Where a session made for an OpenAI ``user`` keeps that value.
OPENAI_USER_KEY = "openai_user"


def history_pairs(history: Sequence[Message]) -> list[EpisodeInput]:
    """The user/assistant pairs of a request's earlier messages, as
    episodes; a user message without an answer has nothing to pair with."""
    pairs: list[EpisodeInput] = []
    pending: str | None = None
    for message in history:
        if message.role == "user":
            pending = message.content
        elif pending is not None and pending.strip() and message.content.strip():
            pairs.append(
                {"user_input": pending, "response": message.content, "metadata": {"source": "openai_import"}}
            )
            pending = None
    return pairs


def session_for_openai_user(*, caller: Any, openai_user: str) -> ChatSession:
    """The caller's session for this end user, created on first use."""
    found = (
        ChatSession.objects.filter(owner=caller, **{f"metadata__{OPENAI_USER_KEY}": openai_user})
        .order_by("pk")
        .first()
    )
    if found is not None:
        return found
    return session_create(
        owner=caller, title=f"OpenAI user {openai_user}"[:200], metadata={OPENAI_USER_KEY: openai_user}
    )


def session_for_request(*, caller: Any, request: ChatRequest) -> tuple[ChatSession, bool]:
    """The session and whether its history comes from Nexus (``True``) or
    was just imported from the request.

    In this order: the named session (``SessionNotFound`` when the caller
    may not change it, exactly as for an unknown one); the session of the
    request's ``user``; else a new session into which the request's earlier
    user/assistant pairs are imported first. A session created here stays
    even when the call then fails, so a retry can reuse it.
    """
    if request.session:
        return session_for_user(caller, request.session, change=True), True
    if request.user:
        return session_for_openai_user(caller=caller, openai_user=request.user), True
    session = session_create(owner=caller, title="OpenAI client conversation")
    episodes_bulk_create(session=session, items=history_pairs(request.history))
    return session, False
