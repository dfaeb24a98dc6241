"""Which session a chat-completions call speaks in (see ``session_for_request``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sessions_app.models import ChatSession, MemoryScope
from sessions_app.selectors import session_for_user
from sessions_app.services import EpisodeInput, episodes_bulk_create, session_create
from sessions_app.validation import batch_problem, episode_problems
from summaries.openai_api.errors import invalid
from summaries.openai_api.request import ChatRequest, Message

#: Where a session made for an OpenAI ``user`` keeps that value.
OPENAI_USER_KEY = "openai_user"


def _paired(history: Sequence[Message]) -> list[tuple[Message, Message]]:
    pairs: list[tuple[Message, Message]] = []
    pending: Message | None = None
    for message in history:
        if message.role == "user":
            pending = message
        elif pending is not None and pending.content.strip() and message.content.strip():
            pairs.append((pending, message))
            pending = None
    return pairs


def history_pairs(history: Sequence[Message]) -> list[EpisodeInput]:
    """The user/assistant pairs of a request's earlier messages, as
    episodes; a user message without an answer has nothing to pair with.

    The pairs are checked as every write of episodes is
    (``sessions_app.validation``): an ``OpenAIError`` 400 names ``messages``
    for more pairs than one call may store, else the first message that
    could not be stored, so nothing is written for a request refused."""
    paired = _paired(history)
    if paired and (problem := batch_problem(len(paired))):
        raise invalid("messages", f"Earlier user/assistant pairs to import: {problem}")
    pairs: list[EpisodeInput] = []
    for question, answer in paired:
        problems = episode_problems(user_input=question.content, response=answer.content)
        for field, message in (("user_input", question), ("response", answer)):
            if field in problems:
                raise invalid(f"messages[{message.index}].content", problems[field])
        pairs.append({
            "user_input": question.content,
            "response": answer.content,
            "metadata": {"source": "openai_import"},
        })
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
        owner=caller,
        title=f"OpenAI user {openai_user}"[:200],
        metadata={OPENAI_USER_KEY: openai_user},
        end_user=openai_user,
        memory_scope=MemoryScope.SHARED,
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
    pairs = history_pairs(request.history)  # checked before the session is made
    session = session_create(owner=caller, title="OpenAI client conversation")
    episodes_bulk_create(session=session, items=pairs)
    return session, False
