"""The budget is a cap, not a target: the recent window takes at most its
share of the budget (its newest exchange always) and leaves its older
exchanges to retrieval; and no context costs more than the session's whole
history, which is sent instead when it costs no more."""

from __future__ import annotations

import random

import pytest

from sessions_app.services import episodes_bulk_create
from sessions_app.tokens import count_tokens
from summaries.context import build_context
from summaries.context.layout import Exchange, render_prompt
from summaries.context.window import PAIR_LABEL_TOKENS, split_window
from tests.factories import ChatSessionFactory

pytestmark = pytest.mark.django_db


def exchanges(*tokens: int) -> tuple[list[Exchange], dict[int, int]]:
    window = [Exchange(n, f"q{n}", f"a{n}", n) for n in range(1, len(tokens) + 1)]
    return window, {ex.id: count for ex, count in zip(window, tokens, strict=True)}


def test_the_window_keeps_its_newest_exchanges_within_its_share(settings):
    settings.CONTEXT_RECENT_SHARE = 0.5
    window, tokens = exchanges(300, 100, 200, 250)
    split = split_window(window, tokens, budget=1000)  # room: 500
    assert [ex.id for ex in split.kept] == [3, 4]  # 250 + 200 and their labels fit, 100 more does not
    assert [ex.id for ex in split.left] == [1, 2]
    assert sum(tokens[ex.id] + PAIR_LABEL_TOKENS for ex in split.kept) <= 500


def test_the_newest_exchange_stays_however_long_and_nothing_skips_a_gap(settings):
    settings.CONTEXT_RECENT_SHARE = 0.5
    window, tokens = exchanges(10, 10, 900, 5000)
    split = split_window(window, tokens, budget=1000)
    # The newest alone is over the share: it stays; the next does not fit, so
    # neither do the short ones before it (the window has no gaps).
    assert [ex.id for ex in split.kept] == [4]
    assert [ex.id for ex in split.left] == [1, 2, 3]


def test_a_whole_share_keeps_the_window_as_it_was(settings):
    settings.CONTEXT_RECENT_SHARE = 1.0
    window, tokens = exchanges(100, 100, 100)
    assert split_window(window, tokens, budget=1000).kept == window


def long_reply(topic: str, n: int) -> str:
    return " ".join(f"Step {k} of setting up {topic}: check the configuration file and restart it." for k in range(n))


@pytest.fixture
def assistant_session(session):
    """Twelve exchanges with long replies; the ninth from the end names the staging port."""
    items = [{"user_input": f"How do I set up part {n}?", "response": long_reply(f"part {n}", 12)} for n in range(12)]
    items[4] = {"user_input": "Our staging server listens on port 8443, by the way.", "response": long_reply("staging", 12)}
    episodes = episodes_bulk_create(session=session, items=items)
    session.refresh_from_db()
    return session, episodes


def test_the_window_leaves_its_older_exchanges_to_retrieval(assistant_session, settings):
    settings.CONTEXT_RECENT_SHARE = 0.5
    session, episodes = assistant_session
    result = build_context(session=session, question="Which port does the staging server listen on?", budget=2000)
    # About 200 tokens an exchange: the window keeps what fits in 1,000.
    assert 1 <= len(result.recent) < 8
    assert result.recent == [e.pk for e in episodes[-len(result.recent) :]]
    # The staging exchange was in the last eight, outside the share: retrieval quotes it.
    assert episodes[4].pk in result.retrieved
    assert "port 8443" in result.prompt
    assert result.token_count <= 2000
    # What the share left out and retrieval did not quote is reported.
    window_left = {e.pk for e in episodes[4 : 12 - len(result.recent)]}
    assert set(result.omitted["recent"]) == window_left - set(result.retrieved)


def test_a_short_chat_is_sent_whole_when_that_costs_less(session, settings):
    # Every ranked exchange clears the floor here (the words they share weigh little).
    settings.CONTEXT_RELEVANCE_FLOOR = 0.0
    items = [{"user_input": f"Short question {n}?", "response": f"Short answer {n}."} for n in range(30)]
    episodes = episodes_bulk_create(session=session, items=items)
    session.refresh_from_db()
    # Every exchange matches the question: quoted with their labels beside a
    # summary, they would cost more than the whole history does.
    question = "What was the short answer to the short question?"
    result = build_context(session=session, question=question, budget=2000)
    whole = render_prompt(
        question=question,
        recent=[Exchange(e.pk, e.user_input, e.response, e.position) for e in episodes],
        earlier=[],
        has_earlier_episodes=False,
    )
    assert result.prompt == whole
    assert result.token_count == count_tokens(whole) == result.full_history_tokens
    assert result.recent == [e.pk for e in episodes]
    assert result.summaries == result.retrieved == result.digest == []


@pytest.mark.parametrize("seed", range(6))
def test_no_context_costs_more_than_the_whole_history(seed, settings):
    rng = random.Random(seed)
    settings.CONTEXT_RECENT_SHARE = rng.choice([0.3, 0.5, 1.0])
    session = ChatSessionFactory()
    words = ["garden", "staging", "port", "invoice", "cello", "Porto", "marathon", "tyres", "novel", "kitten"]
    items = [
        {
            "user_input": " ".join(rng.choices(words, k=rng.randint(3, 30))) + "?",
            "response": " ".join(rng.choices(words, k=rng.randint(5, 400))) + ".",
        }
        for _ in range(rng.randint(2, 40))
    ]
    episodes = episodes_bulk_create(session=session, items=items)
    session.refresh_from_db()
    whole = count_tokens(
        render_prompt(
            question="What about the kitten?",
            recent=[Exchange(e.pk, e.user_input, e.response, e.position) for e in episodes],
            earlier=[],
            has_earlier_episodes=False,
        )
    )
    for budget in (300, 1000, 2000, 8000):
        result = build_context(session=session, question="What about the kitten?", budget=budget)
        assert result.token_count == count_tokens(result.prompt) <= budget
        assert result.token_count <= whole
