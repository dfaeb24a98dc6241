"""The budget is a cap, not a target: an earlier exchange is quoted only
when its evidence for the question (closeness of a passage, weight of the
words it shares with the question) clears CONTEXT_RELEVANCE_FLOOR. A message
that needs no memory retrieves nothing; what was ranked below the floor is
listed as such."""

from __future__ import annotations

import pytest

from sessions_app.semantic import embed_pending
from sessions_app.services import episodes_bulk_create
from summaries.context import build_context

pytestmark = pytest.mark.django_db

SMALL_TALK = ["Thanks!", "ok", "good night", "sounds good, talk tomorrow"]

TOPICS = [
    ("Can you suggest a quick dinner with lentils?", "A lentil curry takes thirty minutes with rice."),
    ("How long should I boil eggs for a soft yolk?", "About six minutes, then cold water."),
    ("Which plants grow well on a shady balcony?", "Ferns, ivy and begonias cope with shade."),
    ("What is a good stretch for a stiff back?", "Try the cat-cow stretch slowly, ten times."),
    ("How do I keep bread fresh for longer?", "Wrap it in cloth and keep it out of the fridge."),
]
FACT = {
    "user_input": (
        "Before I forget: we moved the billing service to the new cluster last week, and the "
        "invoices now go out from the host called ledger-7 in Frankfurt. The old machine is gone."
    ),
    "response": "Noted: billing runs on ledger-7 in Frankfurt now.",
}


@pytest.fixture
def long_session(session):
    items = [{"user_input": q, "response": a} for n in range(8) for q, a in TOPICS]
    items[6] = FACT
    # Replies that thank and say goodbye, as chats have them, so the words of small talk are found.
    items[12] = {"user_input": "Thanks, that worked. Good night!", "response": "Good night, talk tomorrow."}
    episodes = episodes_bulk_create(session=session, items=items)
    embed_pending(session.pk)
    session.refresh_from_db()
    return session, episodes


@pytest.mark.parametrize("message", SMALL_TALK)
def test_small_talk_retrieves_nothing(semantic, long_session, message):
    session, _ = long_session
    result = build_context(session=session, question=message, budget=2000)
    assert result.retrieved == []
    assert "Relevant earlier exchanges:" not in result.prompt
    # Ranked all the same, and said to be under the floor, not over budget.
    assert result.omitted["below_floor"]
    assert result.omitted["retrieved"] == []


def test_a_question_with_a_matching_passage_is_answered(semantic, long_session):
    session, episodes = long_session
    fact = episodes[6]
    result = build_context(session=session, question="Where do the invoices go out from now?", budget=2000)
    assert fact.pk in result.retrieved
    assert "ledger-7" in result.prompt
    # What holds nothing of the question is not quoted to fill the budget.
    assert len(result.retrieved) < 10
    assert result.omitted["below_floor"]
    assert fact.pk not in result.omitted["below_floor"]


def test_the_floor_is_absolute_not_the_sessions_best(semantic, long_session, settings):
    session, episodes = long_session
    question = "Where do the invoices go out from now?"
    settings.CONTEXT_RELEVANCE_FLOOR = 10.0  # no evidence reaches it
    result = build_context(session=session, question=question, budget=600)
    assert result.retrieved == []
    assert episodes[6].pk in result.omitted["below_floor"]
    # (A budget the whole history does not fit, so the context is built, not the history sent.)
    settings.CONTEXT_RELEVANCE_FLOOR = -1.0  # below any cosine: every ranked exchange clears it
    result = build_context(session=session, question=question, budget=600)
    assert result.omitted["below_floor"] == []
    assert episodes[6].pk in result.retrieved


def test_small_talk_costs_about_the_recent_window(semantic, long_session):
    session, _ = long_session
    # A budget large enough for the window, so nothing else is what makes the cost.
    small = build_context(session=session, question="ok", budget=4000)
    assert small.retrieved == []
    assert small.token_count < build_context(
        session=session, question="Where do the invoices go out from now?", budget=4000
    ).token_count


def test_below_floor_is_in_the_payload(semantic, long_session, api_client):
    session, _ = long_session
    response = api_client.get(f"/api/sessions/{session.uuid}/context/", {"question": "Thanks!"})
    assert response.status_code == 200
    omitted = response.json()["omitted"]
    assert omitted["below_floor"] and all(isinstance(pk, int) for pk in omitted["below_floor"])
    assert response.json()["retrieved"] == []
