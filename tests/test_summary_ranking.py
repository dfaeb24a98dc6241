"""Summary rows compete on relevance: each row keeps its own words and
vectors by passage (``summaries.summary_index``), written again when the row
changes, and a row that answers the question is quoted by its answering
passages among the best retrieved exchanges (``summaries.context.summary_ranking``)."""

from __future__ import annotations

import numpy as np
import pytest

from sessions_app.semantic.vectors import to_matrix
from sessions_app.services import episodes_bulk_create
from summaries.context import build_context, summary_ranking
from summaries.models import Summary, SummaryIndex
from summaries.summary_index import digest_of, passages_of, refresh, refresh_stale
from tests.factories import SummaryFactory

pytestmark = pytest.mark.django_db

ANSWER = "The spare key to the allotment shed hangs behind the blue watering can."
ROW = " ".join(
    [f"On day {n} the user asked about the weather, the bus times and what to cook." for n in range(30)]
    + [ANSWER]
    + [f"Later, on day {n}, they talked about the football results again." for n in range(30, 60)]
)
QUESTION = "Where is the spare key to the allotment shed?"


@pytest.fixture
def semantic(settings):
    """Retrieval by meaning on, as in production (the suite's settings turn it off)."""
    settings.CONTEXT_SEMANTIC_CANDIDATES = 5000
    return settings


def chatter(n: int) -> dict[str, str]:
    return {
        "user_input": f"Message {n}: what is the weather like for the shed and allotment this week?",
        "response": f"Mild and dry for the allotment, message {n}; " + "a long reply about gardening. " * 30,
    }


@pytest.fixture
def session_with_row(session, django_capture_on_commit_callbacks):
    """80 long exchanges; a summary row over the first 60 that alone says where the key is."""
    episodes = episodes_bulk_create(session=session, items=[chatter(n) for n in range(80)])
    with django_capture_on_commit_callbacks(execute=True):
        row = SummaryFactory(
            session=session, content=ROW, first_episode_id=episodes[0].pk, last_episode_id=episodes[59].pk
        )
    session.refresh_from_db()
    return session, row


def test_a_written_row_gets_its_words_and_vectors_by_passage(semantic, session_with_row):
    _, row = session_with_row
    index = SummaryIndex.objects.get(summary=row)
    assert index.digest == digest_of(ROW)
    assert len(index.words) == len(passages_of(ROW))
    assert any({"spare", "key", "shed", "watering"} <= set(words) for words in index.words)
    matrix, _ = to_matrix([bytes(index.vectors)])
    assert matrix.shape == (len(passages_of(ROW)), 384)
    assert np.allclose(np.linalg.norm(matrix, axis=1), 1.0, atol=1e-2)


def test_an_edited_row_is_indexed_again_and_a_deleted_one_takes_its_index(
    api_client, semantic, session_with_row, django_capture_on_commit_callbacks
):
    _, row = session_with_row
    with django_capture_on_commit_callbacks(execute=True):
        answer = api_client.patch(f"/api/summaries/{row.pk}/", {"content": "Edited by hand."}, format="json")
    assert answer.status_code == 200, answer.content
    index = SummaryIndex.objects.get(summary=row)
    assert index.digest == digest_of("Edited by hand.")
    assert index.words == [["edited", "hand"]]
    Summary.objects.filter(pk=row.pk).delete()
    assert not SummaryIndex.objects.filter(summary_id=row.pk).exists()


def test_rows_written_without_an_index_are_indexed_by_the_sweep(session):
    episodes = episodes_bulk_create(session=session, items=[chatter(n) for n in range(3)])
    # Never committed: no refresh was sent.
    row = SummaryFactory(session=session, content=ANSWER, first_episode_id=episodes[0].pk)
    assert not SummaryIndex.objects.filter(summary=row).exists()
    assert refresh_stale() == 1
    assert SummaryIndex.objects.get(summary=row).digest == digest_of(ANSWER)
    assert refresh_stale() == 0


@pytest.mark.parametrize("meaning", [True, False])
def test_a_row_that_answers_takes_the_place_of_exchanges_that_do_not_fit(settings, session_with_row, meaning):
    settings.CONTEXT_SEMANTIC_CANDIDATES = 5000 if meaning else 0
    session, row = session_with_row
    refresh(row.pk)  # with vectors or without
    result = build_context(session=session, question=QUESTION, budget=1200)
    assert row.pk in result.summaries
    assert ANSWER in result.prompt
    # Quoted by the passage that answers, not whole: the rest is cut.
    assert "football results" not in result.prompt and "…" in result.prompt
    assert result.token_count <= 1200


def test_without_the_competition_the_row_does_not_fit(settings, session_with_row, monkeypatch):
    monkeypatch.setattr(summary_ranking, "SUMMARY_RANK", None)
    session, _ = session_with_row
    result = build_context(session=session, question=QUESTION, budget=1200)
    assert ANSWER not in result.prompt


def test_small_talk_lifts_no_row(semantic, session_with_row):
    session, row = session_with_row
    result = build_context(session=session, question="Thanks!", budget=1200)
    assert ANSWER not in result.prompt


PLUMBER = {
    "user_input": "The plumber finally sent his invoice for the boiler repair: 412 euros, due on Friday.",
    "response": "Noted: the boiler repair invoice is 412 euros, due Friday.",
}


@pytest.fixture
def row_and_fact(session, django_capture_on_commit_callbacks):
    """The row over the first 25 exchanges says nothing of the plumber; exchange 30 does (by its words:
    retrieval by meaning is off, as in the suite's settings)."""
    items = [chatter(n) for n in range(40)]
    items[30] = PLUMBER
    episodes = episodes_bulk_create(session=session, items=items)
    with django_capture_on_commit_callbacks(execute=True):
        row = SummaryFactory(
            session=session, content=ROW, first_episode_id=episodes[0].pk, last_episode_id=episodes[24].pk
        )
    session.refresh_from_db()
    return session, row, episodes


@pytest.mark.parametrize("unanswered", ["none", "passages"])
def test_a_row_that_does_not_answer_leaves_the_budget_unspent(row_and_fact, monkeypatch, unanswered):
    monkeypatch.setattr(summary_ranking, "UNANSWERED", unanswered)
    session, row, episodes = row_and_fact
    result = build_context(session=session, question="How much was the plumber's invoice?", budget=4000)
    assert episodes[30].pk in result.retrieved
    assert "412 euros" in result.prompt
    # Nothing of the row speaks for the question: it is not quoted whole to fill the budget.
    assert "football results" not in result.prompt
    if unanswered == "none":
        assert row.pk not in result.summaries
        assert row.pk in result.omitted["summaries"]


def test_a_row_that_does_not_answer_fills_the_budget_when_kept_whole(row_and_fact, monkeypatch):
    monkeypatch.setattr(summary_ranking, "UNANSWERED", "whole")
    session, row, _ = row_and_fact
    result = build_context(session=session, question="How much was the plumber's invoice?", budget=4000)
    assert "412 euros" in result.prompt
    assert row.pk in result.summaries
    assert "football results" in result.prompt


@pytest.mark.parametrize("unanswered", ["none", "passages"])
def test_when_retrieval_quotes_nothing_the_rows_keep_their_place(row_and_fact, monkeypatch, unanswered):
    monkeypatch.setattr(summary_ranking, "UNANSWERED", unanswered)
    session, row, _ = row_and_fact
    result = build_context(
        session=session, question="Who won the chess tournament in Reykjavik?", budget=4000
    )
    assert result.retrieved == []
    assert row.pk in result.summaries
    assert ROW in result.prompt
