"""The context's "Relevant earlier exchanges": older episodes that rank
highest for the question, quoted in full with their dates, within a budget
that is a hard cap; a budget that holds the whole history gets it whole."""

from __future__ import annotations

import pytest

from sessions_app.services import episodes_bulk_create
from sessions_app.tokens import count_episode_tokens, count_tokens
from summaries.context import RETRIEVED_LABEL_TOKENS, build_context, full_history_tokens
from summaries.context.layout import day
from summaries.context.sources import RETRIEVED_MIN, retrieval_depth
from tests.factories import SummaryFactory

pytestmark = pytest.mark.django_db


def chatter(n: int) -> dict[str, str]:
    return {
        "user_input": f"Maya again, message {n}: anything new on the weather for the weekend?",
        "response": f"Maya, light rain on Saturday and sun on Sunday, as of message {n}.",
    }


@pytest.fixture
def long_session(session, settings):
    """60 exchanges; a fact told in the 4th; a summary row over the first 40.
    No relevance floor: these tests are about how the budget is filled with
    what was ranked (the floor's own: tests/semantic/test_relevance_floor.py)."""
    settings.CONTEXT_RELEVANCE_FLOOR = 0.0
    items = [chatter(n) for n in range(60)]
    items[3] = {
        "user_input": "My sister Ines moved to Porto last spring.",
        "response": "Porto is lovely; I hope Ines is settling in well.",
    }
    episodes = episodes_bulk_create(session=session, items=items)
    SummaryFactory(
        session=session,
        content="Maya asked about the weather many times.",
        first_episode_id=episodes[0].pk,
        last_episode_id=episodes[39].pk,
    )
    session.refresh_from_db()
    return session, episodes


def test_an_old_fact_is_quoted_in_full_with_its_date_between_summary_and_recent(long_session):
    session, episodes = long_session
    fact = episodes[3]
    result = build_context(session=session, question="Which city does Ines live in now?", budget=2000)
    assert fact.pk in result.retrieved
    # Labelled with its day and its number in the session: the fourth exchange.
    quoted = f"[{day(fact.created_at)} · #4] Q: {fact.user_input}\nA: {fact.response}"
    prompt = result.prompt
    assert quoted in prompt
    assert (
        prompt.index("Conversation Summary (earlier context):")
        < prompt.index("Relevant earlier exchanges:")
        < prompt.index(quoted)
        < prompt.index("Recent conversation details:")
    )
    # The recent window is never quoted twice.
    assert not set(result.retrieved) & set(result.recent)
    # Every episode that went in is named by its position as well.
    numbered = {e.pk: e.position for e in episodes}
    assert result.positions == {pk: numbered[pk] for pk in result.retrieved + result.recent + result.digest}
    assert result.as_dict()["positions"][str(fact.pk)] == 4


def test_retrieved_exchanges_are_oldest_first(long_session):
    session, episodes = long_session
    result = build_context(session=session, question="weather Saturday Sunday", budget=2000)
    assert len(result.retrieved) > 2
    assert result.retrieved == sorted(result.retrieved)
    section = result.prompt[result.prompt.index("Relevant earlier exchanges:") :]
    positions = [section.index(f"message {n}:") for n, e in enumerate(episodes) if e.pk in result.retrieved]
    assert positions == sorted(positions)


@pytest.mark.parametrize("budget", [120, 200, 350, 600, 1000, 1500, 2500])
def test_the_budget_is_a_hard_cap_and_is_filled(long_session, budget):
    session, _ = long_session
    question = "What did Maya ask about the weather on Saturday?"
    result = build_context(session=session, question=question, budget=budget)
    assert result.token_count == count_tokens(result.prompt) <= budget
    left_out = result.omitted["retrieved"] + result.omitted["summaries"] + result.omitted["digest"]
    if left_out:
        # Something was left out, so the budget is nearly used: what is left
        # is less than an exchange quoted here, or than the share not worth a recount.
        quoted = max(count_episode_tokens(**chatter(59)) + RETRIEVED_LABEL_TOKENS, 40)
        assert result.token_count > budget - max(quoted, budget // 25)


def roomy_budget(session, question: str) -> int:
    """The largest budget the whole history does not fit (a larger one sends it whole)."""
    whole = build_context(session=session, question=question, budget=1_000_000)
    assert whole.token_count <= full_history_tokens(session=session, question=question)
    return whole.token_count - 1


def test_what_the_budget_leaves_out_is_listed(long_session):
    session, _ = long_session
    roomy = build_context(session=session, question="weather Saturday", budget=roomy_budget(session, "weather Saturday"))
    tight = build_context(session=session, question="weather Saturday", budget=900)
    # The smaller window leaves more of the last exchanges to retrieval: compare outside the larger's.
    assert set(tight.retrieved) - set(roomy.recent) < set(roomy.retrieved)
    # The larger budget ranks deeper (retrieval_depth); what the small one
    # ranked and could not fit is listed, and nothing else.
    ranked = set(roomy.retrieved + roomy.omitted["retrieved"] + roomy.recent)
    assert set(tight.omitted["retrieved"]) <= ranked - set(tight.retrieved)
    depth = retrieval_depth(session, 900, RETRIEVED_LABEL_TOKENS)
    assert len(tight.retrieved) + len(tight.omitted["retrieved"]) == depth
    assert len(roomy.retrieved) + len(roomy.omitted["retrieved"]) > depth


def test_a_larger_budget_ranks_more_exchanges_than_the_least_depth(long_session):
    session, episodes = long_session
    older = len(episodes) - 8
    assert retrieval_depth(session, 900, RETRIEVED_LABEL_TOKENS) == RETRIEVED_MIN < older
    budget = roomy_budget(session, "weather Saturday")
    roomy = build_context(session=session, question="weather Saturday", budget=budget)
    # Every older exchange but the one about Ines holds "weather": all of them ranked.
    ranked = set(roomy.retrieved) | set(roomy.omitted["retrieved"])
    assert ranked == {e.pk for e in episodes[:older]} - {episodes[3].pk}
    # A budget that holds everything gets the whole history, in the seed's layout: complete.
    whole = build_context(session=session, question="weather Saturday", budget=20_000)
    assert whole.recent == [e.pk for e in episodes]
    assert whole.retrieved == whole.summaries == whole.digest == []
    assert whole.prompt.startswith("User Question: weather Saturday\n\nPrevious conversation:\nQ1: ")
    assert budget < whole.token_count == count_tokens(whole.prompt) <= 20_000


def test_a_summary_row_carries_its_date_span(long_session):
    session, episodes = long_session
    result = build_context(session=session, question="hello", budget=2000)
    assert f"[{day(episodes[0].created_at)}] Maya asked about the weather many times." in result.prompt


def test_a_question_of_only_stop_words_retrieves_nothing(long_session):
    session, _ = long_session
    result = build_context(session=session, question="what is it?", budget=2000)
    assert result.retrieved == result.omitted["retrieved"] == []
    assert "Relevant earlier exchanges:" not in result.prompt
