"""The memory tools: search, the context for a question, store an exchange,
list sessions. Each validates its arguments with the REST endpoint's
serializer and calls the same services, so a tool and its endpoint answer
alike (``summaries.mcp.registry`` words the failures)."""

from __future__ import annotations

import json
from typing import Any

from rest_framework.exceptions import ValidationError
from rest_framework.renderers import JSONRenderer

from nexus.write_outcome import atomic_write
from sessions_app.api.search_views import results_payload
from sessions_app.api.serializers import (
    EpisodeWriteSerializer,
    SearchQuerySerializer,
    SessionFilterSerializer,
    SessionSerializer,
    episode_payload,
)
from sessions_app.models import ChatSession
from sessions_app.search import EmptyQuery
from sessions_app.search.results import search_end_user
from sessions_app.selectors import session_for_user
from sessions_app.services import episode_create_for_user, session_create
from sessions_app.session_search import search_session
from summaries.api.context_serializers import ContextQuerySerializer
from summaries.context import ContextTooLarge, build_context
from summaries.mcp.registry import tool

#: ``list_sessions`` answers at most this many sessions.
MAX_SESSIONS_LISTED = 100


def checked(serializer_class: type, data: dict[str, Any]) -> dict[str, Any]:
    """``data`` validated as the REST endpoint validates it (``ValidationError`` naming the fields)."""
    serializer = serializer_class(data={k: v for k, v in data.items() if v is not None})
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data


def as_json(data: Any) -> Any:
    """Serializer output as plain JSON values (dates and uuids as the API writes them)."""
    return json.loads(JSONRenderer().render(data))


@tool
def search_memory(
    user: Any, query: str, session: str | None = None, end_user: str | None = None, limit: int = 10
) -> dict[str, Any]:
    """Full-text search of stored exchanges, best first, with snippets. Give either `session`
    (a session id, to search one conversation) or `end_user` (the id of the person whose
    sessions to search; an empty string is the account's owner in person): one person's memory
    at a time, never every person's at once."""
    if (session is None) == (end_user is None):
        raise ValidationError({"session": ["Give either session or end_user (one of them)."]})
    query_args = checked(SearchQuerySerializer, {"q": query, "limit": limit})
    try:
        if session is not None:
            found = search_session(
                session=session_for_user(user, session), text=query_args["q"], limit=query_args["limit"]
            )
        else:
            person = checked(SessionFilterSerializer, {"end_user": end_user})["end_user"]
            found = search_end_user(
                user=user, end_user=person, text=query_args["q"], limit=query_args["limit"]
            )
    except EmptyQuery as err:
        raise ValidationError({"query": [str(err)]}) from None
    return as_json(results_payload(found))


@tool
def get_context(user: Any, question: str, session: str, budget: int | None = None) -> dict[str, Any]:
    """The memory to give a model before it answers `question` in `session`: summaries of the
    older conversation, the earlier exchanges relevant to the question and the recent ones,
    within `budget` tokens (default: the server's). `prompt` is the text to use."""
    target = session_for_user(user, session)
    args = checked(ContextQuerySerializer, {"question": question, "budget": budget})
    try:
        result = build_context(session=target, question=args["question"], budget=args.get("budget"))
    except ContextTooLarge as err:
        raise ValidationError({"budget": [str(err)]}) from None
    return {"session": str(target.uuid), **as_json(result.as_dict())}


@tool
def remember(
    user: Any,
    user_input: str,
    response: str,
    session: str | None = None,
    title: str = "",
    end_user: str = "",
) -> dict[str, Any]:
    """Store one exchange (the user's message and the assistant's reply) in `session`. Without
    `session`, a new session is made (named `title`, for `end_user` if given) and its id
    returned: pass it to the next calls."""
    episode_args = checked(EpisodeWriteSerializer, {"user_input": user_input, "response": response})
    new = None if session is not None else checked(SessionSerializer, {"title": title, "end_user": end_user})
    # One transaction: a failed write leaves no empty session behind.
    with atomic_write():
        if new is not None:
            session = str(session_create(owner=user, **new).uuid)
        episode = episode_create_for_user(
            user=user,
            session_uuid=session,
            user_input=episode_args["user_input"],
            response=episode_args["response"],
        )
    return {"session": session, "episode": as_json(episode_payload(episode))}


@tool
def list_sessions(user: Any, end_user: str | None = None, limit: int = 20) -> dict[str, Any]:
    """Your sessions, most recently active first, with their stats; `end_user` keeps one
    person's (an empty string: the account's owner in person)."""
    if not 1 <= limit <= MAX_SESSIONS_LISTED:
        raise ValidationError({"limit": [f"Between 1 and {MAX_SESSIONS_LISTED}."]})
    filters = checked(SessionFilterSerializer, {"end_user": end_user})
    rows = (
        ChatSession.objects.with_stats()
        .select_related("summarization")
        .visible_to(user)
        .filter(**filters)
        .order_by("-updated_at", "-pk")[:limit]
    )
    return {"sessions": as_json(SessionSerializer(rows, many=True).data)}
