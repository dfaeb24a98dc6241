"""A shared session finds an exchange of the person's other chats asked
about in other words (by the vectors), and never a stranger's."""

from __future__ import annotations

import pytest

from summaries.context import build_context
from summaries.context.layout import OTHERS_HEADER
from tests.factories import ChatSessionFactory
from tests.shared_memory.support import QUESTION, cooking, told
from tests.shared_memory.support import chat as shared_chat

pytestmark = pytest.mark.django_db


def chat(owner, title, password, *, end_user="", scope="shared"):
    cooked = cooking(20)
    return shared_chat(
        owner, title, [*cooked[:5], told(password), *cooked[5:]], end_user=end_user, scope=scope
    )


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
