"""The vectors of a person's shared sessions kept in a process between
questions (``sessions_app.semantic.person_vectors``): a new exchange of
another chat is compared by the next question, a deleted one, a chat made
session-scoped, given to another end user or deleted never again, whether
the change was made here or by another process (a bare UPDATE or DELETE,
which nothing here hears of); and what a question reads stays bounded."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from sessions_app.history import episode_delete
from sessions_app.models import ChatSession, Episode, EpisodeVector
from sessions_app.semantic import embed_pending, person_vectors
from sessions_app.services import episodes_bulk_create, session_update
from summaries.context import build_context
from tests.factories import ChatSessionFactory

pytestmark = pytest.mark.django_db

QUESTION = "What do I type to get online when we stay at the lake house?"
FACT = {
    "user_input": "Writing this down before I lose it: the wifi password at the cabin is heron42.",
    "response": "Saved. Anything else for the trip?",
}


@pytest.fixture
def semantic(settings):
    settings.CONTEXT_SEMANTIC_CANDIDATES = 5000
    return settings


def chat(owner, title, items, *, end_user="", scope="shared"):
    session = ChatSessionFactory(owner=owner, title=title, end_user=end_user, memory_scope=scope)
    episodes_bulk_create(session=session, items=items)
    embed_pending(session.pk)
    return session


def cooking(count: int, start: int = 0) -> list[dict[str, str]]:
    return [
        {"user_input": f"Message {n}: what to cook?", "response": f"Risotto {n}."}
        for n in range(start, start + count)
    ]


def compared(new: ChatSession) -> set[int]:
    kept = person_vectors.compared(owner_id=new.owner_id, end_user=new.end_user, asking_pk=new.pk)
    return set(kept.ids.tolist())


def fact_id(session: ChatSession) -> int:
    return Episode.objects.get(session=session, user_input=FACT["user_input"]).pk


def test_a_new_exchange_in_another_chat_is_found_by_the_next_question(semantic, owner):
    chat(owner, "Cooking", cooking(10))
    new = ChatSessionFactory(owner=owner, memory_scope="shared")
    assert "heron42" not in build_context(session=new, question=QUESTION, budget=600).prompt
    cabin = chat(owner, "Cabin trip", [*cooking(3), FACT])
    assert fact_id(cabin) in compared(new)
    assert "heron42" in build_context(session=new, question=QUESTION, budget=600).prompt


def test_a_new_exchange_of_a_kept_chat_is_read_alone(semantic, owner):
    cooking_chat = chat(owner, "Cooking", cooking(10))
    cabin = chat(owner, "Cabin trip", cooking(5))
    new = ChatSessionFactory(owner=owner, memory_scope="shared")
    compared(new)
    kept = person_vectors._cache[(owner.pk, "")].sessions[cooking_chat.pk]
    episodes_bulk_create(session=cabin, items=[FACT])
    embed_pending(cabin.pk)
    told = fact_id(cabin)
    with CaptureQueriesContext(connection) as queries:
        assert told in compared(new)
    assert len(queries) == 2  # the list, then the new vectors of the chat that has them
    assert queries[-1]["sql"].count("SELECT * FROM") == 1
    assert person_vectors._cache[(owner.pk, "")].sessions[cooking_chat.pk] is kept


def test_nothing_new_reads_the_list_alone(semantic, owner):
    for n in range(3):
        chat(owner, f"Chat {n}", cooking(4))
    new = ChatSessionFactory(owner=owner, memory_scope="shared")
    first = person_vectors.compared(owner_id=owner.pk, end_user="", asking_pk=new.pk)
    with CaptureQueriesContext(connection) as queries:
        again = person_vectors.compared(owner_id=owner.pk, end_user="", asking_pk=new.pk)
    assert len(queries) == 1 and again is first


def test_two_chats_of_the_person_asking_in_turn_keep_each_others_vectors(semantic, owner):
    chat(owner, "Cooking", cooking(10))
    first, second = chat(owner, "First", cooking(3, 20)), chat(owner, "Second", cooking(3, 30))
    compared(first), compared(second)
    for asking in (first, second, first):
        with CaptureQueriesContext(connection) as queries:
            ids = compared(asking)
        assert len(queries) == 1  # the list alone
        assert not ids & set(Episode.objects.filter(session=asking).values_list("pk", flat=True))


@pytest.mark.parametrize("here", [True, False], ids=["here", "another process"])
def test_a_deleted_exchange_is_never_compared_again(semantic, owner, here):
    cabin = chat(owner, "Cabin trip", [*cooking(3), FACT, *cooking(3, 3)])
    new = ChatSessionFactory(owner=owner, memory_scope="shared")
    gone = fact_id(cabin)
    assert gone in compared(new)
    if here:
        episode_delete(session=cabin, episode_pk=gone)
    else:
        EpisodeVector.objects.filter(episode_id=gone).delete()
        Episode.objects.filter(pk=gone).delete()
        ChatSession.objects.filter(pk=cabin.pk).update(history_revision=cabin.history_revision + 1)
    assert gone not in compared(new)
    assert "heron42" not in build_context(session=new, question=QUESTION, budget=600).prompt


@pytest.mark.parametrize(
    "change",
    ["scope here", "scope elsewhere", "end user elsewhere", "deleted"],
)
def test_a_chat_that_stops_being_the_persons_is_never_compared_again(semantic, owner, change):
    cabin = chat(owner, "Cabin trip", [*cooking(3), FACT])
    chat(owner, "Cooking", cooking(5))
    new = ChatSessionFactory(owner=owner, memory_scope="shared")
    assert fact_id(cabin) in compared(new)
    rows = ChatSession.objects.filter(pk=cabin.pk)
    cabin_ids = set(Episode.objects.filter(session=cabin).values_list("pk", flat=True))
    if change == "scope here":
        session_update(session=cabin, memory_scope="session")
    elif change == "scope elsewhere":
        rows.update(memory_scope="session")  # as another process would, unseen here
    elif change == "end user elsewhere":
        rows.update(end_user="ann")  # the admin's or a bare UPDATE's doing: the API refuses it
    else:
        rows.delete()
    left = compared(new)
    assert left and not left & cabin_ids
    result = build_context(session=new, question=QUESTION, budget=600)
    assert "heron42" not in result.prompt and str(cabin.uuid) not in result.other_sessions.values()


def test_the_newest_chats_are_compared_up_to_the_cap(semantic, owner):
    semantic.CONTEXT_SEMANTIC_CANDIDATES = 10
    chats = [chat(owner, f"Chat {n}", cooking(4, 10 * n)) for n in range(4)]
    new = ChatSessionFactory(owner=owner, memory_scope="shared")
    kept = person_vectors.compared(owner_id=owner.pk, end_user="", asking_pk=new.pk)
    newest = [Episode.objects.filter(session=c).order_by("-pk").values_list("pk", flat=True) for c in chats]
    assert set(kept.ids.tolist()) == {*newest[3], *newest[2], *list(newest[1])[:2]}
    assert set(kept.sessions.tolist()) == {chats[3].pk, chats[2].pk, chats[1].pk}


def test_a_context_reads_as_many_rows_whatever_the_persons_chats(semantic, owner, other_user):
    """Queries of a warm question: the same for a person with 2 chats and with 12."""
    counts = []
    for user, chats in ((owner, 2), (other_user, 12)):
        for n in range(chats):
            chat(user, f"Chat {n}", [*cooking(3), FACT] if n == 0 else cooking(4))
        new = ChatSessionFactory(owner=user, memory_scope="shared")
        build_context(session=new, question=QUESTION, budget=600)
        with CaptureQueriesContext(connection) as queries:
            prompt = build_context(session=new, question=QUESTION, budget=600).prompt
        assert "heron42" in prompt
        counts.append(len(queries))
    assert counts[0] == counts[1]


def test_a_cold_question_reads_every_chat_in_one_query(semantic, owner):
    for n in range(6):
        chat(owner, f"Chat {n}", cooking(4))
    new = ChatSessionFactory(owner=owner, memory_scope="shared")
    with CaptureQueriesContext(connection) as queries:
        kept = person_vectors.compared(owner_id=owner.pk, end_user="", asking_pk=new.pk)
    assert len(kept) == 24 and len(queries) == 2
