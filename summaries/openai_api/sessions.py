"""Which session an OpenAI-protocol call speaks in (``resolve_session``).

Most OpenAI clients name no session: they send the whole conversation with
every call. Such a call continues the session the endpoint made for that
conversation, found by the fingerprint of its history
(``sessions_app.history_fingerprint``) through an index, so a client's N
calls leave one session of N exchanges, not N sessions and N²/2 stored
copies of the same history.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import transaction
from django.db.models import QuerySet

from sessions_app.access import end_user_written
from sessions_app.history_fingerprint import history_fingerprint
from sessions_app.models import ChatSession, MemoryScope
from sessions_app.selectors import session_for_user
from sessions_app.services import EpisodeInput, episodes_bulk_create, session_create
from sessions_app.validation import batch_problem, episode_problems
from summaries.openai_api.errors import invalid
from summaries.openai_api.request import ChatRequest, Message

#: A new session's title: the start of its conversation's first message.
TITLE_CHARS = 60


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
        pairs.append(
            {
                "user_input": question.content,
                "response": answer.content,
                "metadata": {"source": "openai_import"},
            }
        )
    return pairs


def conversation_candidates(*, caller: Any, end_user: str, fingerprint: str) -> QuerySet[ChatSession]:
    """The caller's sessions for ``end_user`` made by this endpoint (only
    they keep a fingerprint) whose whole history has this fingerprint: one
    lookup in ``session_history_fp_idx``. Unordered: the default order
    (newest first) would lead the planner to the owner's recent-sessions
    index instead, which reads every session of the owner."""
    return (
        ChatSession.objects.changeable_by(caller)
        .filter(owner=caller, end_user=end_user, history_fingerprint=fingerprint)
        .order_by()[:2]
    )


def conversation_session(*, caller: Any, end_user: str, history: Sequence[Message]) -> ChatSession | None:
    """The session whose whole stored history is the request's earlier
    pairs; ``None`` when none or several are (two parallel first calls of one
    conversation each make one: neither is taken over the other)."""
    fingerprint = history_fingerprint((q.content, a.content) for q, a in _paired(history))
    found = list(conversation_candidates(caller=caller, end_user=end_user, fingerprint=fingerprint))
    return found[0] if len(found) == 1 else None


def conversation_title(history: Sequence[Message], question: str) -> str:
    first = next((m.content for m in history if m.role == "user" and m.content.strip()), question)
    text = " ".join(first.split())
    if len(text) <= TITLE_CHARS:
        return text
    return text[:TITLE_CHARS].rsplit(" ", 1)[0].rstrip(" ,.;:") + "…"


def resolve_session(
    *,
    caller: Any,
    named: str | None,
    end_user: str | None,
    history: Sequence[Message],
    question: str,
) -> tuple[ChatSession, bool]:
    """The session a call speaks in, and whether its history comes from
    Nexus (``True``) or was just imported from the request (``False``).

    In this order: the ``named`` session (``X-Nexus-Session`` or
    ``metadata.nexus_session``; ``SessionNotFound`` when the caller may not
    change it, exactly as for an unknown one); else the session of this
    conversation (``conversation_session``) for ``end_user`` (``user``, else
    ``safety_identifier``; ``None``: the owner in person), when ``history``
    (the user/assistant messages before ``question``) holds a pair; else a
    new session for that end user, its memory shared with their other
    sessions when one is named, into which the earlier pairs are imported
    first (both or neither). A session created here stays even when the
    call then fails, so a retry of a call with earlier messages finds it.
    """
    if named:
        return session_for_user(caller, named, change=True), True
    # A key bound to an end user speaks for that end user only (``EndUserNotAllowed`` for another).
    person = end_user_written(caller, end_user or "", creating=True) or ""
    if _paired(history) and (found := conversation_session(caller=caller, end_user=person, history=history)):
        return found, True
    pairs = history_pairs(history)  # checked before the session is made
    with transaction.atomic():
        session = session_create(
            owner=caller,
            title=conversation_title(history, question),
            end_user=person,
            memory_scope=MemoryScope.SHARED if person else MemoryScope.SESSION,
            keeps_fingerprint=True,
        )
        episodes_bulk_create(session=session, items=pairs)
    return session, False


def session_for_request(*, caller: Any, request: ChatRequest) -> tuple[ChatSession, bool]:
    """``resolve_session`` for a chat-completions request."""
    return resolve_session(
        caller=caller,
        named=request.session,
        end_user=request.end_user,
        history=request.history,
        question=request.question,
    )
