"""The context of a shared session reads the person's other shared
sessions (same owner, same end user, shared), and nothing else: not another
owner's, not another end user's, not a session-scoped session's."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from sessions_app.models import ChatSession
from sessions_app.services import episodes_bulk_create, session_update
from summaries.context import build_context
from summaries.context.layout import OTHERS_HEADER, RETRIEVED_HEADER
from tests.factories import ChatSessionFactory, SummaryFactory, UserFactory

pytestmark = pytest.mark.django_db

QUESTION = "When does the zanzibar ferry leave?"


def filler(n: int) -> dict[str, str]:
    return {"user_input": f"Small note number {n} about the garden.", "response": f"Noted, note {n}."}


def fact(marker: str) -> dict[str, str]:
    return {
        "user_input": f"Remember: the zanzibar ferry leaves at {marker}.",
        "response": f"Got it, the ferry leaves at {marker}.",
    }


def chat(owner, *, title: str, end_user: str = "", scope: str = "shared", items=()) -> ChatSession:
    session = ChatSessionFactory(owner=owner, title=title, end_user=end_user, memory_scope=scope)
    if items:
        episodes_bulk_create(session=session, items=list(items))
    session.refresh_from_db()
    return session


@pytest.fixture
def person(owner):
    """The owner in person: a shared chat holding the fact among filler."""
    return chat(owner, title="Trip planning", items=[filler(n) for n in range(30)] + [fact("nine-sharp")])


@pytest.fixture
def strangers(owner, other_user):
    """The same fact's words, each with its own marker, where the person's context must never look."""
    return [
        chat(other_user, title="Another owner", items=[fact("marker-owner")]),
        chat(owner, title="Another end user", end_user="bob", items=[fact("marker-bob")]),
        chat(owner, title="This chat only", scope="session", items=[fact("marker-alone")]),
    ]


def test_a_new_shared_session_quotes_the_other_chats_under_their_own_heading(owner, person, strangers):
    new = chat(owner, title="New chat")
    result = build_context(session=new, question=QUESTION)
    assert OTHERS_HEADER in result.prompt
    assert '"Trip planning" #31]' in result.prompt
    assert "nine-sharp" in result.prompt
    (lent,) = result.other_sessions
    assert result.other_sessions[lent] == str(person.uuid)
    assert result.as_dict()["other_sessions"] == {str(lent): str(person.uuid)}
    for marker in ("marker-owner", "marker-bob", "marker-alone"):
        assert marker not in result.prompt


def test_a_short_shared_session_keeps_the_seed_layout_for_its_own(owner, person):
    new = chat(owner, title="New chat", items=[filler(100), filler(101)])
    result = build_context(session=new, question=QUESTION)
    prompt = result.prompt
    assert prompt.index(OTHERS_HEADER) < prompt.index("Previous conversation:")
    assert "Small note number 100" in prompt and "nine-sharp" in prompt


def test_a_long_shared_session_ranks_the_other_chats_with_its_own(owner, person, settings):
    settings.CONTEXT_RECENT_EPISODES = 4
    long = chat(owner, title="Long", items=[filler(200 + n) for n in range(30)])
    result = build_context(session=long, question=QUESTION)
    assert RETRIEVED_HEADER in result.prompt and OTHERS_HEADER not in result.prompt
    section = result.prompt.split(RETRIEVED_HEADER)[1]
    assert '"Trip planning" #31]' in section and "nine-sharp" in section


def test_what_clears_no_floor_is_not_lent(owner, person):
    new = chat(owner, title="New chat")
    result = build_context(session=new, question="What colour is the sky on Mars?")
    assert OTHERS_HEADER not in result.prompt
    assert result.other_sessions == {}


@pytest.mark.parametrize("end_user", ["", "ann"])
def test_isolation_from_other_owners_end_users_and_session_scoped_chats(owner, other_user, end_user):
    """Every stranger holds the question's words; only the person's own shared chat may be read."""
    mine = chat(owner, title="Mine", end_user=end_user, items=[*map(filler, range(30)), fact("marker-mine")])
    chat(other_user, title="Theirs", end_user=end_user, items=[fact("marker-owner")])
    chat(owner, title="Other end user", end_user=end_user + "x", items=[fact("marker-end-user")])
    chat(owner, title="Alone", end_user=end_user, scope="session", items=[fact("marker-alone")])
    new = chat(owner, title="New", end_user=end_user)
    result = build_context(session=new, question=QUESTION)
    assert "marker-mine" in result.prompt
    assert set(result.other_sessions.values()) == {str(mine.uuid)}
    for marker in ("marker-owner", "marker-end-user", "marker-alone"):
        assert marker not in result.prompt


def test_a_session_scoped_session_reads_nothing_of_the_shared_ones(owner, person):
    alone = chat(owner, title="Alone", scope="session")
    result = build_context(session=alone, question=QUESTION)
    assert "nine-sharp" not in result.prompt and result.other_sessions == {}


def test_the_next_context_follows_a_changed_scope_for_past_episodes_too(owner, person):
    new = chat(owner, title="New chat")
    assert "nine-sharp" in build_context(session=new, question=QUESTION).prompt
    # The lender made session-scoped: it lends nothing any more, its past episodes included.
    session_update(session=person, memory_scope="session")
    assert "nine-sharp" not in build_context(session=new, question=QUESTION).prompt
    # Shared again; then the reader made session-scoped reads nothing.
    session_update(session=person, memory_scope="shared")
    assert "nine-sharp" in build_context(session=new, question=QUESTION).prompt
    session_update(session=new, memory_scope="session")
    assert "nine-sharp" not in build_context(session=new, question=QUESTION).prompt


def test_the_context_endpoint_shows_what_other_chats_lent(api_client, owner, person, strangers):
    new = chat(owner, title="New chat")
    body = api_client.get(f"/api/sessions/{new.uuid}/context/", {"question": QUESTION}).json()
    assert "nine-sharp" in body["prompt"]
    assert set(body["other_sessions"].values()) == {str(person.uuid)}
    assert not any(marker in body["prompt"] for marker in ("marker-owner", "marker-bob", "marker-alone"))


def test_queries_do_not_grow_with_the_persons_sessions(owner):
    def queries(count: int) -> int:
        user = UserFactory()
        for n in range(count):
            chat(user, title=f"Chat {n}", items=[filler(n), fact(f"at-{n}")])
        new = chat(user, title="New")
        with CaptureQueriesContext(connection) as ctx:
            build_context(session=new, question=QUESTION)
        return len(ctx.captured_queries)

    assert queries(2) == queries(12)


def test_an_other_chats_summary_row_that_answers_competes(owner, strangers):
    trip = chat(owner, title="Trip planning", items=[filler(n) for n in range(30)] + [fact("nine-sharp")])
    first, last = trip.episodes.order_by("pk")[0], trip.episodes.order_by("pk")[10]
    row = SummaryFactory(
        session=trip,
        content="The user plans a trip. The zanzibar ferry leaves from pier four, the user said.",
        first_episode_id=first.pk,
        last_episode_id=last.pk,
    )
    later = trip.episodes.order_by("pk")
    SummaryFactory(
        session=trip, content="The user keeps notes about the garden.",
        first_episode_id=later[11].pk, last_episode_id=later[20].pk,
    )  # fmt: skip
    # A stranger's row with the same words is never offered.
    bob = strangers[1]
    bob_first = bob.episodes.get()
    SummaryFactory(
        session=bob, content="The zanzibar ferry leaves from marker-bob-pier.",
        first_episode_id=bob_first.pk, last_episode_id=bob_first.pk,
    )  # fmt: skip
    new = chat(owner, title="New chat")
    result = build_context(session=new, question=QUESTION)
    assert "pier four" in result.prompt
    assert '["Trip planning" · Exchanges 1–11]' in result.prompt
    assert result.other_summaries == {row.pk: str(trip.uuid)}
    assert "marker-bob" not in result.prompt


def test_an_offline_reply_shows_what_another_chat_lent_by_its_title(api_client, owner, person, settings):
    settings.INFERENCE_BACKEND = "offline"
    new = chat(owner, title="New chat")
    response = api_client.post(f"/api/sessions/{new.uuid}/chat/", {"message": QUESTION}, format="json")
    assert response.status_code in (200, 201), response.content
    episode = new.episodes.get()
    (shown,) = episode.shown_metadata["offline_memory"]["retrieved"]
    assert shown["label"].endswith('"Trip planning" #31]')
    assert "nine-sharp" in shown["text"]
    assert "nine-sharp" not in str(episode.metadata)  # a reference, rendered when read
    listed = api_client.get(f"/api/sessions/{new.uuid}/episodes/").json()["results"]
    assert listed[0]["metadata"]["offline_memory"]["retrieved"] == [shown]
