"""The context finds an old exchange asked about in other words."""

from __future__ import annotations

import pytest

from sessions_app.semantic import embed_pending
from sessions_app.services import episodes_bulk_create
from summaries.context import build_context

pytestmark = pytest.mark.django_db

QUESTION = "What do I type to get online when we stay at the lake house?"
FACT = {
    "user_input": "Writing this down before I lose it: the wifi password at the cabin is heron42.",
    "response": "Saved. Anything else for the trip?",
}


@pytest.fixture
def long_session(session):
    chatter = [
        {"user_input": f"Message {n}: what should I cook tonight?", "response": f"Try a risotto, take {n}."}
        for n in range(40)
    ]
    episodes = episodes_bulk_create(session=session, items=[chatter[0], FACT, *chatter[1:]])
    embed_pending(session.pk)
    session.refresh_from_db()
    return session, episodes[1]


def test_a_fact_told_in_other_words_is_retrieved_by_meaning(semantic, long_session):
    session, fact = long_session
    result = build_context(session=session, question=QUESTION, budget=600)
    assert fact.pk in result.retrieved
    assert "heron42" in result.prompt
    assert result.token_count <= 600


def test_without_meaning_the_words_alone_miss_it(settings, long_session):
    settings.CONTEXT_SEMANTIC_CANDIDATES = 0
    session, fact = long_session
    result = build_context(session=session, question=QUESTION, budget=600)
    assert fact.pk not in result.retrieved


def test_an_episode_not_yet_encoded_is_still_found_by_its_words(semantic, session):
    items = [{"user_input": f"Message {n} about cooking.", "response": "Risotto again."} for n in range(30)]
    items[2] = {"user_input": "The wifi password at the cabin is heron42.", "response": "Noted."}
    episodes = episodes_bulk_create(session=session, items=items)
    session.refresh_from_db()  # no vectors written: the task has not run
    result = build_context(session=session, question="What is the wifi password at the cabin?", budget=600)
    assert episodes[2].pk in result.retrieved
