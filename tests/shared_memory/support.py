"""A person's chats for the shared-memory tests: a fact told once, asked
about in other words, among exchanges about cooking."""

from __future__ import annotations

from sessions_app.models import ChatSession
from sessions_app.semantic import embed_pending
from sessions_app.services import episodes_bulk_create
from tests.factories import ChatSessionFactory

QUESTION = "What do I type to get online when we stay at the lake house?"


def told(password: str) -> dict[str, str]:
    return {
        "user_input": f"Writing this down before I lose it: the wifi password at the cabin is {password}.",
        "response": "Saved. Anything else for the trip?",
    }


def cooking(count: int, start: int = 0) -> list[dict[str, str]]:
    return [
        {"user_input": f"Message {n}: what to cook?", "response": f"Risotto {n}."}
        for n in range(start, start + count)
    ]


def chat(owner, title, items, *, end_user="", scope="shared") -> ChatSession:
    """A chat of ``owner`` holding ``items``, its vectors written."""
    session = ChatSessionFactory(owner=owner, title=title, end_user=end_user, memory_scope=scope)
    episodes_bulk_create(session=session, items=items)
    embed_pending(session.pk)
    return session
