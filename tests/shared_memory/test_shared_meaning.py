"""A shared session finds an exchange of the person's other chats asked
about in other words (by the vectors), and never a stranger's."""

from __future__ import annotations

import pytest

from sessions_app.semantic import embed_pending
from sessions_app.services import episodes_bulk_create
from summaries.context import build_context
from summaries.context.layout import OTHERS_HEADER
from tests.factories import ChatSessionFactory

pytestmark = pytest.mark.django_db

QUESTION = "What do I type to get online when we stay at the lake house?"


def told(password: str) -> dict[str, str]:
    return {
        "user_input": f"Writing this down before I lose it: the wifi password at the cabin is {password}.",
        "response": "Saved. Anything else for the trip?",
    }


@pytest.fixture
def semantic(settings):
    settings.CONTEXT_SEMANTIC_CANDIDATES = 5000
    return settings


def chat(owner, title, password, *, end_user="", scope="shared"):
    session = ChatSessionFactory(owner=owner, title=title, end_user=end_user, memory_scope=scope)
    cooking = [{"user_input": f"Message {n}: what to cook?", "response": f"Risotto {n}."} for n in range(20)]
    episodes_bulk_create(session=session, items=[*cooking[:5], told(password), *cooking[5:]])
    embed_pending(session.pk)
    return session


def test_an_other_chats_fact_told_in_other_words_is_found_by_meaning(semantic, owner, other_user):
    cabin = chat(owner, "Cabin trip", "heron42")
    chat(other_user, "Theirs", "owner-pw")
    chat(owner, "Bob's", "bob-pw", end_user="bob")
    chat(owner, "Alone", "alone-pw", scope="session")
    new = ChatSessionFactory(owner=owner, title="New", memory_scope="shared")
    result = build_context(session=new, question=QUESTION, budget=600)
    assert OTHERS_HEADER in result.prompt and '"Cabin trip" #6]' in result.prompt
    assert "heron42" in result.prompt
    assert set(result.other_sessions.values()) == {str(cabin.uuid)}
    for stranger in ("owner-pw", "bob-pw", "alone-pw"):
        assert stranger not in result.prompt


def test_small_talk_borrows_nothing(semantic, owner):
    chat(owner, "Cabin trip", "heron42")
    new = ChatSessionFactory(owner=owner, title="New", memory_scope="shared")
    result = build_context(session=new, question="Thanks!", budget=600)
    assert OTHERS_HEADER not in result.prompt and result.other_sessions == {}
